// The HTTP server every surface mounts on: routes declare the credentials they accept and the role
// they need; each surface has one status table; start-up conflicts are refused. Real uWS on port 0.
import t from 'tap';
import { COMMON_STATUSES, HttpServer, combineStatusTables, json, type Authenticator, type Credential, type Route, type Surface } from '../../edges/index.js';
import { SvcError, isSvcError, type ErrorCode, type Principal, type Role } from '../../schemas/index.js';
import { serveSurfaces } from '../fixtures/http-server.js';

const person = (id: string, role: Role | null): Principal => ({
  kind: 'user',
  id,
  acting_for: null,
  role,
  allowed_agents: [],
  origin: { transport: 'test', chat_id: null, topic_id: null },
});

/** `Authorization: <scheme> <name>` names a principal from `people`; another scheme is not this credential. */
function schemeAuthenticator(credential: Credential, scheme: string, people: Record<string, Principal>): Authenticator {
  return {
    credential,
    hint: `Authorization: ${scheme} <name>`,
    authenticate(req) {
      const [s, name] = (req.headers.authorization ?? '').split(' ');
      if (s !== scheme) return null;
      const p = people[name ?? ''];
      if (!p) throw new SvcError('unauthorized', `${scheme}: no such person`);
      return p;
    },
  };
}

const TOKENS = schemeAuthenticator('direct-token', 'Token', { olga: person('olga', 'operator'), nobody: person('nobody', null) });
const JWTS = schemeAuthenticator('admin-jwt', 'Jwt', { vic: person('vic', 'viewer'), ada: person('ada', 'admin') });

function call(port: number, path: string, init: { method?: string; auth?: string; body?: string } = {}) {
  return fetch(`http://127.0.0.1:${port}${path}`, {
    method: init.method ?? 'GET',
    headers: { connection: 'close', ...(init.auth ? { authorization: init.auth } : {}) },
    ...(init.body !== undefined ? { body: init.body } : {}),
  }).then(async (r) => ({ status: r.status, body: (await r.json()) as { code?: string; error?: string; id?: string | null; role?: string | null } }));
}

await t.test('routes get the principal their declared credentials yield; 401 and 403 never reach the handler', async (t) => {
  const calls: string[] = [];
  const echo = (name: string) => (_req: unknown, p: Principal) => {
    calls.push(name);
    return json(200, { id: p.id, role: p.role });
  };
  const routes: Route[] = [
    { method: 'GET', pattern: '/open', auth: 'public', handler: () => json(200, { id: null, role: null }) },
    { method: 'GET', pattern: '/any', auth: { accepts: ['direct-token'] }, handler: echo('any') },
    { method: 'PUT', pattern: '/both/:id', auth: { accepts: ['direct-token', 'admin-jwt'], role: 'operator' }, handler: echo('both') },
    { method: 'GET', pattern: '/cookie', auth: { accepts: ['admin-cookie'] }, handler: echo('cookie') },
  ];
  const { port, internal } = await serveSurfaces(t, [
    { name: 'one', routes, statuses: {}, authenticators: [TOKENS] },
    { name: 'two', routes: [], statuses: {}, authenticators: [JWTS] },
  ]);

  t.same(await call(port, '/open'), { status: 200, body: { id: null, role: null } }, 'public: no credential needed');
  t.same(await call(port, '/any', { auth: 'Token olga' }), { status: 200, body: { id: 'olga', role: 'operator' } });
  t.same(await call(port, '/any', { auth: 'Token nobody' }), { status: 200, body: { id: 'nobody', role: null } }, 'no role needed, none asked');

  let r = await call(port, '/any');
  t.same([r.status, r.body.code], [401, 'unauthorized'], 'no credential: 401');
  t.match(r.body.error, /Authorization: Token <name>/, 'the message says what to send');
  r = await call(port, '/any', { auth: 'Jwt ada' });
  t.same([r.status, r.body.code], [401, 'unauthorized'], 'a credential the route does not accept is no credential');
  r = await call(port, '/any', { auth: 'Token mallory' });
  t.same([r.status, r.body], [401, { error: 'Token: no such person', code: 'unauthorized' }], "an authenticator's own refusal comes through");

  t.same(await call(port, '/both/1', { method: 'PUT', auth: 'Token olga' }), { status: 200, body: { id: 'olga', role: 'operator' } }, 'the first credential');
  t.same(await call(port, '/both/1', { method: 'PUT', auth: 'Jwt ada' }), { status: 200, body: { id: 'ada', role: 'admin' } }, 'the second credential (another surface registered it)');
  r = await call(port, '/both/1', { method: 'PUT', auth: 'Jwt vic' });
  t.same([r.status, r.body.code], [403, 'forbidden'], 'a viewer where an operator is needed');
  t.match(r.body.error, /needs the operator role or above; user "vic" has viewer/);
  r = await call(port, '/both/1', { method: 'PUT', auth: 'Token nobody' });
  t.same([r.status, r.body.code], [403, 'forbidden'], 'no role at all where one is needed');

  r = await call(port, '/cookie', { auth: 'Token olga' });
  t.same([r.status, r.body.code], [401, 'unauthorized'], 'a credential nobody checks on this server');
  t.match(r.body.error, /accepts admin-cookie, and none of them is enabled/);

  t.same(calls, ['any', 'any', 'both', 'both'], 'refused requests never reached a handler');
  t.same(internal, []);
});

await t.test('an authenticator that breaks is an internal error, logged, with nothing shown', async (t) => {
  const broken: Authenticator = {
    credential: 'admin-jwt',
    hint: 'anything',
    authenticate: () => {
      throw new Error('secret key material');
    },
  };
  let reached = false;
  const { port, internal } = await serveSurfaces(t, [
    { name: 'x', statuses: {}, authenticators: [broken], routes: [{ method: 'GET', pattern: '/x', auth: { accepts: ['admin-jwt'] }, handler: () => ((reached = true), json(200, {})) }] },
  ]);
  const r = await call(port, '/x', { auth: 'Bearer whatever' });
  t.same(r, { status: 500, body: { error: 'internal error', code: 'internal-error' } });
  t.notOk(reached);
  t.match(String(internal[0]), /secret key material/);
});

await t.test('each surface maps its errors through its own table', async (t) => {
  const thrower = (code: ErrorCode): Route => ({ method: 'GET', pattern: `/${code}`, auth: 'public', handler: () => { throw new SvcError(code, `${code} happened`); } });
  const { port, internal } = await serveSurfaces(t, [
    { name: 'tea', statuses: { 'file-missing': 418 }, routes: [thrower('file-missing')] },
    // The same code means something else on another surface; a code no table maps is internal.
    { name: 'other', statuses: {}, routes: [{ ...thrower('file-missing'), pattern: '/other' }, thrower('not-found')] },
  ]);
  t.same(await call(port, '/file-missing'), { status: 418, body: { error: 'file-missing happened', code: 'file-missing' } });
  t.same((await call(port, '/other')).status, 500, 'unmapped on this surface');
  t.same((await call(port, '/not-found')).status, 404, 'common codes map everywhere');
  t.equal(internal.length, 1);
  t.same((await call(port, '/nowhere')).body.code, 'not-found', 'a path no surface mounted');
});

await t.test('start-up conflicts are refused, naming them', async (t) => {
  const route = (pattern: string, method: Route['method'] = 'GET'): Route => ({ method, pattern, auth: 'public', handler: () => json(200, {}) });
  const mountAll = (surfaces: Surface[]) => {
    const server = new HttpServer({ onInternalError: () => undefined });
    t.teardown(() => server.close());
    for (const s of surfaces) server.mount(s);
    return server;
  };
  const thrown = (f: () => unknown): unknown => {
    try {
      f();
    } catch (e) {
      return e;
    }
    return undefined;
  };
  const refused = (what: string, surfaces: Surface[], code: ErrorCode, message: RegExp) => {
    const e = thrown(() => mountAll(surfaces));
    t.ok(isSvcError(e, code), `${what}: ${code}`);
    t.match((e as Error | undefined)?.message, message, `${what}: says which`);
  };

  refused('a common code mapped again (same status)', [{ name: 'api', statuses: { unauthorized: 401 }, routes: [] }], 'duplicate-status-code', /surface api: error codes mapped twice: unauthorized \(401 and 401\)/);
  refused('a common code mapped to another status', [{ name: 'api', statuses: { 'not-found': 410 }, routes: [] }], 'duplicate-status-code', /not-found \(404 and 410\)/);
  const combined = thrown(() => combineStatusTables('api', { 'invalid-command': 400, a: 1 }, { 'invalid-command': 422 }, { b: 2 }));
  t.ok(isSvcError(combined, 'duplicate-status-code'), 'tables combined by a surface');
  t.match((combined as Error).message, /api: error codes mapped twice: invalid-command \(400 and 422\)$/);
  t.same(combineStatusTables('ok', COMMON_STATUSES, { 'teapot-code': 418 })['teapot-code'], 418, 'disjoint tables combine');
  t.throws(() => combineStatusTables('proto', { ['__proto__']: 1 } as Record<string, number>, JSON.parse('{"__proto__": 2}') as Record<string, number>), /mapped twice/, 'even a hostile key');

  refused('a route declared twice across surfaces', [{ name: 'a', statuses: {}, routes: [route('/x/:id')] }, { name: 'b', statuses: {}, routes: [route('/x/:name')] }], 'duplicate-route', /surface b: GET \/x\/:name is declared twice/);
  refused('a route declared twice within one', [{ name: 'a', statuses: {}, routes: [route('/y'), route('/y/')] }], 'duplicate-route', /GET \/y\/ is declared twice/);
  refused('one credential checked by two surfaces', [{ name: 'a', statuses: {}, routes: [], authenticators: [JWTS] }, { name: 'b', statuses: {}, routes: [], authenticators: [JWTS] }], 'duplicate-credential', /surface b: credential admin-jwt/);
  refused('a surface mounted twice', [{ name: 'a', statuses: {}, routes: [] }, { name: 'a', statuses: {}, routes: [] }], 'duplicate-surface', /surface a is mounted twice/);
  t.doesNotThrow(() => mountAll([{ name: 'a', statuses: {}, routes: [route('/z'), route('/z', 'POST')] }]), 'one path under two methods is fine');

  const server = mountAll([{ name: 'a', statuses: {}, routes: [route('/w')] }]);
  await server.listen('127.0.0.1', 0);
  t.ok(isSvcError(thrown(() => server.mount({ name: 'late', statuses: {}, routes: [] })), 'server-started'), 'no mounting once listening');
});

await t.test('closing closes the surfaces in reverse order of mounting, once', async (t) => {
  const closed: string[] = [];
  const server = new HttpServer({ onInternalError: () => undefined });
  for (const name of ['a', 'b', 'c']) server.mount({ name, statuses: {}, routes: [], close: () => closed.push(name) });
  await server.listen('127.0.0.1', 0);
  server.close();
  server.close();
  t.same(closed, ['c', 'b', 'a']);
});

await t.test('a refused surface mounts nothing: the server goes on with what it had', async (t) => {
  const server = new HttpServer({ onInternalError: () => undefined });
  t.teardown(() => server.close());
  const ok = (pattern: string): Route => ({ method: 'GET', pattern, auth: 'public', handler: () => json(200, { pattern }) });
  server.mount({ name: 'a', statuses: {}, routes: [ok('/a')] });
  let refused: unknown;
  try {
    server.mount({ name: 'b', statuses: {}, routes: [ok('/b'), ok('/a')], authenticators: [JWTS] });
  } catch (e) {
    refused = e;
  }
  t.ok(isSvcError(refused, 'duplicate-route'));
  server.mount({ name: 'b', statuses: {}, routes: [ok('/b')], authenticators: [JWTS] });
  const port = await server.listen('127.0.0.1', 0);
  t.same((await call(port, '/b')).body, { pattern: '/b' }, 'the corrected surface mounts under the same name and credential');
});
