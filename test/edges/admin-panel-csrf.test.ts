// The sygen-admin panel's writes, made as its fetch wrapper makes them: the session in cookies (no
// Authorization header), `X-CSRF-Token` read from the `sygen_csrf` cookie (the only name the panel
// reads), and the panel's Origin, one of api.cors_origins. The cookie names are written out here on
// purpose: the panel's code is fixed, so a rename on the server side must fail this test.
import t from 'tap';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startDaemon } from '../../bin/daemon.js';
import { AUDIT_STREAM, CONFIG_EVENTS, REGISTRY_EVENTS } from '../../schemas/index.js';
import { homePaths } from '../../store/index.js';
import { snapshot } from '../fixtures/admin-content.js';
import { tempHome } from '../fixtures/temp-home.js';

const BIN = fileURLToPath(new URL('../fixtures/bin', import.meta.url));
const PANEL = 'http://panel.example.test';

await t.test('the panel writes with its cookie session, the sygen_csrf double submit and its Origin', async (t) => {
  const scratch = tempHome(t);
  const root = join(scratch.dir, 'home');
  const paths = homePaths(root);
  mkdirSync(paths.configDir, { recursive: true });
  writeFileSync(paths.configFile, JSON.stringify({ api: { enabled: true, host: '127.0.0.1', port: 0, cors_origins: [PANEL] } }));
  const d = await startDaemon({ paths, logToStderr: false, internalPort: 0, apiPort: 0, killGraceMs: 300, env: { PATH: `${BIN}:${process.env.PATH}`, HOME: root } });
  scratch.beforeRemove(() => d.stop('test'));
  const base = `http://127.0.0.1:${d.apiPort}`;

  const jar = new Map<string, string>();
  const take = (res: Response) => {
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(';');
      const i = pair!.indexOf('=');
      const name = pair!.slice(0, i).trim();
      const value = pair!.slice(i + 1).trim();
      if (value === '' || attrs.some((a) => /^\s*max-age=0\s*$/i.test(a))) jar.delete(name);
      else jar.set(name, value);
    }
  };
  /** The panel's fetch wrapper: credentials included, the header only when the cookie is there. */
  const call = async (method: string, path: string, body?: unknown, csrf: string | null = jar.get('sygen_csrf') ?? null) => {
    const headers: Record<string, string> = { origin: PANEL, 'accept-language': 'en', connection: 'close' };
    if (jar.size) headers.cookie = [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
    if (method !== 'GET' && csrf !== null) headers['x-csrf-token'] = csrf;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(base + path, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    take(res);
    const text = await res.text();
    return { status: res.status, json: text === '' ? null : JSON.parse(text), cookies: res.headers.getSetCookie(), allowOrigin: res.headers.get('access-control-allow-origin') };
  };

  const password = readFileSync(paths.initialAdminPasswordFile, 'utf8').trim();
  const login = await call('POST', '/api/auth/login', { username: 'admin', password });
  t.equal(login.status, 200);
  t.equal(login.allowOrigin, PANEL, "the panel's origin is allowed");
  const csrfLine = login.cookies.find((c) => c.startsWith('sygen_csrf='));
  t.ok(csrfLine, 'login sets the sygen_csrf cookie the panel reads');
  t.notMatch(csrfLine ?? '', /HttpOnly/i, 'readable by the page');
  t.equal(jar.get('svc_csrf'), jar.get('sygen_csrf'), 'svc_csrf beside it carries the same value');

  /** Files of the home and facts of the log, but the audit's: what a refused write must leave alone. */
  // The config and registry watchers echo writes of the files in their own time (as in the access matrix): those files' bytes are compared instead.
  const echoes = new Set<string>([...Object.values(CONFIG_EVENTS), ...Object.values(REGISTRY_EVENTS)]);
  const state = () => ({
    files: Object.fromEntries(Object.entries(snapshot(root)).filter(([p]) => !p.startsWith('logs'))),
    facts: d.log.read().filter((e) => e.stream !== AUDIT_STREAM && !echoes.has(e.type)).map((e) => `${e.seq} ${e.type}`),
  });

  const writes: [string, string, unknown][] = [
    ['POST', '/api/chat/sessions', { agent: 'main', title: 'From the panel' }],
    ['POST', '/api/cron', { title: 'Morning digest', schedule: '0 9 * * *', agent: 'main', description: 'd', enabled: false }],
    ['POST', '/api/webhooks', { agent: 'main', name: 'Deploys' }],
    ['POST', '/api/users', { username: 'vera', password: 'vera-password-1', role: 'viewer' }],
    ['PUT', '/api/memory?agent=main', { content: '# Memory from the panel\n' }],
    ['PUT', '/api/system/instance-name', { instance_name: 'Lab' }],
  ];
  for (const [method, path, body] of writes) {
    const before = state();
    const missing = await call(method, path, body, null);
    t.match(missing, { status: 403, json: { code: 'csrf-failed' } }, `${method} ${path} without X-CSRF-Token: 403`);
    const wrong = await call(method, path, body, 'not-the-cookie-value-0123456789ab');
    t.match(wrong, { status: 403, json: { code: 'csrf-failed' } }, `${method} ${path} with a wrong X-CSRF-Token: 403`);
    t.same(state(), before, `${method} ${path}: the refusals changed nothing`);
    const ok = await call(method, path, body);
    t.ok(ok.status >= 200 && ok.status < 300, `${method} ${path} as the panel sends it: ${ok.status} ${JSON.stringify(ok.json).slice(0, 200)}`);
  }

  // Issue 21 item 6: the audit log names what each write changed, never a secret.
  t.equal((await call('PUT', '/api/users/vera', { password: 'vera-password-2', display_name: 'Vera' })).status, 200);
  t.equal((await call('DELETE', '/api/users/vera')).status, 200);
  const audit = (await call('GET', '/api/audit?limit=100')).json as { action: string; target: string | null; status: number; detail: Record<string, string> | null }[];
  const entry = (action: string, status: number) => audit.find((e) => e.action === action && e.status === status);
  const job = (await call('GET', '/api/cron')).json.find((x: { title: string }) => x.title === 'Morning digest');
  const hook = (await call('GET', '/api/webhooks')).json.find((x: { name: string }) => x.name === 'Deploys');
  t.match(entry('POST /api/users', 201), { target: 'vera', detail: { fields: 'password,role,username' } }, 'the user created is named');
  t.match(entry('PUT /api/users/:username', 200), { target: 'vera', detail: { fields: 'display_name,password' } }, 'the user changed, and which fields (not their values)');
  t.match(entry('DELETE /api/users/:username', 200), { target: 'vera' }, 'the user deleted');
  t.match(entry('POST /api/cron', 201), { target: job.id, detail: { agent: 'main' } }, 'the cron job, by the id the daemon chose');
  t.match(entry('POST /api/webhooks', 201), { target: hook.id, detail: { agent: 'main' } }, 'the webhook, by its id');
  t.match(entry('PUT /api/memory', 200), { target: 'MAINMEMORY.md', detail: { agent: 'main', fields: 'content' } }, "the memory file, and its agent");
  t.match(entry('PUT /api/system/instance-name', 200), { target: 'instance_name' }, 'the setting');
  const facts = JSON.stringify(d.log.read({ types: ['audit.recorded'] }));
  for (const secret of ['vera-password-1', 'vera-password-2', 'scrypt$', password, jar.get('svc_access')!]) t.notOk(facts.includes(secret), 'no password, hash or token in the audit facts');

  // Refresh hands out a new double-submit value under both names; logout clears both.
  const refreshed = await call('POST', '/api/auth/refresh');
  t.equal(refreshed.status, 200);
  t.ok(refreshed.cookies.some((c) => c.startsWith('sygen_csrf=')), 'refresh sets sygen_csrf');
  t.equal(jar.get('svc_csrf'), jar.get('sygen_csrf'));
  t.equal((await call('PUT', '/api/system/instance-name', { instance_name: 'Lab 2' })).status, 200, 'a write after refresh, with the new value');
  const out = await call('POST', '/api/auth/logout');
  t.equal(out.status, 200);
  t.notOk(jar.has('sygen_csrf') || jar.has('svc_csrf'), 'logout clears both CSRF cookies');
});
