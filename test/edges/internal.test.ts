import t from 'tap';
import type { Envelope } from '../../schemas/index.js';
import { BOB_TOKEN, MAIN_TOKEN, serveInternal } from '../fixtures/internal-api.js';
import { until } from '../fixtures/until.js';

type Json = Record<string, unknown>;
const body = async (r: Response) => [r.status, (await r.json()) as Json] as const;

await t.test('POST /interagent/send: main and sub-agents ask, with and without a caller user', async (t) => {
  const { call, rt, logs } = await serveInternal(t);
  let [status, reply] = await body(await call('/interagent/send', { token: MAIN_TOKEN, body: { from: 'main', to: 'bob', message: 'ping' } }));
  t.equal(status, 200);
  t.same(reply, { sender: 'bob', text: 'bob heard: ping', success: true, error: null });
  const m = rt!.received[0]!;
  t.match(m, { agent: 'bob', transport: 'internal', kind: 'interagent', chat_id: 0, topic_id: null, new_session: false, principal: { kind: 'agent', id: 'main', role: 'admin' } });
  t.equal(m.principal.acting_for, null, 'no caller header: a system call with the admin role');
  t.match(m.text, /from agent "main"/, 'the recipient is told who asks');

  [status, reply] = await body(
    await call('/interagent/send', {
      token: BOB_TOKEN,
      headers: { 'x-svc-caller-user-id': 'alice' },
      body: { from: 'bob', to: 'main', message: 'hi', new_session: true, chat_id: 42, topic_id: 7 },
    }),
  );
  t.same([status, reply.success], [200, true]);
  t.match(rt!.received[1], { agent: 'main', chat_id: 42, topic_id: 7, new_session: true, principal: { kind: 'agent', id: 'bob', acting_for: 'alice', role: 'admin' } });
  t.same(logs.filter((l) => l.level === 'warn'), [], 'token and can_call present: no legacy warnings');

  [status, reply] = await body(await call('/interagent/send', { token: MAIN_TOKEN, body: { from: 'main', to: 'carol', message: 'please FAIL' } }));
  t.same([status, reply], [200, { sender: 'carol', text: 'carol heard: please FAIL', success: false, error: 'turn failed (exit-code)' }]);
});

await t.test('legacy token-less agents are let through with warnings', async (t) => {
  const { call, rt, logs } = await serveInternal(t);
  const [status, reply] = await body(await call('/interagent/send', { body: { from: 'dave', to: 'carol', message: 'old style' } }));
  t.same([status, reply.success], [200, true]);
  t.equal(rt!.received.length, 1);
  const warnings = logs.filter((l) => l.level === 'warn').map((l) => l.msg);
  t.match(warnings, [/without a token \(legacy mode\)/], "the edge's own warning (the supervisor's can_call one: internal-access-daemon)");
});

await t.test('authentication and authorisation failures send nothing', async (t) => {
  const { call, rt } = await serveInternal(t);
  const send = (b: Json, token?: string, user?: string) =>
    call('/interagent/send', { body: b, ...(token ? { token } : {}), ...(user ? { headers: { 'x-svc-caller-user-id': user } } : {}) }).then(body);
  const cases: [string, Promise<readonly [number, Json]>, number, string, RegExp][] = [
    ['no token for bob', send({ from: 'bob', to: 'main', message: 'x' }), 401, 'unauthorized', /Authorization: Bearer/],
    ['wrong token for bob', send({ from: 'bob', to: 'main', message: 'x' }, MAIN_TOKEN), 401, 'unauthorized', /wrong interagent_token for "bob"/],
    ['main without token', send({ from: 'main', to: 'bob', message: 'x' }), 401, 'unauthorized', /main agent token/],
    ['main with bob token', send({ from: 'main', to: 'bob', message: 'x' }, BOB_TOKEN), 401, 'unauthorized', /wrong token for the main agent/],
    ['unknown caller agent', send({ from: 'zed', to: 'bob', message: 'x' }, BOB_TOKEN), 401, 'unknown-caller', /"zed" is not in the registry/],
    ['unknown caller user', send({ from: 'main', to: 'bob', message: 'x' }, MAIN_TOKEN, 'mallory'), 403, 'unknown-user', /"mallory".*no user record/],
    ['disabled caller user', send({ from: 'main', to: 'bob', message: 'x' }, MAIN_TOKEN, 'olga'), 403, 'unknown-user', /disabled/],
    ['unknown recipient', send({ from: 'main', to: 'nobody', message: 'x' }, MAIN_TOKEN), 404, 'unknown-agent', /no agent named "nobody"/],
    ['self call', send({ from: 'bob', to: 'bob', message: 'x' }, BOB_TOKEN), 400, 'self-call', /cannot call itself/],
  ];
  for (const [name, p, status, code, msg] of cases) {
    const [s, b] = await p;
    t.equal(s, status, `${name}: status`);
    t.equal(b.code, code, `${name}: code`);
    t.match(b.error, msg, `${name}: message`);
  }
  t.equal(rt!.received.length, 0, 'nothing reached the runtime');
});

await t.test('bad input is refused with a message naming the field, and nothing is sent', async (t) => {
  const { call, rt, port } = await serveInternal(t);
  const post = (raw: string) => call('/interagent/send', { token: MAIN_TOKEN, body: raw, headers: { 'content-type': 'application/json' } }).then(body);
  const ok = { from: 'main', to: 'bob', message: 'x' };
  const cases: [string, string, number, string, RegExp][] = [
    ['malformed JSON', '{"from":', 400, 'invalid-json', /not valid JSON/],
    ['not an object', '[1,2]', 400, 'invalid-body', /^body(\.from)?: /],
    ['empty body', '', 400, 'invalid-body', /^body: /],
    ['missing message', JSON.stringify({ from: 'main', to: 'bob' }), 400, 'invalid-body', /^body\.message: /],
    ['message of wrong type', JSON.stringify({ ...ok, message: 5 }), 400, 'invalid-body', /^body\.message: /],
    ['blank message', JSON.stringify({ ...ok, message: '   ' }), 400, 'invalid-body', /^body\.message: .*non-empty/],
    ['bad agent name', JSON.stringify({ ...ok, to: '../etc' }), 400, 'invalid-body', /^body\.to: .*agent name/],
    ['new_session not a bool', JSON.stringify({ ...ok, new_session: 'yes' }), 400, 'invalid-body', /^body\.new_session: /],
    ['fractional chat_id', JSON.stringify({ ...ok, chat_id: 1.5 }), 400, 'invalid-body', /^body\.chat_id: /],
    ['message over 256 KiB', JSON.stringify({ ...ok, message: 'é'.repeat(140 * 1024) }), 400, 'invalid-body', /^body\.message: .*262144 bytes/],
  ];
  for (const [name, raw, status, code, msg] of cases) {
    const [s, b] = await post(raw);
    t.same([s, b.code], [status, code], name);
    t.match(b.error, msg, `${name}: message`);
  }
  const [s, b] = await post(JSON.stringify({ ...ok, message: 'x'.repeat(1024 * 1024 + 10) }));
  t.same([s, b.code], [413, 'body-too-large'], 'body over 1 MiB');
  // Bad input is refused before authentication too: no token, bad JSON is still a 400, not a crash.
  t.equal((await call('/interagent/send', { body: '{' })).status, 400);
  t.equal((await call('/interagent/send')).status, 405, 'GET on a POST endpoint');
  t.equal((await call('/interagent/nope', { body: {} })).status, 404);
  t.equal(rt!.received.length, 0, 'nothing reached the runtime');
  t.ok(port > 0);
});

await t.test('timeouts and a missing runtime', async (t) => {
  const { call, timeouts } = await serveInternal(t);
  timeouts.sync_timeout = 0.2;
  const [status, reply] = await body(await call('/interagent/send', { token: MAIN_TOKEN, body: { from: 'main', to: 'bob', message: 'HOLD' } }));
  t.same([status, reply], [200, { sender: 'bob', text: '', success: false, error: 'no answer from "bob" within 0.2 s' }]);

  const bare = await serveInternal(t, { runtime: false });
  const [s, b] = await body(await bare.call('/interagent/send', { token: MAIN_TOKEN, body: { from: 'main', to: 'bob', message: 'x' } }));
  t.same([s, b.code], [503, 'no-handler']);
  t.equal((await bare.call('/ask', { token: MAIN_TOKEN, body: { text: 'x' } })).status, 503);
  t.equal((await bare.call('/interagent/agents', { token: MAIN_TOKEN })).status, 503);
});

await t.test('POST /interagent/send_async answers at once and records the result as events', async (t) => {
  const { call, bus, rt } = await serveInternal(t);
  const [status, reply] = await body(await call('/interagent/send_async', { token: BOB_TOKEN, headers: { 'x-svc-caller-user-id': 'alice' }, body: { from: 'bob', to: 'dave', message: 'HOLD then answer' } }));
  t.equal(status, 200);
  t.same(reply, { success: true, task_id: 'ia-id1' });
  const stream = 'interagent:ia-id1';
  const events = () => bus.log.read({ stream }) as Envelope[];
  t.same(events().map((e) => e.type), ['interagent.requested'], 'requested is recorded before the answer');
  t.same(events()[0]!.data, { task_id: 'ia-id1', from: 'bob', to: 'dave', chat_id: null, topic_id: null, caller_user_id: 'alice', caller_role: 'admin', reply_to: null, silent: false });
  await until('the turn to start', () => rt!.held.length === 1);
  rt!.held[0]!();
  const done = await until('the completion event', () => events().find((e) => e.type === 'interagent.completed'));
  t.same(done.data, { task_id: 'ia-id1', from: 'bob', to: 'dave', success: true, text: 'dave heard: HOLD then answer', error: null });
  t.equal(done.by, 'bob');

  const [s, b] = await body(await call('/interagent/send_async', { token: MAIN_TOKEN, body: { from: 'bob', to: 'carol', message: 'x' } }));
  t.same([s, b.code], [401, 'unauthorized'], 'the same checks as the sync call');
  t.equal(bus.log.read({ types: ['interagent.requested'] }).length, 1, 'a refused request records nothing');
});

await t.test('GET /interagent/agents lists what the caller may reach', async (t) => {
  const { call } = await serveInternal(t);
  const names = async (r: Response) => [r.status, ((await r.json()) as { name: string }[]).map?.((a) => a.name)] as const;
  t.same(await names(await call('/interagent/agents', { token: MAIN_TOKEN })), [200, ['bob', 'carol', 'dave']]);
  t.same(await names(await call('/interagent/agents?from=bob', { token: BOB_TOKEN })), [200, ['main', 'dave']], "bob's can_call");
  t.same(await names(await call('/interagent/agents', { token: MAIN_TOKEN, headers: { 'x-svc-caller-user-id': 'vic' } })), [200, ['carol']], "vic's allowed_agents");
  let [s, b] = await body(await call('/interagent/agents?from=bob', { token: MAIN_TOKEN }));
  t.same([s, b.code], [401, 'unauthorized']);
  [s, b] = await body(await call('/interagent/agents?from=a%20b', { token: MAIN_TOKEN }));
  t.same([s, b.code], [400, 'invalid-query']);
  t.match(b.error, /^query\.from: /);
  [s, b] = await body(await call('/interagent/agents', { token: MAIN_TOKEN, headers: { 'x-svc-caller-user-id': 'mallory' } }));
  t.same([s, b.code], [403, 'unknown-user']);
});

await t.test('POST /ask streams the turn as NDJSON, in order, then the result', async (t) => {
  const { call, rt } = await serveInternal(t);
  const r = await call('/ask', { token: MAIN_TOKEN, body: { text: 'hello there' } });
  t.equal(r.status, 200);
  t.match(r.headers.get('content-type'), /application\/x-ndjson/);
  const lines = (await r.text()).trimEnd().split('\n').map((l) => JSON.parse(l) as Json);
  t.same(lines.slice(0, 5), [
    { type: 'system_status', status: 'thinking' },
    { type: 'text_delta', text: 'main heard: ' },
    { type: 'tool_activity', tool: 'Read' },
    { type: 'system_status', status: null },
    { type: 'text_delta', text: 'hello there' },
  ]);
  t.equal(lines.length, 6, "another turn's chunk never leaks in");
  t.match(lines[5], { type: 'result', status: 'completed', text: 'main heard: hello there', agent: 'main', request_id: 'id1' });
  t.match(rt!.received[0], { agent: 'main', transport: 'cli', kind: 'foreground', chat_id: 0, text: 'hello there', new_session: false, principal: { role: 'admin' } });

  const r2 = await call('/ask', { token: MAIN_TOKEN, body: { agent: 'carol', text: 'FAIL now', chat_id: 5, new: true } });
  const last = JSON.parse((await r2.text()).trimEnd().split('\n').pop()!) as Json;
  t.match(last, { type: 'result', status: 'failed', reason: 'exit-code' });
  t.match(rt!.received[1], { agent: 'carol', chat_id: 5, new_session: true });

  const refusals: [string, Promise<Response>, number, string][] = [
    ['no token', call('/ask', { body: { text: 'x' } }), 401, 'unauthorized'],
    ['a sub-agent token', call('/ask', { token: BOB_TOKEN, body: { text: 'x' } }), 401, 'unauthorized'],
    ['unknown agent', call('/ask', { token: MAIN_TOKEN, body: { agent: 'nobody', text: 'x' } }), 404, 'unknown-agent'],
    ['malformed', call('/ask', { token: MAIN_TOKEN, body: '{"text":' }), 400, 'invalid-json'],
    ['wrong type', call('/ask', { token: MAIN_TOKEN, body: { text: 'x', new: 'yes' } }), 400, 'invalid-body'],
    ['missing text', call('/ask', { token: MAIN_TOKEN, body: {} }), 400, 'invalid-body'],
  ];
  for (const [name, p, status, code] of refusals) t.same(await body(await p).then(([s, b]) => [s, b.code]), [status, code], name);
  t.equal(rt!.received.length, 2, 'refused asks sent nothing');
});

await t.test('/tasks answers SPEC gives while no task hub is attached, to the agent whose token it is', async (t) => {
  const { call } = await serveInternal(t);
  t.same(await body(await call('/tasks/list?from=bob', { token: BOB_TOKEN })), [200, []]);
  t.same(await body(await call('/tasks/list', { token: MAIN_TOKEN })), [200, []]);
  const valid: Record<string, object> = {
    create: { from: 'bob', prompt: 'p' },
    resume: { task_id: 'x', prompt: 'p' },
    ask_parent: { task_id: 'x', question: 'q' },
    cancel: { task_id: 'x' },
    delete: { task_id: 'x', from: 'bob' },
  };
  for (const [op, b] of Object.entries(valid)) {
    t.equal((await call(`/tasks/${op}`, { body: b, token: BOB_TOKEN })).status, 503, op);
    // A task runs a CLI with its parent's rights: no other local process may start or steer one.
    t.equal((await call(`/tasks/${op}`, { body: b, token: '' })).status, 401, `${op} without a token`);
    t.equal((await call(`/tasks/${op}`, { body: { ...b, from: 'bob' }, token: MAIN_TOKEN })).status, 401, `${op} as bob with main's token`);
  }
  t.equal((await call('/tasks/list')).status, 401, 'listing needs a token too: prompts and results are private');
  t.equal((await call('/tasks/cancel', { body: { task_id: '../x' }, token: BOB_TOKEN })).status, 400, 'a bad body is refused before the hub is looked for');
  t.equal((await call('/workflows/list')).status, 401, 'workflows are served, to agents with their token');
});
