// Every request body and query string the sygen-admin panel sends (its src/lib/api.ts and the pages
// that fill it in), sent exactly so to the real daemon. The strict parsers refuse unknown fields, so
// each call here is one the panel makes and svc must take: edit forms send whole records back.
import t, { type Test } from 'tap';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startDaemon } from '../../bin/daemon.js';
import { homePaths } from '../../store/index.js';
import { tempHome } from '../fixtures/temp-home.js';

const BIN = fileURLToPath(new URL('../fixtures/bin', import.meta.url));
type Json = any;

async function panelDaemon(t: Test) {
  const scratch = tempHome(t);
  const paths = homePaths(`${scratch.dir}/home`);
  mkdirSync(paths.configDir, { recursive: true });
  writeFileSync(paths.configFile, JSON.stringify({ api: { enabled: true, host: '127.0.0.1', port: 0 } }));
  const d = await startDaemon({ paths, logToStderr: false, internalPort: 0, apiPort: 0, killGraceMs: 300, env: { PATH: `${BIN}:${process.env.PATH}`, HOME: `${scratch.dir}/home` } });
  scratch.beforeRemove(() => d.stop('test'));
  const base = `http://127.0.0.1:${d.apiPort!}`;
  let token = '';
  const call = async (method: string, path: string, body?: unknown): Promise<{ status: number; body: Json }> => {
    const headers: Record<string, string> = { connection: 'close', 'accept-language': 'en' };
    if (token) headers.authorization = `Bearer ${token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(base + path, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    const text = await res.text();
    return { status: res.status, body: text === '' ? null : JSON.parse(text) };
  };
  const password = readFileSync(paths.initialAdminPasswordFile, 'utf8').trim();
  const login = await call('POST', '/api/auth/login', { username: 'admin', password });
  t.equal(login.status, 200, 'logged in');
  token = login.body.access_token;
  return { call, paths };
}

const ok = (t: Test, r: { status: number; body: Json }, what: string) => t.ok(r.status >= 200 && r.status < 300, `${what}: ${r.status} ${JSON.stringify(r.body)}`);

await t.test("the webhooks page's edit form sends the whole hook back, url and method included", async (t) => {
  const { call } = await panelDaemon(t);
  // handleCreate: {id, name, url, method, agent, description}, secret only when typed.
  ok(t, await call('POST', '/api/webhooks', { id: 'deploys', name: 'Deploys', url: '/hooks/deploys', method: 'POST', agent: 'main', description: '', secret: 'first-secret-123' }), 'create');
  const listed = (await call('GET', '/api/webhooks')).body.find((h: Json) => h.id === 'deploys');
  t.match(listed, { url: /\/hooks\/deploys$/, method: 'POST', secret: '***' });

  // handleEdit: {name, url, method, agent, description} as the form holds them (url/method from the listing).
  const edit = { name: 'Deploys v2', url: listed.url, method: listed.method, agent: 'main', description: 'ship it' };
  let r = await call('PUT', '/api/webhooks/deploys', edit);
  t.match(r, { status: 200, body: { id: 'deploys', name: 'Deploys v2', description: 'ship it', url: listed.url, method: 'POST', secret: '***' } }, 'edited; the secret kept');
  r = await call('PUT', '/api/webhooks/deploys', { ...edit, secret: 'second-secret-456' });
  t.match(r, { status: 200, body: { secret: '***' } }, 'a new secret typed in');
  t.match(await call('POST', '/api/webhooks/deploys/verify', { payload: 'x', signature: 'sha256=00' }), { status: 200, body: { valid: false } }, 'the hook has a secret to verify against');

  // "Clear secret": {..., secret: ""}; the hook then has none of its own (bearer falls back to webhooks.token).
  r = await call('PUT', '/api/webhooks/deploys', { ...edit, secret: '' });
  t.match(r, { status: 200, body: { secret: '' } }, 'the secret cleared');
  t.match(await call('POST', '/api/webhooks/deploys/verify', { payload: 'x', signature: 'sha256=00' }), { body: { code: 'webhook-no-secret' } });

  // The url and method are checked, never stored: a form that changed them is told, and nothing changes.
  const before = (await call('GET', '/api/webhooks')).body;
  r = await call('PUT', '/api/webhooks/deploys', { ...edit, name: 'Renamed', url: '/hooks/other' });
  t.match(r, { status: 400, body: { code: 'invalid-body', error: /url/ } }, "a url naming another hook's id");
  r = await call('PUT', '/api/webhooks/deploys', { ...edit, name: 'Renamed', url: 'https://example.test/elsewhere' });
  t.match(r, { status: 400, body: { code: 'invalid-body', error: /url/ } }, 'a url that is no hook path');
  r = await call('PUT', '/api/webhooks/deploys', { ...edit, name: 'Renamed', method: 'GET' });
  t.match(r, { status: 400, body: { code: 'invalid-body', error: /method/ } }, 'a method the webhook server does not take');
  r = await call('PUT', '/api/webhooks/deploys', { ...edit, secret: 'short' });
  t.match(r, { status: 400, body: { code: 'invalid-body', error: /secret/ } }, 'a too-short secret is still refused');
  r = await call('PUT', '/api/webhooks/deploys', { ...edit, trigger_count: 3 });
  t.match(r, { status: 400, body: { code: 'invalid-body', error: /trigger_count/ } }, 'a field svc does not know is still refused');
  t.same((await call('GET', '/api/webhooks')).body, before, 'none of those changed the hook');
  const stored = (await call('GET', '/api/export')).body.webhooks.find((h: Json) => h.id === 'deploys');
  t.notOk('url' in stored || 'method' in stored, 'url and method were never stored');
});

await t.test("the cron page's create, edit and pause bodies", async (t) => {
  const { call } = await panelDaemon(t);
  // createCronJob: {id, title, schedule, agent, description, enabled} (name is renamed to title).
  ok(t, await call('POST', '/api/cron', { id: 'morning-digest', title: 'Morning digest', schedule: '0 9 * * *', agent: 'main', description: '', enabled: true }), 'create');
  ok(t, await call('PUT', '/api/cron/morning-digest', { title: 'Morning digest 2', schedule: '0 10 * * *', agent: 'main', description: 'd', enabled: true }), 'edit');
  const r = await call('PUT', '/api/cron/morning-digest', { enabled: false });
  t.match(r, { status: 200, body: { id: 'morning-digest', title: 'Morning digest 2', status: 'paused' } }, 'pause');
});

await t.test("the profile page's remove-avatar and the other pages' bodies and queries", async (t) => {
  const { call, paths } = await panelDaemon(t);
  // profile/page.tsx removeAvatar: {avatar: ""}.
  t.match(await call('PUT', '/api/auth/profile', { avatar: '' }), { status: 200, body: { username: 'admin', avatar: null } }, 'avatar removed');
  t.match(await call('PUT', '/api/auth/profile', { display_name: 'Boss' }), { status: 200, body: { display_name: 'Boss' } });
  t.match(await call('PUT', '/api/auth/profile', { avatar: '../x' }), { status: 400 }, 'a path is still no avatar');

  // files/page.tsx listFiles: agent, path (when set), type (when set), sort (always).
  ok(t, await call('POST', '/api/files/mkdir', { agent: 'main', name: 'docs' }), 'mkdir by name');
  ok(t, await call('POST', '/api/files/mkdir', { agent: 'main', relative_path: 'docs/inner' }), 'mkdir by path');
  t.match(await call('GET', '/api/files/list?agent=main&sort=name'), { status: 200, body: Array }, 'the default listing');
  t.match(await call('GET', '/api/files/list?agent=main&path=docs&type=image&sort=date'), { status: 200, body: Array }, 'filtered and sorted');
  t.match(await call('GET', '/api/files/list?agent=main&sort=colour'), { status: 400, body: { code: 'invalid-query', error: /sort/ } }, 'an unknown order is refused');
  t.match(await call('GET', '/api/files/list?agent=main&kind=image'), { status: 400, body: { code: 'invalid-query' } }, 'an unknown parameter is refused');
  writeFileSync(join(paths.workspace, 'docs', 'a.txt'), 'a');
  // hooks.ts signFileUrl {agent, relative_path, ttl}; AudioPlayer's signFilePath {path, ttl}.
  ok(t, await call('POST', '/api/files/sign-url', { agent: 'main', relative_path: 'docs/a.txt', ttl: 60 }), 'sign-url by agent and relative path');
  ok(t, await call('POST', '/api/files/sign-url', { path: 'docs/a.txt', ttl: 300 }), 'sign-url by path');
  ok(t, await call('DELETE', '/api/files', { agent: 'main', relative_path: 'docs/inner' }), 'delete');

  // users/page.tsx: create and edit send the whole form; the toggle sends {active}.
  ok(t, await call('POST', '/api/users', { username: 'vera', password: 'vera-password-1', role: 'viewer', display_name: 'Vera', allowed_agents: [], telegram_user_ids: [] }), 'user created');
  ok(t, await call('PUT', '/api/users/vera', { role: 'operator', display_name: 'Vera', allowed_agents: ['main'], telegram_user_ids: [12345], password: 'vera-password-2' }), 'user edited');
  ok(t, await call('PUT', '/api/users/vera', { active: false }), 'user paused');

  // Reads with query strings, as the pages build them.
  for (const path of [
    '/api/tasks',
    '/api/audit?limit=500',
    '/api/notifications?limit=50&severity=critical,warning,info',
    '/api/notifications?limit=50&unread_only=true',
    '/api/activity/recent?limit=50&severity=error',
    '/api/logs?lines=200&agent=main',
    '/api/agents/main/metrics?period=24h',
    '/api/agents/main/metrics/history?period=7d',
    '/api/agents/main/skills?scope=own',
    '/api/agents/main/skills',
    '/api/memory/modules?agent=main',
    '/api/chat/sessions?agent=main',
  ]) {
    ok(t, await call('GET', path), `GET ${path}`);
  }

  // Chat: create {agent, title?}, rename {title}, history paging, merge save, provider reset.
  const session = await call('POST', '/api/chat/sessions', { agent: 'main' });
  ok(t, session, 'session created');
  const id = session.body.id as string;
  ok(t, await call('PUT', `/api/chat/sessions/${id}`, { title: 'Renamed' }), 'session renamed');
  ok(t, await call('PUT', `/api/chat/sessions/${id}/messages?merge=true`, { messages: [{ id: 'm1', sender: 'user', content: 'hi', timestamp: new Date().toISOString() }] }), 'history merged');
  ok(t, await call('GET', `/api/chat/sessions/${id}/messages?limit=50&before=m1`), 'history page');
  ok(t, await call('POST', `/api/chat/sessions/${id}/provider`, { provider: null, model: null }), 'provider reset');

  // Settings: instance name, RAG toggle, and an export imported back unchanged.
  ok(t, await call('PUT', '/api/system/instance-name', { instance_name: 'Home' }), 'instance renamed');
  ok(t, await call('PUT', '/api/rag/config', { index_memory: true }), 'rag toggled');
  ok(t, await call('PUT', `/api/memory/modules/${encodeURIComponent('modules/notes.md')}?agent=main`, { content: '# Notes\n' }), 'memory module written');
  const exported = await call('GET', '/api/export');
  ok(t, await call('POST', '/api/import', exported.body), 'the export file imported back');
});

// Query parameters the panel sends to the routes whose query schemas live in edges/admin/*.routes.ts.
await t.test('panel queries declared inside route files', async (t) => {
  const { call } = await panelDaemon(t);
  const made = await call('POST', '/api/chat/sessions', { agent: 'main', title: 'old thread' });
  await call('POST', '/api/chat/sessions', { agent: 'main', title: 'current thread' });
  ok(t, await call('POST', `/api/chat/sessions/${(made.body as { id: string }).id}/archive`), 'archived one');
  const only = await call('GET', '/api/chat/sessions?agent=main&archived_only=1');
  t.same((only.body as { title: string }[]).map((s) => s.title), ['old thread'], 'archived_only lists the archived session alone');
  // chat/page.tsx archived list; ChatContext never sends it, but the archive drawer does.
  ok(t, await call('GET', '/api/chat/sessions?agent=main&archived_only=1'), 'archived sessions only');
  ok(t, await call('GET', '/api/chat/sessions?agent=main&include_archived=1'), 'archived sessions included');
  // agents/page.tsx live log tail: getLogsPoll(agent, after, 200) always sends lines.
  ok(t, await call('GET', '/api/logs/poll?agent=main&lines=200'), 'first poll');
  ok(t, await call('GET', '/api/logs/poll?agent=main&after=1764316800.5&lines=200'), 'next poll');
});
