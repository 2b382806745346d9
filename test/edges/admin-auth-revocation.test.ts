// Issue 21 item 12, "Logout and password checks": an access token dies with its sign-in (logout, a
// reused refresh token), over REST and a new /ws/admin authentication; and the password checks a
// signed-in user can make (profile's old_password, 2FA disable) are limited and locked out as a
// login is, with one answer for a wrong password and a wrong code.
import t from 'tap';
import * as OTPAuth from 'otpauth';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startDaemon } from '../../bin/daemon.js';
import { AUDIT_EVENTS } from '../../schemas/index.js';
import { homePaths, loadUsers } from '../../store/index.js';
import { adminStand, cookieHeader, cookieJar } from '../fixtures/admin-auth-stand.js';
import { openAdminSocket } from '../fixtures/admin-socket-client.js';
import { tempHome } from '../fixtures/temp-home.js';

const BIN = fileURLToPath(new URL('../fixtures/bin', import.meta.url));

await t.test('logout and a reused refresh token end the access token at once: REST and a new /ws/admin auth', async (t) => {
  const scratch = tempHome(t);
  const root = join(scratch.dir, 'home');
  const paths = homePaths(root);
  mkdirSync(paths.configDir, { recursive: true });
  writeFileSync(paths.configFile, JSON.stringify({ api: { enabled: true, host: '127.0.0.1', port: 0 } }));
  const d = await startDaemon({ paths, logToStderr: false, internalPort: 0, apiPort: 0, killGraceMs: 300, env: { PATH: `${BIN}:${process.env.PATH}`, HOME: root } });
  scratch.beforeRemove(() => d.stop('test'));
  const port = d.apiPort!;
  const password = readFileSync(paths.initialAdminPasswordFile, 'utf8').trim();
  const call = async (method: string, path: string, opts: { body?: unknown; bearer?: string; cookie?: string; csrf?: string } = {}) => {
    const headers: Record<string, string> = { connection: 'close', 'accept-language': 'en' };
    if (opts.bearer) headers.authorization = `Bearer ${opts.bearer}`;
    if (opts.cookie) headers.cookie = opts.cookie;
    if (opts.csrf) headers['x-csrf-token'] = opts.csrf;
    if (opts.body !== undefined) headers['content-type'] = 'application/json';
    const r = await fetch(`http://127.0.0.1:${port}${path}`, { method, headers, ...(opts.body === undefined ? {} : { body: JSON.stringify(opts.body) }) });
    return { status: r.status, json: (await r.json()) as any, cookies: r.headers.getSetCookie() };
  };
  const login = async () => {
    const r = await call('POST', '/api/auth/login', { body: { username: 'admin', password } });
    t.equal(r.status, 200);
    return r;
  };
  /**
   * A new /ws/admin authentication with `token`, as a script makes it (the bearer on the upgrade
   * and in the auth frame): the auth reply, or `{type: 'refused', status}` when the upgrade is.
   */
  const wsAuth = async (token: string) => {
    let c;
    try {
      c = await openAdminSocket(port, { authorization: `Bearer ${token}` });
    } catch (e) {
      const status = /HTTP (\d+)/.exec(String(e))?.[1];
      return { type: 'refused', status: Number(status) };
    }
    t.teardown(() => c.ws.terminate());
    c.send({ type: 'auth', token });
    return c.next((f) => f.type === 'auth_ok' || f.type === 'auth_error', 0, 'auth reply');
  };
  const wsRefused = (r: Record<string, unknown>) => r.type === 'auth_error' || (r.type === 'refused' && r.status === 401);

  // Logout by body (a script).
  let session = (await login()).json;
  t.equal((await call('GET', '/api/auth/me', { bearer: session.access_token })).status, 200, 'the access token works');
  t.match(await wsAuth(session.access_token), { type: 'auth_ok' }, 'and authenticates the socket');
  t.equal((await call('POST', '/api/auth/logout', { body: { refresh_token: session.refresh_token } })).status, 200);
  t.match(await call('GET', '/api/auth/me', { bearer: session.access_token }), { status: 401, json: { code: 'unauthorized' } }, 'after logout the access token is refused at once');
  t.ok(wsRefused(await wsAuth(session.access_token)), 'and a new socket authentication with it is refused');

  // Logout by cookie (the panel): the access cookie dies too.
  const panel = await login();
  const jar = cookieJar(panel.cookies);
  const cookie = cookieHeader(jar);
  t.equal((await call('GET', '/api/auth/me', { cookie })).status, 200);
  t.equal((await call('POST', '/api/auth/logout', { cookie, csrf: jar.sygen_csrf! })).status, 200);
  t.equal((await call('GET', '/api/auth/me', { cookie })).status, 401, 'a kept copy of the access cookie is refused after logout');

  // A rotated refresh token coming back ends the family, and the access tokens it handed out.
  session = (await login()).json;
  const next = await call('POST', '/api/auth/refresh', { body: { refresh_token: session.refresh_token } });
  t.equal(next.status, 200);
  t.equal((await call('GET', '/api/auth/me', { bearer: next.json.access_token })).status, 200);
  t.equal((await call('POST', '/api/auth/refresh', { body: { refresh_token: session.refresh_token } })).status, 401, 'the reuse is refused');
  t.equal((await call('GET', '/api/auth/me', { bearer: next.json.access_token })).status, 401, 'the access token of the killed family is refused at once');
  t.ok(wsRefused(await wsAuth(next.json.access_token)), 'and on the socket');

  // An old, already revoked refresh token replayed to logout is not a way to end a new sign-in.
  const fresh = (await login()).json;
  t.equal((await call('POST', '/api/auth/logout', { body: { refresh_token: session.refresh_token } })).status, 200);
  t.equal((await call('GET', '/api/auth/me', { bearer: fresh.access_token })).status, 200, 'a replayed dead refresh token ends nothing');
});

await t.test("profile's old_password: wrong ones count toward the account's lockout, then 429 even for the right one", async (t) => {
  // Every call from its own address: the per-account lock is what is tested here.
  const s = await adminStand(t, { distinctClients: true });
  const token = (await s.login('bob', 'bob-password')).json.access_token as string;
  const hashBefore = loadUsers(s.paths).find((u) => u.username === 'bob')!.password_hash;
  const change = (old_password: string) => s.call('PUT', '/api/auth/profile', { bearer: token, body: { old_password, new_password: 'new-password-123' } });
  for (let i = 0; i < 10; i++) {
    t.match(await change(`guess-${i}`), { status: 400, json: { code: 'invalid-body' } }, `guess ${i} is wrong`);
  }
  t.match(await change('bob-password'), { status: 429, json: { code: 'account-locked' } }, 'locked: even the right password is not checked');
  t.equal(loadUsers(s.paths).find((u) => u.username === 'bob')!.password_hash, hashBefore, 'the password is unchanged');
  t.match(await s.login('bob', 'bob-password'), { status: 429, json: { code: 'account-locked' } }, 'the same lockout as a login: the login is locked too');
  t.ok(s.log.read().filter((e) => e.type === AUDIT_EVENTS.recorded && (e.data as { action: string }).action === 'auth.password_check_failed').length === 10, 'each failure audited');
  // The lock ends as a login's does.
  s.clock.now += 15 * 60_000 + 1000;
  const later = (await s.login('bob', 'bob-password')).json.access_token as string;
  t.match(await s.call('PUT', '/api/auth/profile', { bearer: later, body: { old_password: 'bob-password', new_password: 'new-password-123' } }), { status: 200 }, 'after the lock, the right password changes it');
});

await t.test("profile's old_password and 2FA disable are under the login's per-address limit", async (t) => {
  const s = await adminStand(t);
  const token = (await s.login('bob', 'bob-password')).json.access_token as string;
  // The login above was one attempt from this address; four more of any kind, then 429.
  for (let i = 0; i < 4; i++) t.equal((await s.call('PUT', '/api/auth/profile', { bearer: token, body: { old_password: `g${i}`, new_password: 'new-password-123' } })).status, 400);
  t.match(await s.call('PUT', '/api/auth/profile', { bearer: token, body: { old_password: 'bob-password', new_password: 'new-password-123' } }), { status: 429, json: { code: 'rate-limited' } });
  t.match(await s.call('POST', '/api/auth/2fa/disable', { bearer: token, body: { password: 'bob-password', code: '123456' } }), { status: 429, json: { code: 'rate-limited' } });
  t.equal((await s.call('PUT', '/api/auth/profile', { bearer: token, body: { display_name: 'Bob' } })).status, 200, 'a profile change without a password is no attempt');
});

await t.test('2FA disable: one answer for a wrong password and a wrong code, and the same lockout', async (t) => {
  const s = await adminStand(t, { distinctClients: true });
  const token = (await s.login('alice', 'alice-password')).json.access_token as string;
  const setup = await s.call('POST', '/api/auth/2fa/setup', { bearer: token });
  const totp = OTPAuth.URI.parse(setup.json.otpauth_uri) as OTPAuth.TOTP;
  t.equal((await s.call('POST', '/api/auth/2fa/verify', { bearer: token, body: { code: totp.generate({ timestamp: s.clock.now }) } })).status, 200);
  s.clock.now += 30_000;
  const disable = (password: string, code: string) => s.call('POST', '/api/auth/2fa/disable', { bearer: token, body: { password, code } });
  const wrongPassword = await disable('not-her-password', totp.generate({ timestamp: s.clock.now }));
  const wrongCode = await disable('alice-password', totp.generate({ timestamp: s.clock.now - 10 * 60_000 }));
  t.equal(wrongPassword.status, 400);
  t.same(wrongCode, { ...wrongCode, status: wrongPassword.status, json: wrongPassword.json }, 'a right password with a wrong code answers exactly as a wrong password');
  t.equal(loadUsers(s.paths).find((u) => u.username === 'alice')!.totp_enabled, true, '2FA stays on');
  for (let i = 0; i < 8; i++) await disable(`guess-${i}`, '000000');
  t.match(await disable('alice-password', totp.generate({ timestamp: s.clock.now })), { status: 429, json: { code: 'account-locked' } }, 'ten failures lock the account, the right pair included');
  t.equal(loadUsers(s.paths).find((u) => u.username === 'alice')!.totp_enabled, true, '2FA still on');
});
