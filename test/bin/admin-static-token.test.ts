// A token svc generates at start (api.token empty) works on the admin API at once, not only after
// the config watcher reads config.json back: the direct API and the admin surface hold one token.
import t from 'tap';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startDaemon } from '../../bin/daemon.js';
import { homePaths } from '../../store/index.js';
import { tempHome } from '../fixtures/temp-home.js';

await t.test('the generated api.token is the legacy admin from the first request', async (t) => {
  const scratch = tempHome(t);
  const root = join(scratch.dir, 'home');
  mkdirSync(join(root, 'config'), { recursive: true });
  writeFileSync(join(root, 'config', 'config.json'), JSON.stringify({ api: { enabled: true, host: '127.0.0.1', port: 0 } }));
  // The watcher would take an hour to notice: only the token the daemon holds can work.
  const d = await startDaemon({ paths: homePaths(root), logToStderr: false, internalPort: 0, apiPort: 0, watchIntervalMs: 3_600_000, env: { PATH: process.env.PATH ?? '', HOME: root } });
  scratch.beforeRemove(() => d.stop('test'));
  const token = (JSON.parse(readFileSync(join(root, 'config', 'config.json'), 'utf8')) as { api: { token: string } }).api.token;
  t.ok(token.length >= 32, 'a token was generated and saved');
  const get = (auth: string) => fetch(`http://127.0.0.1:${d.apiPort}/api/agents`, { headers: { connection: 'close', authorization: auth } });
  t.equal((await get(`Bearer ${token}`)).status, 200);
  t.equal((await get(`Bearer ${token}x`)).status, 401);
  const login = await fetch(`http://127.0.0.1:${d.apiPort}/api/auth/login`, { method: 'POST', headers: { connection: 'close', 'content-type': 'application/json' }, body: JSON.stringify({ token }) });
  t.equal(login.status, 200, 'logging in with the API token works too');
  const { access_token } = (await login.json()) as { access_token: string };
  t.equal((await get(`Bearer ${access_token}`)).status, 200, 'and its access token is accepted');
});
