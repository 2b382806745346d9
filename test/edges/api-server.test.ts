// The API server on api.port: it runs when a surface needs it (the direct API today, the admin API
// next), the shared /api routes ride on it, and with the direct API disabled it still answers what
// SPEC.md serves outside the direct API. Real uWS on port 0, a real SQLite log, fetch.
import t, { type Test } from 'tap';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Bus } from '../../bus/index.js';
import { apiSurface, openDirectApi, startApiServer, type Authenticator, type DaemonPhase, type Surface } from '../../edges/index.js';
import { connectionMachine } from '../../machines/index.js';
import { defaultConfig, type Principal, type Role } from '../../schemas/index.js';
import { PROJECTIONS, SqliteEventLog, homePaths, notificationReadModel } from '../../store/index.js';

const API_TOKEN = 'direct-token-0123456789abcdef';

const adminUser = (id: string, role: Role): Principal => ({
  kind: 'user',
  id,
  acting_for: null,
  role,
  allowed_agents: [],
  origin: { transport: 'admin', chat_id: null, topic_id: null },
});

/** Stands in for edges/admin's JWT check: `Bearer jwt.<name>`; any other bearer is not a JWT. */
const ADMIN_JWT: Authenticator = {
  credential: 'admin-jwt',
  hint: 'Authorization: Bearer <access token>',
  authenticate(req) {
    const m = /^Bearer jwt\.(\w+)$/.exec(req.headers.authorization ?? '');
    if (!m) return null;
    const people: Record<string, Principal> = { vic: adminUser('vic', 'viewer'), ada: adminUser('ada', 'admin') };
    return people[m[1]!] ?? null;
  },
};

/** What edges/admin will be to the server: a standalone surface with its own credential. */
const ADMIN_STAND_IN: Surface = { name: 'admin', standalone: true, statuses: {}, routes: [], authenticators: [ADMIN_JWT] };

async function serve(t: Test, opts: { directEnabled: boolean; admin: boolean; phase?: () => DaemonPhase }) {
  const dir = t.testdir({});
  const paths = homePaths(dir);
  mkdirSync(paths.configDir, { recursive: true });
  writeFileSync(paths.configFile, JSON.stringify({ api: { enabled: opts.directEnabled, token: API_TOKEN } }));
  const cfg = defaultConfig();
  cfg.api = { ...cfg.api, enabled: opts.directEnabled, token: API_TOKEN };
  const log = SqliteEventLog.open(join(dir, 'events.db'), { projections: PROJECTIONS });
  const bus = new Bus({ log });
  const logs: string[] = [];
  const logFn = (_level: string, msg: string) => void logs.push(msg);
  const direct = openDirectApi({ bus, config: () => cfg, paths, providers: () => [], connectionMachine, log: logFn });
  const surfaces: Surface[] = [
    ...(direct ? [direct.surface] : []),
    ...(opts.admin ? [ADMIN_STAND_IN] : []),
    apiSurface({ bus, paths, readModel: notificationReadModel(log.projectionDb()), fileAccess: () => cfg.file_access }),
  ];
  const server = await startApiServer({ host: '127.0.0.1', port: 0, allowPublic: false, surfaces, log: logFn, ...(opts.phase ? { phase: opts.phase } : {}) });
  t.teardown(() => {
    server?.close();
    bus.close();
    log.close();
  });
  const call = async (path: string, init: { method?: string; bearer?: string; body?: unknown } = {}) => {
    const r = await fetch(`http://127.0.0.1:${server!.port}${path}`, {
      method: init.method ?? 'GET',
      headers: { connection: 'close', ...(init.bearer ? { authorization: `Bearer ${init.bearer}` } : {}) },
      ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
    });
    const text = await r.text();
    return { status: r.status, body: JSON.parse(text) as { code?: string; status?: string; connections?: number } };
  };
  return { server, call, logs, log };
}

await t.test('no surface that needs the server: nothing listens', async (t) => {
  const { server, logs } = await serve(t, { directEnabled: false, admin: false });
  t.equal(server, null, 'the shared /api routes alone are no reason to listen');
  t.same(logs, []);
});

await t.test('direct API disabled, another surface running: /health, public avatars and the admin credential; no /ws, /files, /upload', async (t) => {
  const { call, logs, log } = await serve(t, { directEnabled: false, admin: true });
  t.match(logs, [/^admin API listening on 127\.0\.0\.1:\d+$/]);
  t.notOk(logs.some((l) => /direct API/.test(l)));
  t.same(await call('/health'), { status: 200, body: { status: 'ok' } }, 'the server answers /health, without direct connections');
  for (const [method, path] of [['GET', '/ws'], ['GET', '/files?path=a.txt'], ['POST', '/upload']] as const) {
    const r = await call(path, { method, bearer: API_TOKEN });
    t.same([r.status, r.body.code], [404, 'not-found'], `${method} ${path} is not served`);
  }
  let r = await call('/api/notifications', { bearer: API_TOKEN });
  t.same([r.status, r.body.code], [401, 'unauthorized'], 'api.token opens nothing while the direct API is off');
  t.same((await call('/api/notifications', { bearer: 'jwt.vic' })).status, 200, 'the admin credential reads notifications');
  r = await call('/api/chat/sessions/s1', { method: 'PUT', bearer: 'jwt.vic', body: { title: 'x' } });
  t.same([r.status, r.body.code], [403, 'forbidden'], 'a viewer may not rename a chat session');
  r = await call('/api/chat/sessions/s1', { method: 'PUT', bearer: 'jwt.ada', body: { title: 'x' } });
  t.same([r.status, r.body.code], [503, 'no-handler'], 'an admin gets through to the command (no chat-sessions actor in this test)');
  r = await call('/api/agents/main/avatar');
  t.same([r.status, r.body.code], [404, 'not-found'], 'avatars stay public');
  t.equal(log.lastSeq(), 0, 'nothing was recorded');
});

await t.test('direct API enabled beside the admin stand-in: the shared routes take either credential, /files only the direct token', async (t) => {
  const { call, logs } = await serve(t, { directEnabled: true, admin: true });
  t.match(logs, [/^direct API listening on 127\.0\.0\.1:\d+$/, /^admin API listening on 127\.0\.0\.1:\d+$/]);
  t.same(await call('/health'), { status: 200, body: { status: 'ok', connections: 0 } });
  t.same((await call('/api/notifications', { bearer: API_TOKEN })).status, 200, 'the direct token');
  t.same((await call('/api/notifications', { bearer: 'jwt.vic' })).status, 200, 'the admin JWT');
  t.same((await call('/api/notifications', { bearer: 'jwt.nobody' })).status, 401, 'neither');
  t.same((await call('/files?path=nope.txt', { bearer: 'jwt.ada' })).status, 401, '/files accepts the direct token only');
  t.same((await call('/files?path=nope.txt', { bearer: API_TOKEN })).status, 404, 'which gets through to the file lookup');
  t.same((await call('/api/chat/sessions/s1', { method: 'PUT', bearer: API_TOKEN, body: { title: 'x' } })).body.code, 'no-handler', "api.token is the owner's: operator routes let it through");
});

await t.test('/health answers 503 {"status":"starting"} until the daemon says it is up, then 200 with what the surfaces report, and 503 stopping once a stop begins', async (t) => {
  let phase: DaemonPhase = 'starting';
  const { call } = await serve(t, { directEnabled: true, admin: false, phase: () => phase });
  t.same(await call('/health'), { status: 503, body: { status: 'starting' } }, 'listening is not ready');
  phase = 'up';
  t.same(await call('/health'), { status: 200, body: { status: 'ok', connections: 0 } });
  phase = 'stopping';
  t.same(await call('/health'), { status: 503, body: { status: 'stopping' } }, 'a daemon tearing down is not ready');
});
