// The internal API's credentials as Principals: what a handler learns about the calling agent and
// the person it acts for. Over the same registry and users as the internal API tests.
import t from 'tap';
import { Bus } from '../../bus/index.js';
import { agentTokenAuthenticator, internalRoutes, ownerTokenAuthenticator, type HttpRequest } from '../../edges/index.js';
import { isSvcError, type ErrorCode } from '../../schemas/index.js';
import { MemoryEventLog } from '../../store/index.js';
import { BOB_TOKEN, MAIN_TOKEN, REGISTRY, USERS, attachFakeRuntime } from '../fixtures/internal-api.js';

const dir = { registry: () => REGISTRY, users: () => USERS, mainAgentToken: () => MAIN_TOKEN };

function request(method: string, opts: { token?: string; user?: string; body?: unknown; query?: string } = {}): HttpRequest {
  const headers: Record<string, string> = {};
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  if (opts.user) headers['x-svc-caller-user-id'] = opts.user;
  return { method, path: '/x', query: new URLSearchParams(opts.query ?? ''), headers, params: {}, body: Buffer.from(opts.body === undefined ? '' : JSON.stringify(opts.body)), remoteAddress: '127.0.0.1' };
}

const origin = { transport: 'internal', chat_id: null, topic_id: null };

await t.test('agent-token: the agent named by from, acting for the caller user', async (t) => {
  const warnings: string[] = [];
  const auth = agentTokenAuthenticator(dir, (m) => warnings.push(m));
  t.same(await auth.authenticate(request('POST', { token: BOB_TOKEN, user: 'vic', body: { from: 'bob' } })), {
    kind: 'agent', id: 'bob', acting_for: 'vic', role: 'viewer', allowed_agents: ['carol', 'main'], origin,
  }, "the user's role and allowed_agents ride along");
  t.same(await auth.authenticate(request('GET', { token: MAIN_TOKEN })), {
    kind: 'agent', id: 'main', acting_for: null, role: 'admin', allowed_agents: [], origin,
  }, 'no from on a GET: the main token names main; no caller user: the framework asks, as admin');
  t.same(await auth.authenticate(request('GET', { token: BOB_TOKEN, query: 'from=bob' })), { kind: 'agent', id: 'bob', acting_for: null, role: 'admin', allowed_agents: [], origin });
  t.match(await auth.authenticate(request('POST', { token: BOB_TOKEN, body: { task_id: 'x' } })), { kind: 'agent', id: 'bob' }, 'no from in a body: the agent whose token it is');
  t.match(await auth.authenticate(request('GET', { token: BOB_TOKEN })), { kind: 'agent', id: 'bob' }, 'nor on a GET');
  t.match(await auth.authenticate(request('POST', { body: { from: 'dave' } })), { kind: 'agent', id: 'dave', role: 'viewer' }, 'legacy token-less agent: never the framework admin');
  t.match(
    await auth.authenticate(request('POST', { user: 'alice', body: { from: 'dave' } })),
    { id: 'dave', acting_for: 'alice', role: 'viewer' },
    'a token-less caller claiming an admin user (alice) is still only a viewer: nothing proves the claim',
  );
  t.match(warnings, [/legacy mode/]);

  const refusals: [string, HttpRequest, ErrorCode][] = [
    ['bob with main token', request('POST', { token: MAIN_TOKEN, body: { from: 'bob' } }), 'unauthorized'],
    ['no from and no token', request('POST', { body: { to: 'bob' } }), 'unauthorized'],
    ["no from and a token that is no agent's", request('POST', { token: 'z'.repeat(40), body: { to: 'bob' } }), 'unauthorized'],
    ['no from on a GET and no token', request('GET', {}), 'unauthorized'],
    ['from of the wrong type', request('POST', { token: MAIN_TOKEN, body: { from: ['main'] } }), 'invalid-body'],
    ['a body that is not JSON', { ...request('POST', { token: MAIN_TOKEN }), body: Buffer.from('{"from":') }, 'invalid-json'],
    ['a hostile from in the query', request('GET', { token: MAIN_TOKEN, query: 'from=../main' }), 'invalid-query'],
    ['an unknown caller user', request('GET', { token: MAIN_TOKEN, user: 'mallory' }), 'unknown-user'],
    ['a disabled caller user', request('GET', { token: MAIN_TOKEN, user: 'olga' }), 'unknown-user'],
  ];
  for (const [name, req, code] of refusals) {
    let caught: unknown;
    try {
      await auth.authenticate(req);
    } catch (e) {
      caught = e;
    }
    t.ok(isSvcError(caught, code), `${name}: ${code}`);
  }
});

await t.test('owner-token: the main agent token is the home owner, an admin', async (t) => {
  const auth = ownerTokenAuthenticator(dir);
  t.same(await auth.authenticate(request('POST', { token: MAIN_TOKEN })), {
    kind: 'user', id: null, acting_for: null, role: 'admin', allowed_agents: [], origin: { ...origin, transport: 'cli' },
  });
  t.throws(() => auth.authenticate(request('POST', { token: BOB_TOKEN })), { code: 'unauthorized' });
});

await t.test('a caller user gone between authentication and the handler is refused, never run as the framework (admin)', async (t) => {
  const bus = new Bus({ log: new MemoryEventLog() });
  t.teardown(() => bus.close());
  const rt = attachFakeRuntime(bus);
  const routes = internalRoutes({ bus, registry: () => REGISTRY, users: () => [], mainAgentToken: () => MAIN_TOKEN, config: () => ({ interagent: { sync_timeout: 5, async_timeout: 5 } }) });
  const send = routes.find((r) => r.pattern === '/interagent/send' && r.auth !== 'public')!;
  const principal = await agentTokenAuthenticator(dir, () => undefined).authenticate(request('POST', { token: MAIN_TOKEN, user: 'alice', body: { from: 'main' } }));
  const req = request('POST', { token: MAIN_TOKEN, user: 'alice', body: { from: 'main', to: 'bob', message: 'hi' } });
  await t.rejects(async () => (send.auth === 'public' ? send.handler(req) : send.handler(req, principal!)), { code: 'unknown-user' });
  t.same(rt.received, [], 'nothing was sent');
});
