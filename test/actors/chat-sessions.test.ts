import t from 'tap';
import { join } from 'node:path';
import { startChatSessions } from '../../actors/index.js';
import { Bus } from '../../bus/index.js';
import { CHAT_SESSION_COMMANDS, SvcError, type ChatSession, type Principal } from '../../schemas/index.js';
import {
  PROJECTIONS,
  SqliteEventLog,
  chatSessionReadModel,
  chatSessionsProjection,
  diffProjections,
  getChatSession,
  listChatSessions,
  rebuildProjections,
} from '../../store/index.js';
import { anyEvent, rawCommand } from '../fixtures/any-event.js';

const T0 = Date.parse('2026-11-22T10:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();

/** Every chat-session command carries its caller; these tests speak for an unrestricted admin. */
const ADMIN: Principal = { kind: 'user', id: 'root', acting_for: null, role: 'admin', allowed_agents: [], origin: { transport: 'admin', chat_id: null, topic_id: null } };
const asAdmin = (data: unknown): unknown => (typeof data === 'object' && data !== null && !Array.isArray(data) ? { principal: ADMIN, ...data } : data);

type TT = { testdir(): string; teardown(fn: () => void): void };

/** A real SQLite log with every projection, a bus on a settable clock, the real actor. */
function setup(t: TT, opts: { ids?: () => string; agentExists?: (n: string) => boolean } = {}) {
  const dir = t.testdir();
  const file = join(dir, 'events.db');
  const log = SqliteEventLog.open(file, { projections: PROJECTIONS });
  let now = T0;
  const bus = new Bus({ log, clock: () => now });
  const db = log.projectionDb();
  let n = 0;
  const sub = startChatSessions({
    bus,
    readModel: chatSessionReadModel(db),
    newId: opts.ids ?? (() => `s${++n}`),
    ...(opts.agentExists ? { agentExists: opts.agentExists } : {}),
  });
  t.teardown(() => {
    sub.unsubscribe();
    bus.close();
    log.close();
  });
  const create = (data: unknown, by?: string) => bus.send(rawCommand<ChatSession>('chat.session_create'), asAdmin(data), by ? { by } : {});
  const rename = (data: unknown) => bus.send(rawCommand<ChatSession>('chat.session_rename'), asAdmin(data));
  const remove = (data: unknown) => bus.send(rawCommand<{ id: string; deleted: true }>('chat.session_delete'), asAdmin(data));
  const advance = (ms: number) => (now += ms);
  return { dir, file, log, bus, db, create, rename, remove, advance };
}

const session = (over: Partial<ChatSession>): ChatSession => ({
  id: 's1',
  agent: 'main',
  title: 'New chat',
  created_at: iso(T0),
  updated_at: iso(T0),
  provider_override: null,
  model_override: null,
  archived: false,
  ...over,
});

await t.test('create: id from the generator, time from the bus clock, one fact on chat:<id>', async (t) => {
  const s = setup(t);
  t.same(await s.create({ agent: 'main' }, 'alice'), session({}), 'no title: the default one');
  s.advance(1000);
  t.same(await s.create({ agent: 'coder', title: '  Refactor plan  ' }), session({ id: 's2', agent: 'coder', title: 'Refactor plan', created_at: iso(T0 + 1000), updated_at: iso(T0 + 1000) }), 'title trimmed');
  s.advance(1000);
  t.match(await s.create({ agent: 'main', title: null }), { id: 's3', title: 'New chat' }, 'a null title is no title');

  const events = s.log.read({ types: ['chat.session_created'] });
  t.equal(events.length, 3);
  t.match(events[0], { stream: 'chat:s1', by: 'alice', data: { id: 's1', agent: 'main', title: 'New chat', created_at: iso(T0), updated_at: iso(T0) } });
  t.same(listChatSessions(s.db).map((x) => x.id), ['s3', 's2', 's1'], 'newest first');
  t.same(listChatSessions(s.db, 'main').map((x) => x.id), ['s3', 's1'], 'filtered by agent');
  t.same(listChatSessions(s.db, 'nobody'), []);
});

await t.test('rename: trimmed title, new updated_at; unknown id, same title, bad titles', async (t) => {
  const s = setup(t);
  await s.create({ agent: 'main' });
  s.advance(5000);
  t.same(await s.rename({ id: 's1', title: '\tWeekly sync\n' }), session({ title: 'Weekly sync', updated_at: iso(T0 + 5000) }));
  t.match(s.log.read({ types: ['chat.session_renamed'] }), [{ stream: 'chat:s1', data: { id: 's1', title: 'Weekly sync', updated_at: iso(T0 + 5000) } }]);
  const seq = s.log.lastSeq();

  s.advance(1000);
  t.same(await s.rename({ id: 's1', title: 'Weekly sync ' }), session({ title: 'Weekly sync', updated_at: iso(T0 + 5000) }), 'same title after trimming: unchanged');
  t.equal(s.log.lastSeq(), seq, 'and nothing recorded');

  await t.rejects(s.rename({ id: 'nope', title: 'x' }), { code: 'not-found', message: 'chat session "nope" does not exist' });
  t.equal(s.log.lastSeq(), seq);

  const bad: [unknown, RegExp][] = [
    [{ id: 's1', title: '' }, /data\.title: must not be empty or only whitespace/],
    [{ id: 's1', title: '   ' }, /data\.title: must not be empty or only whitespace/],
    [{ id: 's1', title: 'x'.repeat(201) }, /data\.title: must be at most 200 characters/],
    [{ id: 's1', title: 42 }, /data\.title: must be a string/],
    [{ id: 's1', title: null }, /data\.title: must be a string/],
    [{ id: 's1' }, /data\.title: /],
    [{ id: '', title: 'x' }, /data\.id: must not be empty/],
    [{ id: 'x'.repeat(201), title: 'x' }, /data\.id: must be at most 200 characters/],
    [{ id: 's1', title: 'x', extra: true }, /data\.extra: /],
    [null, /data\.id: /],
    ['s1', /chat\.session_rename data/],
  ];
  for (const [data, message] of bad) {
    const e = await s.rename(data).catch((err: unknown) => err);
    t.ok(e instanceof SvcError && e.code === 'invalid-command', JSON.stringify(data));
    t.match((e as Error).message, message, JSON.stringify(data));
  }
  t.equal((await s.rename({ id: 's1', title: 'x'.repeat(200) })).title.length, 200, '200 characters are fine');
  t.equal((await s.rename({ id: 's1', title: `  ${'y'.repeat(200)}  ` })).title.length, 200, 'the limit applies after trimming');
  t.equal(s.log.lastSeq(), seq + 2, 'only the two valid renames were recorded');
  t.equal(getChatSession(s.db, 's1')!.title, 'y'.repeat(200));
});

await t.test('create: bad input, taken ids, unknown agents', async (t) => {
  let next = 's1';
  const s = setup(t, { ids: () => next, agentExists: (n) => n !== 'ghost' });
  for (const [data, message] of [
    [{}, /data\.agent: /],
    [{ agent: '' }, /data\.agent: must be an agent name/],
    [{ agent: '../etc' }, /data\.agent: must be an agent name/],
    [{ agent: 'a'.repeat(65) }, /data\.agent: must be at most 64/],
    [{ agent: 7 }, /data\.agent: must be a string/],
    [{ agent: 'main', title: '  ' }, /data\.title: /],
    [{ agent: 'main', title: 5 }, /data\.title: /],
    [{ agent: 'main', id: 'chosen' }, /data\.id: /],
  ] as [unknown, RegExp][]) {
    await t.rejects(s.create(data), { code: 'invalid-command', message }, JSON.stringify(data));
  }
  await t.rejects(s.create({ agent: 'ghost' }), { code: 'not-found', message: 'agent "ghost" does not exist' });
  t.equal(s.log.lastSeq(), 0, 'nothing recorded');

  await s.create({ agent: 'main' });
  await t.rejects(s.create({ agent: 'main' }), { code: 'chat-session-exists' }, 'a generator repeating an id is caught');
  next = '';
  await t.rejects(s.create({ agent: 'main' }), { code: 'invalid-id' });
  t.equal(s.log.lastSeq(), 1);
});

await t.test('delete: removes the row; unknown id is not-found', async (t) => {
  const s = setup(t);
  await s.create({ agent: 'main' });
  await s.create({ agent: 'main' });
  t.same(await s.remove({ id: 's1' }), { id: 's1', deleted: true });
  t.equal(getChatSession(s.db, 's1'), null);
  t.same(listChatSessions(s.db).map((x) => x.id), ['s2']);
  t.match(s.log.read({ types: ['chat.session_deleted'] }), [{ stream: 'chat:s1', data: { id: 's1' } }]);
  await t.rejects(s.remove({ id: 's1' }), { code: 'not-found' }, 'deleting twice');
  await t.rejects(s.rename({ id: 's1', title: 'back?' }), { code: 'not-found' }, 'a deleted session cannot be renamed');
  await t.rejects(s.remove({ id: 42 }), { code: 'invalid-command' });
});

await t.test('replay: folding the log again gives the same rows', async (t) => {
  const s = setup(t);
  for (const agent of ['main', 'coder', 'main', 'writer']) {
    await s.create({ agent });
    s.advance(1000);
  }
  await s.rename({ id: 's1', title: 'first' });
  s.advance(1000);
  await s.rename({ id: 's3', title: 'third' });
  await s.remove({ id: 's2' });
  s.advance(1000);
  await s.rename({ id: 's1', title: 'first again' });
  const live = listChatSessions(s.db);
  t.same(live.map((x) => [x.id, x.title]), [['s1', 'first again'], ['s3', 'third'], ['s4', 'New chat']]);

  const scratch = SqliteEventLog.open(join(s.dir, 'scratch.db'), { projections: PROJECTIONS });
  t.teardown(() => scratch.close());
  const events = [...s.log.iterate()];
  rebuildProjections(scratch.projectionDb(), PROJECTIONS, events);
  t.same(diffProjections(s.db, scratch.projectionDb(), PROJECTIONS), [], 'a replay matches the live read model');
  rebuildProjections(scratch.projectionDb(), [chatSessionsProjection], events);
  t.same(diffProjections(s.db, scratch.projectionDb(), [chatSessionsProjection]), [], 'folding twice gives the same rows');
  t.same(listChatSessions(scratch.projectionDb()), live);

  // Payloads that lack what a row needs are skipped, never thrown on (that would roll back the batch).
  await s.bus.publishAll([
    anyEvent({ stream: 'chat:x', type: 'chat.session_created', data: { agent: 'main' } }),
    anyEvent({ stream: 'chat:y', type: 'chat.session_renamed', data: { id: 's1', title: 5 } }),
    anyEvent({ stream: 'chat:z', type: 'chat.session_deleted', data: {} }),
  ]);
  t.same(listChatSessions(s.db), live, 'malformed facts change nothing');
});

await t.test('each fact a command causes carries the command’s correlation (minted when the sender starts a request) and causation', async (t) => {
  const { bus, log } = setup(t);
  await bus.send(CHAT_SESSION_COMMANDS.create, { principal: ADMIN, agent: 'main' }, { by: 'anna', correlation: 'req-1', causation: 1 });
  await bus.send(CHAT_SESSION_COMMANDS.create, { principal: ADMIN, agent: 'main' }, { by: 'anna' });
  const [first, second] = log.read({ streamPrefix: 'chat:' });
  t.same([first!.correlation, first!.causation, first!.by], ['req-1', 1, 'anna'], 'passed on from the command');
  t.match(second!.correlation, /^[0-9a-f-]{36}$/, 'a command without one starts a new request');
  t.equal(second!.causation, undefined, 'no fact led to it');
});
