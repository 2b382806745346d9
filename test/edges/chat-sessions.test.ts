import t from 'tap';
import { join } from 'node:path';
import { startChatSessions } from '../../actors/index.js';
import { Bus } from '../../bus/index.js';
import { API_STATUSES, chatSessionRoutes } from '../../edges/index.js';
import { PROJECTIONS, SqliteEventLog, chatSessionReadModel, diffProjections, listChatSessions, rebuildProjections } from '../../store/index.js';
import { serveSurfaces, testBearer } from '../fixtures/http-server.js';

const TOKEN = 'test-token-0123456789';
const T0 = Date.parse('2026-11-22T10:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();

type TT = { testdir(): string; teardown(fn: () => void): void };

/** SQLite log with projections, bus, the chat-sessions actor, the routes on uWS, fetch. */
async function serve(t: TT) {
  const dir = t.testdir();
  const log = SqliteEventLog.open(join(dir, 'events.db'), { projections: PROJECTIONS });
  let now = T0;
  const bus = new Bus({ log, clock: () => now });
  let n = 0;
  const actor = startChatSessions({ bus, readModel: chatSessionReadModel(log.projectionDb()), newId: () => `s${++n}` });
  const srv = await serveSurfaces(t, [{ name: 'api', routes: chatSessionRoutes({ bus }), statuses: API_STATUSES, authenticators: [testBearer(TOKEN)] }]);
  const { internal } = srv;
  t.teardown(() => {
    actor.unsubscribe();
    bus.close();
    log.close();
  });
  const base = `http://127.0.0.1:${srv.port}`;
  const call = async (path: string, init: Omit<RequestInit, 'body'> & { token?: string | null; body?: unknown; raw?: string } = {}) => {
    const { token = TOKEN, body, raw, ...rest } = init;
    const headers: Record<string, string> = { connection: 'close', 'content-type': 'application/json' };
    if (token !== null) headers.authorization = `Bearer ${token}`;
    const payload = raw ?? (body === undefined ? undefined : JSON.stringify(body));
    const r = await fetch(base + path, { ...rest, headers, ...(payload === undefined ? {} : { body: payload }) });
    const text = await r.text();
    return { status: r.status, body: text ? (JSON.parse(text) as unknown) : null };
  };
  return { dir, log, call, internal, advance: (ms: number) => (now += ms) };
}

const wire = (over: Record<string, unknown>) => ({
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

await t.test('POST creates (201), PUT renames (200) in the WIRE.md session shape', async (t) => {
  const s = await serve(t);
  let r = await s.call('/api/chat/sessions', { method: 'POST', body: { agent: 'main' } });
  t.same(r, { status: 201, body: wire({}) });
  s.advance(1000);
  r = await s.call('/api/chat/sessions', { method: 'POST', body: { agent: 'coder', title: ' Plan ', ignored: 'an extra key' } });
  t.same(r, { status: 400, body: { error: 'body.ignored: unknown field', code: 'invalid-body' } }, 'an unknown field is refused, not dropped');
  r = await s.call('/api/chat/sessions', { method: 'POST', body: { agent: 'coder', title: ' Plan ' } });
  t.same(r, { status: 201, body: wire({ id: 's2', agent: 'coder', title: 'Plan', created_at: iso(T0 + 1000), updated_at: iso(T0 + 1000) }) });

  s.advance(1000);
  r = await s.call('/api/chat/sessions/s1', { method: 'PUT', body: { title: '  Renamed  ' } });
  t.same(r, { status: 200, body: wire({ title: 'Renamed', updated_at: iso(T0 + 2000) }) });
  t.same(listChatSessions(s.log.projectionDb()).map((x) => [x.id, x.title]), [['s1', 'Renamed'], ['s2', 'Plan']]);
  t.same(s.internal, []);
});

await t.test('rename: unknown id 404; bad titles, bad JSON and oversized bodies 400/413 and change nothing', async (t) => {
  const s = await serve(t);
  await s.call('/api/chat/sessions', { method: 'POST', body: { agent: 'main', title: 'Original' } });
  const seq = s.log.lastSeq();

  let r = await s.call('/api/chat/sessions/nope', { method: 'PUT', body: { title: 'x' } });
  t.same(r, { status: 404, body: { error: 'chat session "nope" does not exist', code: 'not-found' } });
  r = await s.call('/api/chat/sessions/a%2Fb', { method: 'PUT', body: { title: 'x' } });
  t.equal(r.status, 404, 'an encoded id is decoded and looked up');
  r = await s.call(`/api/chat/sessions/${'x'.repeat(201)}`, { method: 'PUT', body: { title: 'x' } });
  t.match(r, { status: 400, body: { code: 'invalid-command', error: /data\.id: must be at most 200/ } }, 'oversized id');

  const bad: [string, unknown, RegExp][] = [
    ['empty', { title: '' }, /^body\.title: must not be empty or only whitespace$/],
    ['whitespace', { title: ' \t\n ' }, /^body\.title: must not be empty or only whitespace$/],
    ['201 chars', { title: 'x'.repeat(201) }, /^body\.title: must be at most 200 characters/],
    ['number', { title: 42 }, /^body\.title: must be a string$/],
    ['null', { title: null }, /^body\.title: must be a string$/],
    ['array', { title: ['a'] }, /^body\.title: must be a string$/],
    ['missing', {}, /^body\.title: /],
    ['not an object', 'title', /^body: /],
  ];
  for (const [what, body, message] of bad) {
    r = await s.call('/api/chat/sessions/s1', { method: 'PUT', body });
    t.equal(r.status, 400, what);
    t.match(r.body, { error: message, code: 'invalid-body' }, what);
  }
  for (const raw of ['{"title":', '', 'not json', '{"title":"a"}x']) {
    r = await s.call('/api/chat/sessions/s1', { method: 'PUT', raw });
    t.equal(r.status, 400, `malformed ${JSON.stringify(raw)}`);
    t.match(r.body, { code: raw === '' ? 'invalid-body' : 'invalid-json' }, `malformed ${JSON.stringify(raw)}`);
  }
  r = await s.call('/api/chat/sessions/s1', { method: 'PUT', raw: JSON.stringify({ title: 'x'.repeat(20_000) }) });
  t.equal(r.status, 413, 'a body over the cap is refused unread');

  for (const [body, message] of [
    [{}, /^body\.agent: /],
    [{ agent: '../x' }, /^body\.agent: must be an agent name/],
    [{ agent: 'main', title: '   ' }, /^body\.title: /],
    [{ agent: 'main', title: 7 }, /^body\.title: must be a string$/],
  ] as [unknown, RegExp][]) {
    r = await s.call('/api/chat/sessions', { method: 'POST', body });
    t.match(r, { status: 400, body: { error: message, code: 'invalid-body' } }, `create ${JSON.stringify(body)}`);
  }
  r = await s.call('/api/chat/sessions', { method: 'POST', raw: '{"agent":' });
  t.match(r, { status: 400, body: { code: 'invalid-json' } });

  t.equal(s.log.lastSeq(), seq, 'no events');
  t.equal(listChatSessions(s.log.projectionDb())[0]!.title, 'Original');
  t.equal((await s.call('/api/chat/sessions/s1', { method: 'GET' })).status, 405);
  t.same(s.internal, []);
});

await t.test('401 without the right bearer token, and nothing changes', async (t) => {
  const s = await serve(t);
  await s.call('/api/chat/sessions', { method: 'POST', body: { agent: 'main', title: 'Original' } });
  const seq = s.log.lastSeq();
  for (const token of [null, 'wrong', '']) {
    for (const [method, path, body] of [
      ['PUT', '/api/chat/sessions/s1', { title: 'hijacked' }],
      ['PUT', '/api/chat/sessions/nope', { title: 'x' }],
      ['PUT', '/api/chat/sessions/s1', { title: '' }],
      ['POST', '/api/chat/sessions', { agent: 'main' }],
    ] as [string, string, unknown][]) {
      const r = await s.call(path, { method, body, token });
      t.same(r, { status: 401, body: { error: 'missing or wrong bearer token', code: 'unauthorized' } }, `${method} ${path} with ${JSON.stringify(token)}`);
    }
  }
  t.equal(s.log.lastSeq(), seq);
  t.equal(listChatSessions(s.log.projectionDb()).length, 1);
});

await t.test('replay of what the HTTP calls recorded equals the live read model', async (t) => {
  const s = await serve(t);
  for (const agent of ['main', 'coder', 'main']) {
    await s.call('/api/chat/sessions', { method: 'POST', body: { agent } });
    s.advance(500);
  }
  await s.call('/api/chat/sessions/s2', { method: 'PUT', body: { title: 'two' } });
  s.advance(500);
  await s.call('/api/chat/sessions/s1', { method: 'PUT', body: { title: 'one' } });
  const scratch = SqliteEventLog.open(join(s.dir, 'scratch.db'), { projections: PROJECTIONS });
  t.teardown(() => scratch.close());
  rebuildProjections(scratch.projectionDb(), PROJECTIONS, [...s.log.iterate()]);
  t.same(diffProjections(s.log.projectionDb(), scratch.projectionDb(), PROJECTIONS), []);
  t.same(listChatSessions(scratch.projectionDb()).map((x) => [x.id, x.title]), [['s1', 'one'], ['s2', 'two'], ['s3', 'New chat']]);
});
