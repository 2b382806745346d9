// `/upload` with the admin panel's session (WIRE.md §2 Files): the direct surface and the real admin
// surface on one server, so the route accepts the admin credentials their own authenticators check;
// real logins against users.json, the real files actor, node:http as the client.
import t, { type Test } from 'tap';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { LoginThrottle, startAuditRecorder, startUserFilesAdmin, startUsersDirectory } from '../../actors/index.js';
import { Bus } from '../../bus/index.js';
import { adminSurface } from '../../edges/index.js';
import { connectionMachine } from '../../machines/index.js';
import { AUDIT_EVENTS, validateConfig, type SubAgentConfig } from '../../schemas/index.js';
import { PROJECTIONS, SqliteEventLog, auditReadModel, homePaths, loadUsers, notificationReadModel, saveUsers } from '../../store/index.js';
import { startDirectApi } from '../fixtures/direct-api.js';
import { snapshot } from '../fixtures/admin-content.js';
import { API_TOKEN, JWT_SECRET, T0, cookieHeader, cookieJar, parseUsers, userRow } from '../fixtures/admin-auth-stand.js';

const MAX_UPLOAD = 16 * 1024;
const BOUNDARY = '----svc-upload-admin-boundary-Q2x9';
const MP = { 'content-type': `multipart/form-data; boundary=${BOUNDARY}` };

function multipart(filename: string, data: Buffer | string): Buffer {
  return Buffer.concat([
    Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\nContent-Type: text/plain\r\n\r\n`),
    Buffer.from(data),
    Buffer.from(`\r\n--${BOUNDARY}--\r\n`),
  ]);
}

interface Res {
  status: number;
  json: any;
}

let client = 0;
/** One request on its own connection, the path sent byte for byte; each from a new client address (the login limit is per IP). */
function call(port: number, method: string, path: string, headers: Record<string, string>, body?: Buffer | string): Promise<Res> {
  return new Promise((resolve, reject) => {
    const h: Record<string, string> = { connection: 'close', 'accept-language': 'en', 'x-forwarded-for': `192.0.2.${(client = (client + 1) % 250)}`, ...headers };
    if (body !== undefined) h['content-length'] = String(Buffer.byteLength(body));
    const req = request({ host: '127.0.0.1', port, method, path, headers: h, agent: false }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => {
        const text = Buffer.concat(parts).toString('utf8');
        resolve({ status: res.statusCode!, json: text ? JSON.parse(text) : null });
      });
      res.on('error', reject);
    });
    // The server may answer (413) before it has read everything.
    req.on('error', (e: NodeJS.ErrnoException) => (e.code === 'EPIPE' || e.code === 'ECONNRESET' ? undefined : reject(e)));
    req.end(body);
  });
}

async function serve(t: Test) {
  const dir = t.testdir();
  const paths = homePaths(join(dir, 'home'));
  const outside = join(dir, 'outside');
  const coderWs = join(paths.agentsDir, 'coder', 'workspace');
  for (const d of [paths.configDir, paths.secretsDir, join(paths.workspace, 'docs'), join(coderWs, 'docs'), join(coderWs, '.claude'), outside]) mkdirSync(d, { recursive: true });
  writeFileSync(join(outside, 'keep.txt'), 'outside');
  writeFileSync(join(coderWs, 'plain.txt'), 'a file');
  symlinkSync(outside, join(coderWs, 'out-link'));
  symlinkSync(paths.secretsDir, join(coderWs, 'secrets-link'));
  saveUsers(
    paths,
    parseUsers([
      await userRow('alice', 'admin', 'alice-password'),
      await userRow('olga', 'operator', 'olga-password'),
      await userRow('vera', 'viewer', 'vera-password'),
      await userRow('cora', 'admin', 'cora-password', { allowed_agents: ['coder'] }),
    ]),
  );
  const checked = validateConfig({ api: { enabled: true, token: API_TOKEN, jwt_secret: JWT_SECRET, trusted_proxies: ['127.0.0.1'] } }, 'config.json');
  if (!checked.ok) throw new Error(checked.errors.join('; '));
  const cfg = checked.config;
  writeFileSync(paths.configFile, JSON.stringify({ api: { enabled: true, token: API_TOKEN, jwt_secret: JWT_SECRET } }));
  const log = SqliteEventLog.open(join(dir, 'events.db'), { projections: PROJECTIONS });
  const bus = new Bus({ log, clock: () => T0 });
  const registry = () => [{ name: 'coder' } as SubAgentConfig];
  const actors = [
    startUsersDirectory({ bus, paths, config: () => cfg, jwtSecret: () => JWT_SECRET, throttle: new LoginThrottle() }),
    startUserFilesAdmin({ bus, paths, registry }),
    startAuditRecorder({ bus, readModel: auditReadModel(log.projectionDb()) }),
  ];
  const admin = adminSurface({ bus, paths, config: () => cfg, registry, users: () => loadUsers(paths), notifications: notificationReadModel(log.projectionDb()), clock: () => T0, version: 'test' });
  const server = (await startDirectApi({ bus, config: () => cfg, paths, providers: () => [], connectionMachine, host: '127.0.0.1', port: 0, limits: { maxUploadBytes: MAX_UPLOAD }, surfaces: [admin] }))!;
  t.teardown(() => {
    server.close();
    for (const a of actors) a.unsubscribe();
    bus.close();
    log.close();
  });
  const port = server.port;
  const login = async (username: string) => {
    const r = await call(port, 'POST', '/api/auth/login', { 'content-type': 'application/json' }, JSON.stringify({ username, password: `${username}-password` }));
    if (r.status !== 200) throw new Error(`login ${username}: ${JSON.stringify(r)}`);
    return r.json.access_token as string;
  };
  const cookieLogin = () =>
    new Promise<Record<string, string>>((resolve, reject) => {
      const body = JSON.stringify({ username: 'alice', password: 'alice-password' });
      const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/api/auth/login', agent: false, headers: { connection: 'close', 'content-type': 'application/json', 'content-length': String(body.length), 'x-forwarded-for': '198.51.100.7' } }, (res) => {
        res.resume();
        res.on('end', () => resolve(cookieJar(([] as string[]).concat(res.headers['set-cookie'] ?? []))));
      });
      req.on('error', reject);
      req.end(body);
    });
  const upload = (query: string, headers: Record<string, string>, body: Buffer = multipart('notes.txt', 'hello panel')) => call(port, 'POST', `/upload${query}`, { ...MP, ...headers }, body);
  const audited = () => log.read({ types: [AUDIT_EVENTS.recorded] }).map((e) => e.data as { actor: string | null; action: string; status: number });
  return { paths, outside, coderWs, port, login, cookieLogin, upload, audited, home: join(dir, 'home') };
}

await t.test('/upload with the admin session places the file in the agent folder; the direct token is unchanged', async (t) => {
  const env = await serve(t);
  const jar = await env.cookieLogin();
  t.ok(jar.svc_access && jar.svc_csrf, 'login set the access and CSRF cookies');
  const cookie = { cookie: cookieHeader(jar), 'x-csrf-token': jar.svc_csrf!, origin: 'http://panel.test' };

  let r = await env.upload('?agent=coder&relative_path=docs', cookie);
  t.equal(r.status, 200, JSON.stringify(r.json));
  t.same(Object.keys(r.json).sort(), ['mime', 'name', 'path', 'prompt', 'size'], 'the answer is WIRE.md §1 upload shape');
  t.match(r.json, { path: join(env.coderWs, 'docs', 'notes.txt'), name: 'notes.txt', mime: 'text/plain', size: 11 });
  t.match(r.json.prompt, r.json.path);
  t.equal(readFileSync(join(env.coderWs, 'docs', 'notes.txt'), 'utf8'), 'hello panel', 'landed in the agent folder');

  r = await env.upload('?agent=coder&relative_path=docs', cookie);
  t.same([r.status, r.json.code], [409, 'file-exists'], 'an existing file is never replaced');
  t.equal(readFileSync(join(env.coderWs, 'docs', 'notes.txt'), 'utf8'), 'hello panel');

  const jwt = await env.login('alice');
  r = await env.upload('?relative_path=docs', { authorization: `Bearer ${jwt}` }, multipart('../../evil name.md', '# hi'));
  t.equal(r.status, 200, 'bearer JWT, main by default');
  t.equal(r.json.path, join(env.paths.workspace, 'docs', 'evil_name.md'), "the client's name made safe, never a path");
  r = await env.upload('?agent=main', { authorization: `Bearer ${jwt}` }, multipart('root.txt', 'r'));
  t.equal(r.json.path, join(env.paths.workspace, 'root.txt'), 'no relative_path: the workspace itself');

  r = await env.upload('', { authorization: `Bearer ${jwt}` });
  t.equal(r.status, 200, 'no placement: the dated api_files folder, as for the direct token');
  t.match(r.json.path, /\/api_files\/\d{4}-\d{2}-\d{2}\/[0-9a-f]{8}_notes\.txt$/);

  r = await env.upload('?agent=coder&relative_path=docs', { authorization: `Bearer ${API_TOKEN}` }, multipart('direct.txt', 'd'));
  t.equal(r.status, 200, 'the direct token (the legacy admin) may place too');
  r = await env.upload('', { authorization: `Bearer ${API_TOKEN}` });
  t.match(r.json.path, /\/api_files\/\d{4}-\d{2}-\d{2}\/[0-9a-f]{8}_notes\.txt$/, 'and its plain upload is what it was');

  const uploads = env.audited().filter((a) => a.action === 'POST /upload');
  t.same(
    uploads.map((a) => [a.actor, a.status]),
    [['alice', 200], ['alice', 409], ['alice', 200], ['alice', 200], [null, 200]],
    'each placement is in the audit log, done or refused; attachments to api_files/ are chat traffic, not audited',
  );
});


await t.test('/upload refusals for the admin session write nothing', async (t) => {
  const env = await serve(t);
  const [viewer, operator, cora, alice] = [await env.login('vera'), await env.login('olga'), await env.login('cora'), await env.login('alice')];
  const jar = await env.cookieLogin();
  const before = snapshot(env.home);
  const outsideBefore = snapshot(env.outside);
  const bearer = (tok: string) => ({ authorization: `Bearer ${tok}` });

  const cases: [what: string, query: string, headers: Record<string, string>, status: number, code: string, body?: Buffer][] = [
    ['viewer, plain upload', '', bearer(viewer), 403, 'forbidden'],
    ['viewer, placed', '?agent=main&relative_path=docs', bearer(viewer), 403, 'forbidden'],
    ["operator may attach but not place in an agent's files", '?agent=main&relative_path=docs', bearer(operator), 403, 'forbidden'],
    ['agent outside allowed_agents', '?agent=main&relative_path=docs', bearer(cora), 403, 'agent-not-allowed'],
    ['unknown agent', '?agent=ghost&relative_path=docs', bearer(alice), 404, 'unknown-agent'],
    ['traversal', '?agent=coder&relative_path=../../..', bearer(alice), 400, 'invalid-path'],
    ['traversal inside a path', '?agent=coder&relative_path=docs/../../workspace', bearer(alice), 400, 'invalid-path'],
    ['encoded traversal', '?agent=coder&relative_path=%252e%252e', bearer(alice), 400, 'invalid-path'],
    ['absolute', `?agent=coder&relative_path=${encodeURIComponent(env.outside)}`, bearer(alice), 400, 'invalid-path'],
    ['symlinked folder leading out', '?agent=coder&relative_path=out-link', bearer(alice), 403, 'forbidden'],
    ['symlink to the secrets', '?agent=coder&relative_path=secrets-link', bearer(alice), 403, 'forbidden'],
    ["a CLI's settings folder", '?agent=coder&relative_path=.claude', bearer(alice), 403, 'forbidden'],
    ['a folder that does not exist', '?agent=coder&relative_path=nope', bearer(alice), 404, 'not-found'],
    ['a file, not a folder', '?agent=coder&relative_path=plain.txt', bearer(alice), 400, 'invalid-path'],
    ['cookie without the CSRF header', '?agent=coder&relative_path=docs', { cookie: cookieHeader(jar) }, 403, 'csrf-failed'],
    ['cookie with a wrong CSRF header', '?agent=coder&relative_path=docs', { cookie: cookieHeader(jar), 'x-csrf-token': 'forged' }, 403, 'csrf-failed'],
    ['oversized', '?agent=coder&relative_path=docs', bearer(alice), 413, 'body-too-large', multipart('big.bin', randomBytes(MAX_UPLOAD + 1))],
    ['no credentials', '?agent=coder&relative_path=docs', {}, 401, 'unauthorized'],
  ];
  for (const [what, query, headers, status, code, body] of cases) {
    const r = await env.upload(query, headers, body);
    t.same([r.status, r.json?.code], [status, code], what);
    t.type(r.json?.error, 'string', `${what}: a JSON error`);
  }
  t.same(snapshot(env.home), before, 'nothing written or left in the home');
  t.same(snapshot(env.outside), outsideBefore, 'nothing written outside');
  t.notOk(existsSync(join(env.outside, 'notes.txt')));

  const r = await env.upload('', bearer(operator));
  t.equal(r.status, 200, 'an operator attaches a file to a chat (files.upload)');
});

await t.test("/upload without ?agent= stores into main's workspace: refused for a user not allowed main", async (t) => {
  const env = await serve(t);
  const cora = { authorization: `Bearer ${await env.login('cora')}` };
  const r = await env.upload('', cora);
  t.equal(r.status, 403, JSON.stringify(r.json));
  t.equal(r.json.code, 'agent-not-allowed');
  t.notOk(existsSync(join(env.paths.workspace, 'api_files')), "nothing was written to main's workspace");
  t.equal((await env.upload('?agent=coder&relative_path=docs', cora)).status, 200, 'its own agent is still open to it');
  const alice = { authorization: `Bearer ${await env.login('alice')}` };
  t.equal((await env.upload('', alice)).status, 200, 'an unrestricted user keeps the plain upload');
});
