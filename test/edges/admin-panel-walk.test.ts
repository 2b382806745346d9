// Issue 12 "Done when", as the admin panel would do it in a browser, against the real daemon in a
// temp home with the fake CLIs: cookies (never a bearer), the panel's Origin, X-CSRF-Token from the
// svc_csrf cookie on every write, Accept-Language ru then en. Login with 2FA and refresh; every
// page's reads answer with the shapes WIRE.md §2 names; chat streams over /ws/admin to two sockets
// and is stored; a viewer changes nothing through any write route the server mounts, nor the socket.
import t from 'tap';
import * as OTPAuth from 'otpauth';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startDaemon } from '../../bin/daemon.js';
import { AUTH_COOKIES, CSRF_HEADER } from '../../schemas/index.js';
import { homePaths } from '../../store/index.js';
import { snapshot } from '../fixtures/admin-content.js';
import { openAdminSocket } from '../fixtures/admin-socket-client.js';
import { tempHome } from '../fixtures/temp-home.js';

const BIN = fileURLToPath(new URL('../fixtures/bin', import.meta.url));
const PANEL = 'http://panel.example.test';
const REPLY = 'Streamed reply from the fake CLI, in three parts';
type Json = any;

/** What a browser keeps for the panel: its cookies (as Set-Cookie leaves them) and its language. */
class Browser {
  readonly jar = new Map<string, string>();
  lang = 'ru';
  constructor(private readonly base: string) {}

  cookieHeader(): string {
    return [...this.jar].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  take(res: Response): void {
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(';');
      const i = pair!.indexOf('=');
      const name = pair!.slice(0, i).trim();
      const value = pair!.slice(i + 1).trim();
      if (value === '' || attrs.some((a) => /^\s*max-age=0\s*$/i.test(a))) this.jar.delete(name);
      else this.jar.set(name, value);
    }
  }

  /** The files page's upload: multipart from a FormData, the cookie and the CSRF header. */
  async upload(path: string, name: string, text: string): Promise<{ status: number; body: Json }> {
    const form = new FormData();
    form.append('file', new Blob([text], { type: 'text/plain' }), name);
    const headers: Record<string, string> = { origin: PANEL, 'accept-language': this.lang, connection: 'close', cookie: this.cookieHeader(), [CSRF_HEADER]: this.jar.get(AUTH_COOKIES.csrf) ?? '' };
    const res = await fetch(this.base + path, { method: 'POST', headers, body: form });
    return { status: res.status, body: (await res.json()) as Json };
  }

  async call(method: string, path: string, body?: unknown): Promise<{ status: number; body: Json; cookies: string[]; headers: Headers }> {
    const headers: Record<string, string> = { origin: PANEL, 'accept-language': this.lang, connection: 'close' };
    if (this.jar.size) headers.cookie = this.cookieHeader();
    // The panel's fetch wrapper: the double-submit header on every write.
    const csrf = this.jar.get(AUTH_COOKIES.csrf);
    if (method !== 'GET' && csrf) headers[CSRF_HEADER] = csrf;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(this.base + path, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    this.take(res);
    const text = await res.text();
    let parsed: Json = text;
    try {
      parsed = text === '' ? null : JSON.parse(text);
    } catch {
      /* not JSON: the assertions say so */
    }
    return { status: res.status, body: parsed, cookies: res.headers.getSetCookie(), headers: res.headers };
  }
}


/** `/ws/admin` as the panel opens it: the cookie and the page's Origin on the upgrade, an empty token in the auth frame. */
async function adminSocket(port: number, browser: Browser) {
  const c = await openAdminSocket(port, { cookie: browser.cookieHeader(), origin: PANEL });
  c.send({ type: 'auth', token: '' });
  const ok = await c.next((f) => f.type === 'auth_ok' || f.type === 'auth_error', 0, 'auth reply');
  return { ...c, ok };
}

await t.test('the admin panel walk: 2FA login and refresh, every page, streamed chat, a viewer who changes nothing', async (t) => {
  const scratch = tempHome(t);
  const root = join(scratch.dir, 'home');
  const paths = homePaths(root);
  const record = `${root}.argv.ndjson`;
  mkdirSync(paths.configDir, { recursive: true });
  writeFileSync(paths.configFile, JSON.stringify({ api: { enabled: true, host: '127.0.0.1', port: 0, cors_origins: [PANEL] } }));
  // Real time plus what the test moves on: a TOTP step, an access token's lifetime.
  let offset = 0;
  const clock = () => Date.now() + offset;
  const d = await startDaemon({
    paths, logToStderr: false, internalPort: 0, apiPort: 0, killGraceMs: 300, clock,
    env: { PATH: `${BIN}:${process.env.PATH}`, HOME: root, FAKE_CLI_REPLY: REPLY, FAKE_CLI_CHUNKS: '3', FAKE_CLI_RECORD: record },
  });
  scratch.beforeRemove(() => d.stop('test'));
  const port = d.apiPort!;
  const base = `http://127.0.0.1:${port}`;
  const cliRuns = () => (existsSync(record) ? readFileSync(record, 'utf8').trim().split('\n').filter(Boolean).length : 0);
  const admin = new Browser(base);

  // ------------------------------------------------------------------ 1. login, 2FA, refresh
  const password = readFileSync(paths.initialAdminPasswordFile, 'utf8').trim();
  let r = await admin.call('GET', '/api/auth/me');
  t.equal(r.status, 401, 'before login the panel is told to log in');
  t.match(r.body.error, /[А-Яа-я]/, 'in Russian by default');
  t.equal(r.headers.get('access-control-allow-origin'), PANEL, 'the panel origin is allowed, with credentials');
  t.equal(r.headers.get('access-control-allow-credentials'), 'true');

  r = await admin.call('POST', '/api/auth/login', { username: 'admin', password });
  t.equal(r.status, 200, JSON.stringify(r.body));
  t.match(r.body, { access_token: String, refresh_token: String, user: { username: 'admin', role: 'admin', totp_enabled: false } });
  t.ok(admin.jar.get(AUTH_COOKIES.access) && admin.jar.get(AUTH_COOKIES.refresh) && admin.jar.get(AUTH_COOKIES.csrf), 'access, refresh and CSRF cookies set');
  t.ok(r.cookies.some((c) => c.startsWith(`${AUTH_COOKIES.access}=`) && /HttpOnly/i.test(c) && /SameSite=Lax/i.test(c) && /Path=\//i.test(c)), 'the access cookie is httpOnly, Lax, Path=/');
  t.notOk(r.cookies.some((c) => c.startsWith(`${AUTH_COOKIES.csrf}=`) && /HttpOnly/i.test(c)), 'the CSRF cookie is readable by the page');

  const setup = await admin.call('POST', '/api/auth/2fa/setup');
  t.match(setup, { status: 200, body: { secret: String, otpauth_uri: /^otpauth:\/\/totp\//, qr_data: /^data:image\/png;base64,/ } });
  const totp = OTPAuth.URI.parse(setup.body.otpauth_uri) as OTPAuth.TOTP;
  t.equal(totp.secret.base32, setup.body.secret);
  r = await admin.call('POST', '/api/auth/2fa/verify', { code: totp.generate({ timestamp: clock() }) });
  t.match(r, { status: 200, body: { totp_enabled: true } });
  r = await admin.call('POST', '/api/auth/logout');
  t.equal(r.status, 200);
  t.equal(admin.jar.size, 0, 'logout clears every cookie');

  admin.lang = 'en';
  r = await admin.call('POST', '/api/auth/login', { username: 'admin', password });
  t.match(r, { status: 200, body: { requires_2fa: true, temp_token: String } });
  t.notOk(admin.jar.has(AUTH_COOKIES.access), 'no session before the second factor');
  // The code just used is spent; the phone shows the next step's.
  offset += 30_000;
  r = await admin.call('POST', '/api/auth/2fa/login', { temp_token: r.body.temp_token, code: totp.generate({ timestamp: clock() }) });
  t.match(r, { status: 200, body: { access_token: String, user: { username: 'admin', totp_enabled: true } } });
  t.ok(admin.jar.get(AUTH_COOKIES.access) && admin.jar.get(AUTH_COOKIES.csrf), 'cookies set by the 2FA login');
  t.match(await admin.call('GET', '/api/auth/me'), { status: 200, body: { username: 'admin', role: 'admin', totp_enabled: true } });

  // A cookie write without the double-submit header is refused on every surface, not only the admin one.
  const csrf = admin.jar.get(AUTH_COOKIES.csrf)!;
  admin.jar.delete(AUTH_COOKIES.csrf);
  r = await admin.call('POST', '/api/notifications/read-all');
  t.match(r, { status: 403, body: { code: 'csrf-failed' } }, 'shared /api route: missing CSRF is 403, not a 500');
  r = await admin.call('PUT', '/api/system/instance-name', { instance_name: 'nope' });
  t.match(r, { status: 403, body: { code: 'csrf-failed' } });
  admin.jar.set(AUTH_COOKIES.csrf, csrf);

  offset += 16 * 60_000;
  r = await admin.call('GET', '/api/auth/me');
  t.equal(r.status, 401, 'the access cookie expired');
  t.match(r.body.error, /^[^А-Яа-я]+$/, 'in English when asked');
  r = await admin.call('POST', '/api/auth/refresh');
  t.match(r, { status: 200, body: { access_token: String } }, 'refreshed from the cookie');
  t.match(await admin.call('GET', '/api/auth/me'), { status: 200, body: { username: 'admin' } }, 'the retry works');

  // ------------------------------------------------------------------ content the pages show
  const created = {
    cron: await admin.call('POST', '/api/cron', { title: 'Morning digest', schedule: '0 9 * * *', agent: 'main', description: 'd', enabled: true }),
    webhook: await admin.call('POST', '/api/webhooks', { agent: 'main', name: 'Deploys', mode: 'wake' }),
    memory: await admin.call('PUT', `/api/memory/modules/${encodeURIComponent('modules/walk.md')}`, { content: '# Walk\n' }),
    folder: await admin.call('POST', '/api/files/mkdir', { agent: 'main', relative_path: 'panel-walk' }),
    session: await admin.call('POST', '/api/chat/sessions', { agent: 'main', title: 'Walk' }),
  };
  for (const [what, res] of Object.entries(created)) t.ok(res.status >= 200 && res.status < 300, `${what} created: ${res.status} ${JSON.stringify(res.body)}`);
  const uploaded = await admin.upload('/upload?agent=main&relative_path=panel-walk', 'from the panel.txt', 'uploaded through the files page');
  t.match(uploaded, { status: 200, body: { path: join(paths.workspace, 'panel-walk', 'from_the_panel.txt'), name: 'from the panel.txt', size: 31, mime: 'text/plain', prompt: String } });
  t.equal(readFileSync(join(paths.workspace, 'panel-walk', 'from_the_panel.txt'), 'utf8'), 'uploaded through the files page', "the files page's upload is in the folder it shows");
  const cronId = created.cron.body.id as string;
  const hookId = created.webhook.body.id as string;

  // ------------------------------------------------------------------ 3. chat streams
  const a = await adminSocket(port, admin);
  const b = await adminSocket(port, admin);
  t.teardown(() => {
    a.ws.terminate();
    b.ws.terminate();
  });
  t.match(a.ok, { type: 'auth_ok', role: 'admin', agents: Array });
  a.ws.send(JSON.stringify({ type: 'message', agent: 'main', text: 'walk the panel' }));
  const result = await a.next((f) => f.type === 'result', 0, 'result');
  t.match(result, { type: 'result', text: REPLY, agent: 'main', session_id: String });
  const deltas = a.frames.filter((f) => f.type === 'text_delta');
  // How many depends on how the pieces are batched on their way; at least one arrives before the result.
  t.ok(deltas.length >= 1, `streamed (${deltas.length} deltas)`);
  t.ok(a.frames.indexOf(deltas[0]!) < a.frames.indexOf(result), 'the stream comes before the result');
  t.ok(deltas.every((f) => f.session_id === result.session_id && f.agent === 'main' && typeof f.text === 'string'), 'every delta names the session and agent');
  t.equal(deltas.map((f) => f.text).join(''), REPLY, 'the deltas add up to the result');
  t.same(await b.next((f) => f.type === 'result', 0, 'mirrored result'), result, 'the second socket sees the same result');
  t.same(b.frames.filter((f) => f.type === 'text_delta'), deltas, 'and the same deltas');
  const history = await admin.call('GET', `/api/chat/sessions/${result.session_id}/messages`);
  t.equal(history.status, 200);
  t.match(history.body, [
    { sender: 'user', content: 'walk the panel', id: String, timestamp: String },
    { sender: 'agent', content: REPLY, id: String, timestamp: String },
  ]);

  // ------------------------------------------------------------------ 2. every page loads
  const sessionId = result.session_id as string;
  const str = String;
  const num = Number;
  const bool = Boolean;
  const arr = Array;
  const PAGES: [path: string, shape: unknown][] = [
    ['/api/dashboard/summary', { system: { cpu_percent: num, ram_percent: num, disk_percent: num }, recent_activity: arr }],
    ['/api/activity', null],
    ['/api/activity/recent', null],
    ['/api/system/status', { instance_name: str, cpu_percent: num, ram_percent: num, disk_percent: num, uptime_seconds: num, uptime_human: str, version: str }],
    ['/api/agents', [{ name: 'main', display_name: str, provider: str, model: str, online: bool, status: str, active_sessions: num, description: str, has_avatar: bool, additional_directories: arr }]],
    ['/api/agents/main', { name: 'main' }],
    ['/api/agents/main/metrics?period=24h', { total_executions: num, avg_duration_seconds: num, error_count: num, success_rate: num, tokens_used: num, period: '24h' }],
    ['/api/agents/main/metrics/history?period=7d', [{ timestamp: str, executions: num, errors: num, avg_duration: num }]],
    ['/api/logs?agent=main&lines=50', { agent: 'main', lines: arr }],
    ['/api/logs/poll?agent=main', { agent: 'main', lines: arr }],
    ['/api/chat/sessions', [{ id: str, agent: str, title: str, created_at: str, updated_at: str, archived: bool, unread_count: num }]],
    [`/api/chat/sessions/${sessionId}/messages`, [{ id: str, sender: str, content: str, timestamp: str }]],
    ['/api/chat?agent=main', null],
    ['/api/commands', { commands: [{ command: str, description: str }], multiagent: arr }],
    ['/api/providers/available', { providers: arr }],
    // The memory-review job the daemon seeds at its first start comes first (MemoryConfig).
    ['/api/cron', [{ id: 'memory-review' }, { id: cronId, title: str, name: str, schedule: str, agent: str, enabled: bool, status: 'active', description: str, execution_count: num }]],
    ['/api/webhooks', [{ id: hookId, name: str, title: str, url: `/hooks/${hookId}`, agent: str, enabled: bool, trigger_count: num, secret: '***', mode: 'wake' }]],
    ['/api/tasks', arr],
    ['/api/sessions', null],
    ['/api/memory', null],
    ['/api/memory/modules', arr],
    [`/api/memory/modules/${encodeURIComponent('modules/walk.md')}`, { filename: 'modules/walk.md', content: '# Walk\n' }],
    ['/api/rag/status', { enabled: bool, vector_db_path: str, vector_db_exists: bool, vector_db_size_bytes: num }],
    ['/api/agents/main/skills', arr],
    ['/api/skills', arr],
    ['/api/files/list?agent=main&path=', arr],
    ['/api/users', [{ username: 'admin', role: 'admin', display_name: str, allowed_agents: arr, active: true, created_at: num, totp_enabled: true }]],
    ['/api/audit', arr],
    ['/api/notifications', arr],
    ['/api/notifications/unread-count', { count: num }],
    ['/api/config', { api: { cors_origins: [PANEL] } }],
    ['/api/auth/me', { username: 'admin', role: 'admin', allowed_agents: arr, active: true, created_at: num, totp_enabled: true }],
    ['/api/export', { version: str, exported_at: str, cron_jobs: arr, webhooks: arr, users: arr }],
    ['/api/openapi.json', { openapi: '3.1.0', paths: Object }],
  ];
  for (const [path, shape] of PAGES) {
    r = await admin.call('GET', path);
    t.ok(r.status >= 200 && r.status < 300, `${path}: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
    t.ok(r.body !== null && typeof r.body === 'object', `${path}: a JSON body`);
    t.notOk(!Array.isArray(r.body) && r.body && Object.hasOwn(r.body, 'error'), `${path}: no top-level error`);
    if (shape !== null) t.match(r.body, shape, `${path}: the fields WIRE.md names`);
  }
  const has = async (path: string, keys: string[]) => {
    const body = (await admin.call('GET', path)).body;
    const row = Array.isArray(body) ? body[0] : body;
    t.same(keys.filter((k) => !Object.hasOwn(row ?? {}, k)), [], `${path}: every field WIRE.md names is present`);
  };
  await has('/api/agents', ['last_active']);
  await has('/api/agents/main/metrics?period=24h', ['last_active']);
  await has('/api/chat/sessions', ['provider_override', 'model_override', 'last_read_message_id']);
  await has('/api/cron', ['last_run_at', 'next_run', 'avg_duration', 'timezone', 'provider', 'model']);
  await has('/api/webhooks', ['method', 'status', 'last_triggered', 'description']);
  await has('/api/users', ['telegram_user_ids', 'avatar']);
  await has('/api/auth/me', ['display_name', 'avatar']);
  const config = JSON.parse(readFileSync(paths.configFile, 'utf8')) as { api: { token: string; jwt_secret: string } };
  const served = JSON.stringify((await admin.call('GET', '/api/config')).body);
  t.ok(config.api.token.length > 0 && config.api.jwt_secret.length > 0, 'the daemon generated its token and JWT secret');
  t.notOk(served.includes(config.api.token) || served.includes(config.api.jwt_secret), 'the config page never shows a secret');
  const files = await admin.call('GET', '/api/files/list?agent=main&path=');
  t.match(files.body.find((f: Json) => f.name === 'panel-walk'), { path: 'panel-walk', isDir: true, size: num, mime: str, modified: num });
  const exported = await admin.call('GET', '/api/export');
  t.notMatch(JSON.stringify(exported.body.users), /password_hash|totp_secret/, 'export holds no hashes or TOTP secrets');
  // The canonical feed (the legacy /api/activity keeps its old raw shape).
  const activity = await admin.call('GET', '/api/activity/recent');
  const events: Json[] = Array.isArray(activity.body) ? activity.body : (activity.body.events ?? activity.body.items ?? []);
  t.ok(events.length > 0 && events.every((e) => typeof e.subtitle === 'string'), `every activity subtitle is a string: ${JSON.stringify(activity.body).slice(0, 600)}`);

  // ------------------------------------------------------------------ 4. a viewer changes nothing
  r = await admin.call('POST', '/api/users', { username: 'vera', password: 'vera-password-1', role: 'viewer' });
  t.match(r, { status: 201, body: { username: 'vera', role: 'viewer' } });
  const viewer = new Browser(base);
  viewer.lang = 'en';
  r = await viewer.call('POST', '/api/auth/login', { username: 'vera', password: 'vera-password-1' });
  t.match(r, { status: 200, body: { user: { username: 'vera', role: 'viewer' } } });
  t.ok(viewer.jar.get(AUTH_COOKIES.csrf), 'the viewer has a CSRF cookie, so refusals are about the role');
  t.match(await viewer.call('GET', '/api/cron'), { status: 200, body: [{ id: 'memory-review' }, { id: cronId }] }, 'the viewer reads the pages it may');

  // State, not the daemon's own log lines, which may be written at any moment.
  const state = () => Object.fromEntries(Object.entries(snapshot(root)).filter(([k]) => !/^logs(\/|$)/.test(k)));
  const before = state();
  const runsBefore = cliRuns();
  const doc = (await viewer.call('GET', '/api/openapi.json')).body as { paths: Record<string, Record<string, { security: unknown[]; 'x-svc-role'?: string }>> };
  const PARAMS: Record<string, string> = { username: 'admin', name: 'main', agent: 'main', agentId: 'main', skill: 'walk-skill', filename: encodeURIComponent('modules/walk.md') };
  const idFor = (path: string) => (path.startsWith('/api/cron') ? cronId : path.startsWith('/api/webhooks') ? hookId : path.startsWith('/api/chat') ? sessionId : 'walk-id');
  const refused: string[] = [];
  const open: string[] = [];
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      if (method === 'get') continue;
      const line = `${method.toUpperCase()} ${path}`;
      if (op.security.length === 0 || op['x-svc-role'] === undefined || op['x-svc-role'] === 'viewer') {
        open.push(line);
        continue;
      }
      const url = path.replace(/\{(\w+)\}/g, (_m, p: string) => (p === 'id' ? idFor(path) : (PARAMS[p] ?? 'x')));
      const res = await viewer.call(method.toUpperCase(), url, {});
      t.equal(res.status, 403, `${line} as a viewer: ${JSON.stringify(res.body)}`);
      t.type(res.body?.error, 'string', `${line}: a JSON error`);
      refused.push(line);
    }
  }
  t.ok(refused.length >= 40, `every write route refused (${refused.length})`);
  t.same(
    open.sort(),
    [
      'POST /api/auth/2fa/disable',
      'POST /api/auth/2fa/login',
      'POST /api/auth/2fa/setup',
      'POST /api/auth/2fa/verify',
      'POST /api/auth/login',
      'POST /api/auth/logout',
      'POST /api/auth/refresh',
      'POST /api/chat/sessions/{id}/read',
      'POST /api/dashboard/errors/ack',
      'POST /api/notifications/read-all',
      'PUT /api/auth/profile',
      'PUT /api/notifications/{id}/read',
    ],
    "what a viewer may still send: its own account, its session, its own read marks (SPEC.md 'Roles')",
  );

  const v = await adminSocket(port, viewer);
  t.teardown(() => v.ws.terminate());
  t.match(v.ok, { type: 'auth_ok', role: 'viewer' });
  v.ws.send(JSON.stringify({ type: 'message', agent: 'main', text: 'viewer tries to chat' }));
  t.match(await v.next((f) => f.type === 'error', 0, 'error'), { type: 'error', message: String });
  t.notOk(v.frames.some((f) => f.type === 'text_delta' || f.type === 'result'), 'nothing streamed to the viewer');
  t.equal(cliRuns(), runsBefore, 'no CLI started for the viewer');

  const after = state();
  for (const file of ['_secrets/users.json', 'cron_jobs.json', 'webhooks.json', 'config/config.json']) {
    t.ok(Object.keys(before).some((k) => k.endsWith(file)), `${file} is in the snapshot`);
  }
  t.same(after, before, 'users.json, cron_jobs.json, webhooks.json, memory, config and every other file byte-identical');
});
