import t from 'tap';
import { readFileSync, statSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { homePaths, loadUsers } from '../../store/index.js';
import { exited, freePortHome, startSvc, svc, until } from './cli-helpers.js';

/* Issue 12 item 7: a fresh start creates the admin, says once where its password is, and the password logs in. */

await t.test('first start: bootstrap admin, said once in the banner, logs in over the real API; status tracks it', async (t) => {
  const dir = freePortHome(join(t.testdir(), 'home'), { allowed_user_ids: [4242], api: { enabled: true, host: '127.0.0.1', port: 0, token: 'tok-0123456789abcdef0123' } });
  const paths = homePaths(dir);
  const daemon = startSvc(dir);
  t.teardown(() => daemon.kill('SIGKILL'));
  await until('the banner', () => /\n {2}next {8}/.test(daemon.output()));
  const out = daemon.output();
  // The panel on the API port is where a person logs in (its page says how to build it if it is not built).
  const m = new RegExp(`log in as admin at http://127\\.0\\.0\\.1:(\\d+)/ with the password in ${paths.initialAdminPasswordFile.replace(/[.]/g, '\\.')}`).exec(out);
  t.ok(m, out);
  t.match(out, new RegExp(`\\n {2}panel {7}(not built: npm run build[^\\n]*\\n {14})?http://127\\.0\\.0\\.1:${m?.[1]}/\\n`), 'the panel row names the same URL');
  t.equal(statSync(paths.initialAdminPasswordFile).mode & 0o777, 0o600);
  const password = readFileSync(paths.initialAdminPasswordFile, 'utf8').trim();
  t.match(password, /^[A-Za-z0-9]{16}$/);
  t.notOk(out.includes(password), 'the banner names the file, never the password');
  t.match(loadUsers(paths), [{ username: 'admin', role: 'admin', telegram_user_ids: [4242] }]);
  const secret = JSON.parse(readFileSync(paths.configFile, 'utf8')).api.jwt_secret;
  t.ok(typeof secret === 'string' && secret.length >= 32, 'api.jwt_secret generated and saved');

  const port = m![1];
  const login = await fetch(`http://127.0.0.1:${port}/api/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'admin', password }) });
  t.equal(login.status, 200);
  const { access_token } = (await login.json()) as { access_token: string };
  const me = await fetch(`http://127.0.0.1:${port}/api/auth/me`, { headers: { authorization: `Bearer ${access_token}` } });
  t.match(await me.json(), { username: 'admin', role: 'admin' });
  t.match(svc(dir, ['status']).stdout, /first-start password is unchanged/);

  daemon.kill('SIGTERM');
  t.equal(await exited(daemon), 0);
  const again = startSvc(dir);
  t.teardown(() => again.kill('SIGKILL'));
  await until('the second banner', () => /\n {2}next {8}/.test(again.output()));
  t.notMatch(again.output(), /log in as admin/, 'said once: the second start is quiet about it');
  t.equal(readFileSync(paths.initialAdminPasswordFile, 'utf8').trim(), password);
  t.equal(JSON.parse(readFileSync(paths.configFile, 'utf8')).api.jwt_secret, secret, 'the secret is kept, so sessions survive restarts');
  again.kill('SIGTERM');
  t.equal(await exited(again), 0);
});

/** A port free right now, so a test can poll the API before the banner names it. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  await new Promise((r) => server.close(r));
  return port;
}

await t.test('ready means ready: once /health answers 200 on a fresh home, the first-start password is there and logs in', async (t) => {
  // A few fresh starts: the bootstrap admin is hashed beside the later subsystems, so a /health
  // that answered before it was written would show up in one of them.
  for (let round = 1; round <= 3; round++) {
    const port = await freePort();
    const dir = freePortHome(join(t.testdir(), `home-${round}`), { api: { enabled: true, host: '127.0.0.1', port, token: 'tok-0123456789abcdef0123' } });
    const paths = homePaths(dir);
    const daemon = startSvc(dir);
    t.teardown(() => void daemon.kill('SIGKILL'));
    // Each answer before ready, as `status body.status`; refused connections (not listening yet) as 0.
    const before = new Set<string>();
    await until(
      '/health to answer 200',
      async () => {
        if (daemon.exitCode !== null) throw new Error(`svc exited: ${daemon.output()}`);
        const r = await fetch(`http://127.0.0.1:${port}/health`).catch(() => null);
        if (r === null) return before.add('0'), false;
        const body = (await r.json()) as { status: string };
        if (r.status === 200) return t.same(body, { status: 'ok', connections: 0 }, `round ${round}: WIRE.md §1's answer once up`);
        return before.add(`${r.status} ${body.status}`), false;
      },
      30_000,
    );
    // At once, as a script would: no wait for the banner.
    const password = readFileSync(paths.initialAdminPasswordFile, 'utf8').trim();
    const login = await fetch(`http://127.0.0.1:${port}/api/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'admin', password }) });
    t.equal(login.status, 200, `round ${round}: the bootstrap login succeeds`);
    t.same([...before].filter((s) => s !== '0' && s !== '503 starting'), [], `round ${round}: before ready, /health is not listening or answers 503 starting`);
    daemon.kill('SIGTERM');
    t.equal(await exited(daemon), 0);
  }
});
