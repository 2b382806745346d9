// The chat-sessions actor's history, overrides, read markers and allowed_agents, on a real SQLite
// log and a real chat_reads.json, driven through the bus as the admin edges drive it.
import t from 'tap';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { chatIdOfSession, startChatSessions, withModelDirective } from '../../actors/index.js';
import { Bus } from '../../bus/index.js';
import { CHAT_READS_LEGACY_KEY, CHAT_SESSION_COMMANDS, CHAT_SESSION_EVENTS, type ChatMessage, type Principal } from '../../schemas/index.js';
import { PROJECTIONS, SqliteEventLog, chatSessionReadModel, diffProjections, homePaths, rebuildProjections } from '../../store/index.js';
import { adminUser } from '../fixtures/admin-api.js';

const T0 = Date.parse('2026-11-22T10:00:00.000Z');
const ADMIN = adminUser('root', 'admin');
const ANNA = adminUser('anna', 'operator', ['coder']);
const LEGACY: Principal = { ...ADMIN, id: null };

type TT = { testdir(): string; teardown(fn: () => void): void };

function setup(t: TT) {
  const dir = t.testdir();
  const paths = homePaths(dir);
  const log = SqliteEventLog.open(join(dir, 'events.db'), { projections: PROJECTIONS });
  let now = T0;
  const bus = new Bus({ log, clock: () => now });
  let n = 0;
  const sub = startChatSessions({ bus, readModel: chatSessionReadModel(log.projectionDb()), paths, newId: () => `s${++n}` });
  t.teardown(() => {
    sub.unsubscribe();
    bus.close();
    log.close();
  });
  const C = CHAT_SESSION_COMMANDS;
  const msg = (id: string, sender: 'user' | 'agent' = 'agent', content = id): ChatMessage => ({ id, sender, content, timestamp: new Date(now).toISOString() });
  return { dir, paths, log, bus, C, msg, tick: () => (now += 1000) };
}

await t.test('history: overwrite, merge by id keeping order, paging newest-first with before, deletion takes it all', async (t) => {
  const { bus, C, msg, log } = setup(t);
  const s = await bus.send(C.create, { principal: ADMIN, agent: 'main' });
  await bus.send(C.writeMessages, { principal: ADMIN, id: s.id, merge: false, messages: ['m1', 'm2', 'm3'].map((id) => msg(id)) });
  await bus.send(C.writeMessages, { principal: ADMIN, id: s.id, merge: true, messages: [{ ...msg('m2'), content: 'edited' }, msg('m4')] });
  const all = await bus.send(C.messages, { principal: ADMIN, id: s.id });
  t.same(all.messages.map((m) => [m.id, m.content]), [['m1', 'm1'], ['m2', 'edited'], ['m3', 'm3'], ['m4', 'm4']], 'm2 updated in place, m4 appended');
  t.same([all.total, all.has_more, all.last_read_message_id], [4, false, null]);

  const page = await bus.send(C.messages, { principal: ADMIN, id: s.id, limit: 2 });
  t.same([page.messages.map((m) => m.id), page.has_more, page.total], [['m3', 'm4'], true, 4], 'newest two, oldest first');
  const older = await bus.send(C.messages, { principal: ADMIN, id: s.id, limit: 2, before: 'm3' });
  t.same([older.messages.map((m) => m.id), older.has_more], [['m1', 'm2'], false]);
  await t.rejects(bus.send(C.messages, { principal: ADMIN, id: s.id, limit: 2, before: 'ghost' }), { code: 'unknown-message' });
  await t.rejects(bus.send(C.messages, { principal: ADMIN, id: s.id, limit: 501 }), { code: 'invalid-command' }, 'page size capped at 500');

  await bus.send(C.writeMessages, { principal: ADMIN, id: s.id, merge: false, messages: [msg('only')] });
  t.same((await bus.send(C.messages, { principal: ADMIN, id: s.id })).messages.map((m) => m.id), ['only'], 'overwrite replaces');

  const before = log.lastSeq();
  for (const bad of [
    [{ ...msg('a'), sender: 'system' }],
    [{ ...msg('a'), extra: 1 }],
    [msg('dup'), msg('dup')],
    [{ ...msg('a'), meta: JSON.parse('['.repeat(40) + ']'.repeat(40)) }],
    [{ ...msg('a'), files: [JSON.parse('{"a":'.repeat(40) + '1' + '}'.repeat(40))] }],
    [{ ...msg('../x') }],
  ]) {
    await t.rejects(bus.send(C.writeMessages, { principal: ADMIN, id: s.id, merge: true, messages: bad as ChatMessage[] }), { code: 'invalid-command' }, JSON.stringify(bad).slice(0, 60));
  }
  t.equal(log.lastSeq(), before, 'refused writes record nothing');

  const kept = await bus.send(C.create, { principal: ADMIN, agent: 'main' });
  await bus.send(C.writeMessages, { principal: ADMIN, id: kept.id, merge: true, messages: [msg('k1'), msg('k2')] });
  await bus.send(C.delete, { principal: ADMIN, id: s.id });
  await t.rejects(bus.send(C.messages, { principal: ADMIN, id: s.id }), { code: 'not-found' });
  const db = log.projectionDb();
  t.equal((db.prepare('SELECT COUNT(*) AS n FROM chat_messages').get() as { n: number }).n, 2, "only the other session's history is left");

  const scratch = SqliteEventLog.open(join(t.testdir(), 'replay.db'), { projections: PROJECTIONS });
  t.teardown(() => scratch.close());
  rebuildProjections(scratch.projectionDb(), PROJECTIONS, log.read({}));
  t.same(diffProjections(db, scratch.projectionDb(), PROJECTIONS), [], 'a replay matches the live read model');
});

await t.test('read markers: per user in chat_reads.json, forward only, unknown id refused, unread counts agent messages', async (t) => {
  const { bus, C, msg, paths, log } = setup(t);
  const s = await bus.send(C.create, { principal: ADMIN, agent: 'main' });
  await bus.send(C.writeMessages, { principal: ADMIN, id: s.id, merge: false, messages: [msg('u1', 'user'), msg('a1'), msg('u2', 'user'), msg('a2'), msg('a3')] });
  let list = await bus.send(C.list, { principal: ADMIN });
  t.match(list[0], { id: s.id, last_read_message_id: null, unread_count: 3 });

  t.same(await bus.send(C.markRead, { principal: ADMIN, id: s.id, last_read_message_id: 'a2' }), { session_id: s.id, last_read_message_id: 'a2', unread_count: 1 });
  const file = JSON.parse(readFileSync(paths.chatReadsFile, 'utf8'));
  t.same(Object.keys(file), ['root']);
  t.equal(file.root[s.id].last_read_message_id, 'a2');
  t.equal(statSync(paths.chatReadsFile).mode & 0o777, 0o600);

  const seq = log.lastSeq();
  t.same(await bus.send(C.markRead, { principal: ADMIN, id: s.id, last_read_message_id: 'a1' }), { session_id: s.id, last_read_message_id: 'a2', unread_count: 1 }, 'older: unchanged');
  t.same(await bus.send(C.markRead, { principal: ADMIN, id: s.id, last_read_message_id: 'a2' }), { session_id: s.id, last_read_message_id: 'a2', unread_count: 1 }, 'equal: unchanged');
  await t.rejects(bus.send(C.markRead, { principal: ADMIN, id: s.id, last_read_message_id: 'nope' }), { code: 'unknown-message' });
  t.equal(log.lastSeq(), seq, 'nothing recorded for a marker that did not move');

  // The legacy admin (no user id) keeps its own markers under a fixed key.
  await bus.send(C.markRead, { principal: LEGACY, id: s.id, last_read_message_id: 'a3' });
  t.equal(JSON.parse(readFileSync(paths.chatReadsFile, 'utf8'))[CHAT_READS_LEGACY_KEY][s.id].last_read_message_id, 'a3');
  list = await bus.send(C.list, { principal: ADMIN });
  t.match(list[0], { last_read_message_id: 'a2', unread_count: 1 }, 'each caller sees their own marker');
  const advanced = log.read({ stream: `chat:${s.id}` }).filter((e) => e.type === CHAT_SESSION_EVENTS.read_advanced);
  t.same(advanced.map((e) => [e.data.user, e.data.last_read_message_id]), [['root', 'a2'], [CHAT_READS_LEGACY_KEY, 'a3']]);

  // A hostile user name is just a key.
  const proto = adminUser('__proto__', 'admin');
  await bus.send(C.markRead, { principal: proto, id: s.id, last_read_message_id: 'a1' });
  t.equal(JSON.parse(readFileSync(paths.chatReadsFile, 'utf8'))['__proto__'][s.id].last_read_message_id, 'a1');

  // A corrupt file is refused, not reset.
  writeFileSync(paths.chatReadsFile, '{"root": 5}');
  await t.rejects(bus.send(C.markRead, { principal: ADMIN, id: s.id, last_read_message_id: 'a3' }), { code: 'corrupt-file' });
  t.equal(readFileSync(paths.chatReadsFile, 'utf8'), '{"root": 5}');
  writeFileSync(paths.chatReadsFile, '{}');

  await bus.send(C.delete, { principal: ADMIN, id: s.id });
  t.ok(existsSync(paths.chatReadsFile));
});

await t.test('allowed_agents: a restricted user sees and touches only its agents', async (t) => {
  const { bus, C, msg, log } = setup(t);
  const main = await bus.send(C.create, { principal: ADMIN, agent: 'main' });
  const coder = await bus.send(C.create, { principal: ANNA, agent: 'coder' });
  await bus.send(C.writeMessages, { principal: ADMIN, id: main.id, merge: false, messages: [msg('a1')] });
  t.same((await bus.send(C.list, { principal: ANNA })).map((s) => s.id), [coder.id]);
  t.same((await bus.send(C.list, { principal: ADMIN })).length, 2);
  const seq = log.lastSeq();
  const denied = { code: 'agent-not-allowed' };
  await t.rejects(bus.send(C.create, { principal: ANNA, agent: 'main' }), denied);
  await t.rejects(bus.send(C.list, { principal: ANNA, agent: 'main' }), denied);
  await t.rejects(bus.send(C.rename, { principal: ANNA, id: main.id, title: 'x' }), denied);
  await t.rejects(bus.send(C.delete, { principal: ANNA, id: main.id }), denied);
  await t.rejects(bus.send(C.archive, { principal: ANNA, id: main.id, archived: true }), denied);
  await t.rejects(bus.send(C.setProvider, { principal: ANNA, id: main.id, provider: 'codex', model: 'gpt-5' }), denied);
  await t.rejects(bus.send(C.messages, { principal: ANNA, id: main.id }), denied);
  await t.rejects(bus.send(C.writeMessages, { principal: ANNA, id: main.id, merge: true, messages: [msg('x')] }), denied);
  await t.rejects(bus.send(C.markRead, { principal: ANNA, id: main.id, last_read_message_id: 'a1' }), denied);
  await t.rejects(bus.send(C.history, { principal: ANNA, agent: 'main' }), denied);
  await t.rejects(bus.send(C.beginTurn, { principal: ANNA, agent: 'main', text: 'hi' }), denied);
  await t.rejects(bus.send(C.endTurn, { principal: ANNA, session_id: main.id, message: msg('x') }), denied);
  t.equal(log.lastSeq(), seq, 'nothing recorded');
});

await t.test('archive, provider override and turns: the override becomes an @model directive on every turn', async (t) => {
  const { bus, C, msg, tick } = setup(t);
  const s = await bus.send(C.create, { principal: ADMIN, agent: 'main' });
  t.match(await bus.send(C.archive, { principal: ADMIN, id: s.id, archived: true }), { archived: true });
  t.match(await bus.send(C.archive, { principal: ADMIN, id: s.id, archived: false }), { archived: false });
  t.match(await bus.send(C.setProvider, { principal: ADMIN, id: s.id, provider: 'codex', model: 'gpt-5' }), { provider_override: 'codex', model_override: 'gpt-5' });
  await t.rejects(bus.send(C.setProvider, { principal: ADMIN, id: s.id, provider: 'codex', model: null }), { code: 'invalid-body' });
  await t.rejects(bus.send(C.setProvider, { principal: ADMIN, id: s.id, provider: 'codex', model: '@evil rm' }), { code: 'invalid-command' });

  tick();
  const turn = await bus.send(C.beginTurn, { principal: ADMIN, agent: 'main', text: 'hello', user_msg_id: 'u1' });
  t.same(turn, { session_id: s.id, chat_id: chatIdOfSession(s.id), text: '@gpt-5 hello', user_msg_id: 'u1' }, 'the latest session of the agent, with the directive');
  t.equal((await bus.send(C.beginTurn, { principal: ADMIN, agent: 'main', text: '/new', session_id: s.id })).text, '/new', 'a chat command is not hidden behind a directive');
  t.equal((await bus.send(C.beginTurn, { principal: ADMIN, agent: 'main', text: '@opus mine', session_id: s.id })).text, '@opus mine', "the user's own directive wins");
  await bus.send(C.endTurn, { principal: ADMIN, session_id: s.id, message: { ...msg('a1'), content: 'answer' } });
  const history = await bus.send(C.history, { principal: ADMIN, agent: 'main' });
  t.same(history.map((m) => [m.sender, m.content]).slice(0, 1), [['user', 'hello']], 'stored without the directive');
  t.equal(history.at(-1)!.content, 'answer');

  await bus.send(C.setProvider, { principal: ADMIN, id: s.id, provider: null, model: null });
  t.equal((await bus.send(C.beginTurn, { principal: ADMIN, agent: 'main', text: 'plain', session_id: s.id })).text, 'plain', 'reset');
  await t.rejects(bus.send(C.beginTurn, { principal: ADMIN, agent: 'other', text: 'x', session_id: s.id }), { code: 'invalid-body' }, "another agent's session");

  t.same(await bus.send(C.recordEnvelope, { agent: 'main', message: { ...msg('task-1'), kind: 'task_result', meta: { task_id: 't1' } } }), { session_id: s.id });
  const opened = await bus.send(C.recordEnvelope, { agent: 'nobody', message: msg('x') });
  t.same((await bus.send(C.list, { principal: ADMIN, agent: 'nobody' })).map((x) => x.id), [opened.session_id], 'a first session is opened for it');

  t.equal(withModelDirective('  /stop', 'x'), '  /stop');
  t.ok(chatIdOfSession('a') > 0 && Number.isSafeInteger(chatIdOfSession('a')) && chatIdOfSession('a') !== chatIdOfSession('b'));
});
