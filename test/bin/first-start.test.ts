import t from 'tap';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { homePaths, loadUsers } from '../../store/index.js';
import { exited, freePortHome, startSvc, svc, until } from './cli-helpers.js';

/* Issue 12 item 7: a fresh start creates the admin, says once where its password is, and the password logs in. */

t.test('first start: bootstrap admin, said once in the banner, logs in over the real API; status tracks it', async (t) => {
  const dir = freePortHome(join(t.testdir(), 'home'), { allowed_user_ids: [4242], api: { enabled: true, host: '127.0.0.1', port: 0, token: 'tok-0123456789abcdef0123' } });
  const paths = homePaths(dir);
  const daemon = startSvc(dir);
  t.teardown(() => daemon.kill('SIGKILL'));
  await until('the banner', () => /\n {2}next {8}/.test(daemon.output()));
  const out = daemon.output();
  const m = new RegExp(`log in as admin at http://127\\.0\\.0\\.1:(\\d+)/api/auth/login with the password in ${paths.initialAdminPasswordFile.replace(/[.]/g, '\\.')}`).exec(out);
  t.ok(m, out);
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
