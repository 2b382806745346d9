// `/ws/admin` end to end: a real uWS server on port 0, real `ws` clients, the chat-sessions actor on
// SQLite and an agent runtime behind the agent contract.
import t from 'tap';
import WebSocket from 'ws';
import type { AdminSocketLimits } from '../../edges/index.js';
import { CHAT_SESSION_COMMANDS } from '../../schemas/index.js';
import { serveAdminChat, STATIC_TOKEN } from '../fixtures/admin-chat.js';
import { openAdminSocket, type AdminSocketClient, type Frame } from '../fixtures/admin-socket-client.js';
import { until } from '../fixtures/until.js';

type TT = Parameters<typeof serveAdminChat>[0] & { teardown(fn: () => void): void };

const DEADLINE_MS = 5000;

type Client = AdminSocketClient;

const open = (port: number, headers: Record<string, string>): Promise<Client> => openAdminSocket(port, headers, DEADLINE_MS);

async function setup(t: TT, limits?: Partial<AdminSocketLimits>) {
  const s = await serveAdminChat(t, limits ? { limits } : {});
  const clients: Client[] = [];
  t.teardown(() => {
    for (const c of clients) c.ws.terminate();
  });
  /** Connects as a test person and authenticates; resolves after auth_ok. */
  const login = async (as: string) => {
    const c = await open(s.port, { authorization: `Bearer as:${as}` });
    clients.push(c);
    c.send({ type: 'auth', token: `as:${as}` });
    await c.next((f) => f.type === 'auth_ok');
    return c;
  };
  return { ...s, login, clients, open: async (h: Record<string, string>) => { const c = await open(s.port, h); clients.push(c); return c; } };
}

const resultOf = (c: Client) => c.next((f) => f.type === 'result');

await t.test('upgrade: 401 without credentials; auth_ok with agents and role; auth_error then close on a bad token', async (t) => {
  const s = await setup(t);
  await t.rejects(open(s.port, {}), { message: 'HTTP 401' }, 'no credentials: plain HTTP 401');
  await t.rejects(open(s.port, { authorization: 'Bearer wrong' }), { message: 'HTTP 401' });
  await t.rejects(open(s.port, { authorization: 'Bearer as:nobody' }), { message: 'HTTP 401' });
  // Another site's page cannot open the socket on the user's credentials.
  await t.rejects(open(s.port, { authorization: 'Bearer as:admin', origin: 'http://evil.example' }), { message: 'HTTP 403' });
  await t.rejects(open(s.port, { authorization: 'Bearer as:admin', origin: 'not a url' }), { message: 'HTTP 403' });
  const same = await s.open({ authorization: 'Bearer as:admin', origin: `http://127.0.0.1:${s.port}` });
  same.send({ type: 'auth', token: '' });
  t.match(await same.next((f) => f.type === 'auth_ok'), { role: 'admin' }, 'a page of this server may');
  s.deps.config().api.cors_origins = ['https://panel.example'];
  const listed = await s.open({ authorization: 'Bearer as:admin', origin: 'https://panel.example' });
  listed.send({ type: 'auth', token: '' });
  t.match(await listed.next((f) => f.type === 'auth_ok'), { role: 'admin' }, 'so may one in api.cors_origins');

  const a = await s.open({ authorization: `Bearer as:anna` });
  a.send({ type: 'auth', token: '' });
  t.same(await a.next((f) => f.type === 'auth_ok'), { type: 'auth_ok', agents: ['coder'], role: 'operator' }, "an empty token: the upgrade's credential; agents under the ACL");

  const legacy = await s.open({ authorization: `Bearer ${STATIC_TOKEN}` });
  legacy.send({ type: 'auth', token: STATIC_TOKEN });
  t.same(await legacy.next((f) => f.type === 'auth_ok'), { type: 'auth_ok', agents: ['main', 'coder'], role: 'admin' }, 'the static token is the legacy admin');

  const bad = await s.open({ authorization: 'Bearer as:admin' });
  bad.send({ type: 'auth', token: 'garbage' });
  t.match(await bad.next((f) => f.type === 'auth_error'), { type: 'auth_error', message: /authentication failed/ });
  t.equal(await bad.closed, 1008);

  const early = await s.open({ authorization: 'Bearer as:admin' });
  early.send({ type: 'message', agent: 'main', text: 'hi' });
  t.match(await early.next((f) => f.type === 'auth_error'), { message: /first frame must be/ });
  await early.closed;
  t.equal(s.rt.calls.length, 0, 'nothing ran');
});

await t.test('auth timeout closes a socket that never authenticates', async (t) => {
  const s = await setup(t, { authTimeoutMs: 50 });
  const c = await s.open({ authorization: 'Bearer as:admin' });
  t.match(await c.next((f) => f.type === 'auth_error'), { message: /no auth frame/ });
  t.equal(await c.closed, 1008);
});

await t.test("two sockets of one user see each other's streams once; another user's socket sees nothing", async (t) => {
  const s = await setup(t);
  const a = await s.login('operator');
  const b = await s.login('operator');
  const other = await s.login('bob');
  a.send({ type: 'message', agent: 'main', text: 'hello', user_msg_id: 'u1', assistant_msg_id: 'a1' });
  const result = await resultOf(a);
  t.match(result, { type: 'result', text: 'echo: hello', files: [], agent: 'main', session_id: 's1' });
  const seen = await resultOf(b);
  t.same(seen, result, 'the other socket of the same user gets the same result');
  for (const c of [a, b]) {
    const kinds = c.frames.filter((f) => f.session_id === 's1').map((f) => f.type);
    t.same(kinds, ['system_status', 'text_delta', 'tool_activity', 'text_delta', 'result'], 'every streaming frame exactly once');
    t.ok(c.frames.filter((f) => f.session_id).every((f) => f.session_id === 's1' && f.agent === 'main'), 'each carries session_id and agent');
  }
  t.same(other.frames.map((f) => f.type), ['auth_ok'], 'another user sees nothing');

  b.send({ type: 'message', agent: 'main', text: 'from b', session_id: 's1' });
  const fromA = await a.next((f) => f.type === 'result' && f.text === 'echo: from b');
  t.equal(fromA.session_id, 's1', "a sees b's turn");
  const history = (await s.call('/api/chat/sessions/s1/messages', { as: 'operator' })).body;
  t.same(history.slice(0, 2).map((m: Frame) => [m.id, m.sender, m.content]), [['u1', 'user', 'hello'], ['a1', 'agent', 'echo: hello']], "stored under the client's ids");
  t.same(other.frames.map((f) => f.type), ['auth_ok']);
});

await t.test('a viewer cannot send; a restricted user cannot use other agents; abort ends its own turn', async (t) => {
  const s = await setup(t);
  const viewer = await s.login('viewer');
  viewer.send({ type: 'message', agent: 'main', text: 'hi' });
  t.match(await viewer.next((f) => f.type === 'error'), { code: 'forbidden', agent: 'main' });
  viewer.send({ type: 'abort', agent: 'main' });
  t.match(await viewer.next((f) => f.type === 'error', 2), { code: 'forbidden' });

  const anna = await s.login('anna');
  const anna2 = await s.login('anna2');
  anna.send({ type: 'message', agent: 'main', text: 'let me in' });
  t.match(await anna.next((f) => f.type === 'error'), { code: 'agent-not-allowed', agent: 'main' });
  anna.send({ type: 'abort', agent: 'main' });
  t.match(await anna.next((f) => f.type === 'error' && f.code === 'agent-not-allowed', 2), { agent: 'main' });
  t.equal(s.rt.calls.length, 0, 'nothing ran');
  t.same((await s.call('/api/chat/sessions')).body, [], 'no session was made');

  anna.send({ type: 'message', agent: 'coder', text: 'hold on' });
  await anna2.next((f) => f.type === 'text_delta');
  anna2.send({ type: 'abort', agent: 'coder' });
  t.same(await anna2.next((f) => f.type === 'abort_ok'), { type: 'abort_ok', killed: 1 }, "a user's other socket may stop the turn");
  t.match(await resultOf(anna), { agent: 'coder', text: 'echo: hold on' });
  anna.send({ type: 'abort', agent: 'coder' });
  t.same(await anna.next((f) => f.type === 'abort_ok'), { type: 'abort_ok', killed: 0 });
  t.same(viewer.frames.filter((f) => f.agent === 'coder'), [], "the viewer is another user: none of anna's frames");
});

await t.test('malformed, oversized, unknown, out-of-order and too many frames: an error frame each, nothing else changes', async (t) => {
  const s = await setup(t, { maxFrameBytes: 4096, maxFrames: 12, windowMs: 1000 });
  const c = await s.login('admin');
  const seq = s.log.lastSeq();
  const cases: [unknown, string][] = [
    ['not json', 'invalid_frame'],
    ['[1,2]', 'invalid_frame'],
    [{ type: 'dance' }, 'unknown_type'],
    [{ text: 'no type' }, 'unknown_type'],
    [{ type: 'auth', token: 'as:admin' }, 'out_of_order'],
    [{ type: 'message', agent: 'main' }, 'invalid_frame'],
    [{ type: 'message', agent: '../etc', text: 'x' }, 'invalid_frame'],
    [{ type: 'message', agent: 'main', text: 'x', extra: 1 }, 'invalid_frame'],
    [{ type: 'message', agent: 'main', text: 'x', session_id: 5 }, 'invalid_frame'],
    [{ type: 'abort' }, 'invalid_frame'],
    [{ type: 'message', agent: 'main', text: 'x'.repeat(5000) }, 'frame_too_large'],
  ];
  for (const [frame, code] of cases) {
    const from = c.frames.length;
    c.send(frame);
    const err = await c.next((f) => f.type === 'error', from);
    t.equal(err.code, code, `${JSON.stringify(frame).slice(0, 40)} → ${code}`);
    t.type(err.message, 'string');
    t.same([err.session_id, err.agent], [null, null], 'SPEC.md: an error frame names session and agent, here none');
  }
  const before = c.frames.length;
  c.ws.send(Buffer.from([1, 2, 3]), { binary: true });
  t.equal((await c.next((f) => f.type === 'error', before)).code, 'invalid_frame', 'binary');
  t.equal(s.log.lastSeq(), seq, 'nothing recorded');
  t.equal(s.rt.calls.length, 0);

  // The window holds 12 frames: the 13th is refused, the connection stays.
  const from = c.frames.length;
  c.send({ type: 'dance' });
  t.equal((await c.next((f) => f.type === 'error' && f.code === 'rate_limited', from)).type, 'error');
  t.equal(c.ws.readyState, WebSocket.OPEN, 'still connected');
  t.equal(s.rt.calls.length, 0);
});

await t.test('the rate window lets a client go on once it has passed; a good frame still works after refusals', async (t) => {
  const s = await setup(t, { maxFrames: 3, windowMs: 60_000 });
  const c = await s.login('admin');
  c.send({ type: 'dance' });
  c.send({ type: 'dance' });
  c.send({ type: 'message', agent: 'main', text: 'still fine' });
  t.match(await resultOf(c), { text: 'echo: still fine' });
  c.send({ type: 'message', agent: 'main', text: 'one too many' });
  t.match(await c.next((f) => f.type === 'error' && f.code === 'rate_limited'), { code: 'rate_limited' });
  t.equal(s.rt.calls.length, 1);
  s.advance(60_000);
  c.send({ type: 'message', agent: 'main', text: 'new window', session_id: 's1' });
  t.match(await c.next((f) => f.type === 'result' && f.text === 'echo: new window'), { session_id: 's1' });
});

await t.test("chat.read goes to the marker owner's sockets only; notifications and envelopes under each socket's ACL", async (t) => {
  const s = await setup(t);
  const a = await s.login('operator');
  const b = await s.login('operator');
  const bob = await s.login('bob');
  const anna = await s.login('anna');
  const vera = await s.login('viewer');
  a.send({ type: 'message', agent: 'main', text: 'hello', assistant_msg_id: 'a1' });
  await resultOf(a);
  await resultOf(b);
  const r = await s.call('/api/chat/sessions/s1/read', { method: 'POST', as: 'operator', body: { last_read_message_id: 'a1' } });
  t.equal(r.status, 200);
  for (const c of [a, b]) t.same(await c.next((f) => f.type === 'chat.read'), { type: 'chat.read', session_id: 's1', last_read_message_id: 'a1', unread_count: 0 });
  await s.call('/api/chat/sessions/s1/read', { method: 'POST', as: 'operator', body: { last_read_message_id: 'a1' } });

  await s.bus.publish({
    stream: 'notification:n1', type: 'notification.created',
    data: { id: 'n1', title: 'Main failed', body: 'x', read: false, severity: 'warning', type: 'error', agent: 'main', status: null, source_id: null, created_at: '2026-11-22T10:00:00.000Z' },
  } as never);
  for (const c of [a, b, bob]) t.match(await c.next((f) => f.type === 'notification'), { data: { id: 'n1', agent: 'main' } });
  // What the task hub records for an async inter-agent result (its delivery is tested in test/bin/tasks-command-daemon.test.ts).
  await s.bus.send(CHAT_SESSION_COMMANDS.recordEnvelope, {
    agent: 'main',
    message: { id: 'interagent-t9', sender: 'agent', content: 'done it', timestamp: '2026-11-22T10:00:00.000Z', kind: 'interagent', meta: { task_id: 't9', from: 'main', to: 'coder', success: true } },
  });
  const env = await bob.next((f) => f.type === 'chat_message');
  t.match(env, { type: 'chat_message', kind: 'interagent', role: 'assistant', agent: 'main', session_id: 's1', content: 'done it', meta: { task_id: 't9' } });
  t.type(env.timestamp, 'number');
  const history = (await s.call('/api/chat/sessions/s1/messages')).body;
  t.match(history.at(-1), { id: 'interagent-t9', kind: 'interagent', content: 'done it' }, "kept in the agent's latest session");

  t.same(bob.frames.filter((f) => f.type === 'chat.read'), [], "bob never sees olga's marker");
  t.same(a.frames.filter((f) => f.type === 'chat.read').length, 1, 'an unchanged marker sends nothing');
  t.same(anna.frames.filter((f) => f.type === 'notification' || f.type === 'chat_message'), [], "anna may not use main: none of its broadcasts");
  t.match(vera.frames.filter((f) => f.type === 'chat_message'), [{ kind: 'interagent', agent: 'main' }], 'a viewer reads chat sessions (read-only): their envelopes too');
});

await t.test("a token_version bump, deactivation or deletion closes that user's sockets and no one else's", async (t) => {
  const s = await setup(t);
  const a = await s.login('operator');
  const b = await s.login('operator');
  const bob = await s.login('bob');
  const vera = await s.login('viewer');
  const anna = await s.login('anna');
  const updated = (username: string, token_version: number, active: boolean) =>
    s.bus.publish({ stream: `user:${username}`, type: 'user.updated', data: { username, fields: ['display_name'], token_version, active, by: 'root' } });
  await updated('olga', 1, true);
  a.send({ type: 'message', agent: 'main', text: 'same version' });
  t.match(await resultOf(a), { text: 'echo: same version' }, 'an update that keeps the token_version keeps the socket');
  await updated('olga', 2, true);
  t.same(await Promise.all([a.closed, b.closed]), [1008, 1008], 'both of olga’s sockets closed');
  await updated('vera', 1, false);
  t.equal(await vera.closed, 1008, 'deactivated');
  await s.bus.publish({ stream: 'user:anna', type: 'user.deleted', data: { username: 'anna', by: 'root' } });
  t.equal(await anna.closed, 1008, 'deleted');
  t.equal(bob.ws.readyState, WebSocket.OPEN, 'bob stays');
  bob.send({ type: 'message', agent: 'main', text: 'still here' });
  t.match(await resultOf(bob), { text: 'echo: still here' });
  // A new role or a narrower allowed_agents also ends the sockets: they reconnect with what is true now.
  await s.bus.publish({ stream: 'user:bob', type: 'user.updated', data: { username: 'bob', fields: ['role'], token_version: 1, active: true, by: 'root' } });
  t.equal(await bob.closed, 1008, 'demoted');
});

await t.test('admin sockets record connection facts as /ws ones do: from authentication to close, with the reason', async (t) => {
  const s = await setup(t);
  const facts = () => s.log.read({ types: ['connection.authenticated', 'connection.closed'] }).filter((e) => e.stream.startsWith('conn:'));
  const bad = await s.open({ authorization: 'Bearer as:admin' });
  bad.send({ type: 'auth', token: 'garbage' });
  await bad.closed;
  const idle = await s.open({ authorization: 'Bearer as:admin' });
  idle.send({ type: 'message', agent: 'main', text: 'before auth' });
  await idle.closed;
  t.same(facts(), [], 'a socket that never authenticates records nothing');

  const a = await s.login('operator');
  await until('the authentication fact', () => facts().length === 1);
  const [authenticated] = facts();
  t.match(authenticated, { type: 'connection.authenticated', data: { surface: 'admin', role: 'operator' } });
  a.ws.close(1000);
  await until('the close fact', () => facts().length === 2);
  t.match(facts()[1], { stream: authenticated!.stream, type: 'connection.closed', data: { reason: 'client', code: 1000 } });

  const v = await s.login('viewer');
  await s.bus.publish({ stream: 'user:vera', type: 'user.updated', data: { username: 'vera', fields: ['display_name'], token_version: 1, active: false, by: 'root' } });
  await v.closed;
  await until('the revoked socket’s close fact', () => facts().length === 4);
  t.match(facts()[3], { type: 'connection.closed', data: { reason: 'revoked', code: 1008 } });
  t.match(facts()[2], { type: 'connection.authenticated', data: { surface: 'admin', role: 'viewer' } });
});
