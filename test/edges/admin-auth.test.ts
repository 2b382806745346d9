import t from 'tap';
import { readFileSync, statSync } from 'node:fs';
import { SignJWT } from 'jose';
import { principalFromAccessToken } from '../../edges/index.js';
import { AUDIT_EVENTS, USER_EVENTS } from '../../schemas/index.js';
import { loadUsers, saveUsers } from '../../store/index.js';
import { API_TOKEN, JWT_SECRET, T0, adminStand, cookieHeader, cookieJar, userRow, parseUsers } from '../fixtures/admin-auth-stand.js';

const key = new TextEncoder().encode(JWT_SECRET);
const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');

await t.test('login: tokens, UserInfo, cookies; me by bearer and by cookie; wrong name and wrong password look alike', async (t) => {
  const s = await adminStand(t);
  const r = await s.login('alice', 'alice-password');
  t.equal(r.status, 200);
  t.match(r.json, { token_type: 'bearer', expires_in: 900, user: { username: 'alice', role: 'admin', display_name: '', allowed_agents: [], telegram_user_ids: [], active: true, created_at: T0 / 1000, totp_enabled: false, avatar: null } });
  t.same(Object.keys(r.json.user).sort(), ['active', 'allowed_agents', 'avatar', 'created_at', 'display_name', 'role', 'telegram_user_ids', 'totp_enabled', 'username']);
  t.type(r.json.access_token, 'string');
  t.not(r.json.access_token, r.json.refresh_token);
  const [access, refresh, csrf, csrfAlias] = r.cookies;
  t.match(access, /^svc_access=[^;]+; Path=\/; Max-Age=900; SameSite=Lax; HttpOnly$/);
  t.match(refresh, /^svc_refresh=[^;]+; Path=\/; Max-Age=2592000; SameSite=Lax; HttpOnly$/);
  t.match(csrf, /^sygen_csrf=[A-Za-z0-9_-]{32}; Path=\/; Max-Age=2592000; SameSite=Lax$/, 'the CSRF cookie is readable by the page, under the name the panel reads');
  t.equal(csrfAlias, csrf!.replace(/^sygen_csrf=/, 'svc_csrf='), 'svc_csrf beside it, the same value');

  t.match((await s.call('GET', '/api/auth/me', { bearer: r.json.access_token })).json, { username: 'alice', role: 'admin' });
  const jar = cookieJar(r.cookies);
  t.match((await s.call('GET', '/api/auth/me', { headers: { cookie: cookieHeader(jar) } })).json, { username: 'alice' });
  t.equal((await s.call('GET', '/api/auth/me')).status, 401);

  const wrongPassword = await s.login('alice', 'nope-nope');
  const noSuchUser = await s.login('mallory', 'nope-nope');
  t.equal(wrongPassword.status, 401);
  t.same(noSuchUser, { ...noSuchUser, status: 401, json: wrongPassword.json }, 'the same answer whether the name exists or not');
  t.same(wrongPassword.json, { error: 'wrong username or password', code: 'invalid-credentials' });

  const events = s.log.read();
  t.ok(events.some((e) => e.type === AUDIT_EVENTS.recorded && (e.data as { action: string }).action === 'auth.login'), 'login audited');
  t.equal(events.filter((e) => e.type === AUDIT_EVENTS.recorded && (e.data as { action: string }).action === 'auth.login_failed').length, 2, 'failures audited');
  const text = JSON.stringify(events);
  for (const secret of ['alice-password', 'nope-nope', r.json.access_token, r.json.refresh_token, 'scrypt$']) t.notOk(text.includes(secret), 'no secret in any fact');
  t.equal(statSync(s.paths.refreshTokensFile).mode & 0o777, 0o600);
  t.notOk(readFileSync(s.paths.refreshTokensFile, 'utf8').includes(r.json.refresh_token.split('.')[1]), 'refresh state holds hashes, not tokens');
});

await t.test('bad access tokens are refused: alg none, another alg, expired, wrong typ, tampered, wrong secret', async (t) => {
  const s = await adminStand(t);
  const good = (await s.login('alice', 'alice-password')).json;
  const [h, p, sig] = good.access_token.split('.');
  const claims = JSON.parse(Buffer.from(p, 'base64url').toString());
  const me = (token: string) => s.call('GET', '/api/auth/me', { bearer: token }).then((r) => r.status);
  t.equal(await me(good.access_token), 200);
  t.equal(await me(`${b64({ alg: 'none', typ: 'JWT' })}.${p}.`), 401, 'alg none');
  t.equal(await me(await new SignJWT(claims).setProtectedHeader({ alg: 'HS384' }).sign(key)), 401, 'HS384 with the right secret');
  t.equal(await me(await new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).sign(new TextEncoder().encode('another-secret-another-secret-another'))), 401, 'wrong secret');
  t.equal(await me(`${h}.${b64({ ...claims, role: 'admin', sub: 'bob' })}.${sig}`), 401, 'tampered payload');
  t.equal(await me(good.refresh_token), 401, 'a refresh token is not an access token');
  t.equal(await me(await new SignJWT({ ...claims, typ: 'refresh' }).setProtectedHeader({ alg: 'HS256' }).sign(key)), 401, 'typ refresh');
  t.equal(await me(await new SignJWT({ ...claims, exp: undefined, typ: undefined }).setProtectedHeader({ alg: 'HS256' }).setExpirationTime(claims.exp).sign(key)), 401, 'no typ');
  s.clock.now = T0 + 15 * 60_000 + 1000;
  t.equal(await me(good.access_token), 401, 'expired');
  // The exported check the admin socket reuses says the same.
  s.clock.now = T0;
  const deps = { config: () => ({ api: { jwt_secret: JWT_SECRET, token: API_TOKEN } }) as never, users: () => loadUsers(s.paths), clock: () => s.clock.now };
  t.match(await principalFromAccessToken(good.access_token, deps), { kind: 'user', id: 'alice', role: 'admin', origin: { transport: 'admin' } });
  t.equal(await principalFromAccessToken(`${h}.${p}.`, deps), null);
  t.equal(await principalFromAccessToken('x'.repeat(10_000), deps), null);
});

await t.test('refresh rotates; a rotated token coming back revokes the family; logout revokes; state survives a restart', async (t) => {
  const s = await adminStand(t);
  const first = (await s.login('alice', 'alice-password')).json;
  const refresh = (token: string) => s.call('POST', '/api/auth/refresh', { body: { refresh_token: token } });
  s.clock.now += 1000;
  const second = await refresh(first.refresh_token);
  t.equal(second.status, 200);
  t.not(second.json.refresh_token, first.refresh_token);
  t.equal(second.cookies.length, 4, 'cookies renewed: access, refresh, sygen_csrf, svc_csrf');

  s.restartDirectory();
  s.clock.now += 1000;
  const third = await refresh(second.json.refresh_token);
  t.equal(third.status, 200, 'a restart keeps the family');

  const reuse = await refresh(first.refresh_token);
  t.equal(reuse.status, 401, 'the rotated token is refused');
  t.equal((await refresh(third.json.refresh_token)).status, 401, 'and its reuse ended the whole family');
  t.ok(s.log.read().some((e) => e.type === AUDIT_EVENTS.recorded && (e.data as { action: string }).action === 'auth.refresh_reuse'));

  // Another login is another family: logout ends it, and a restart does not bring it back.
  const other = (await s.login('alice', 'alice-password')).json;
  const out = await s.call('POST', '/api/auth/logout', { body: { refresh_token: other.refresh_token } });
  t.equal(out.status, 200);
  t.ok(out.cookies.every((c) => /Max-Age=0/.test(c)), 'cookies cleared');
  s.restartDirectory();
  t.equal((await refresh(other.refresh_token)).status, 401, 'logged out stays logged out');
  t.equal((await refresh('not-a-token')).status, 401);
  t.equal((await s.call('POST', '/api/auth/refresh', { body: {} })).status, 401);
});

await t.test('refresh re-reads the row: new role, inactive user refused everywhere, token_version bump ends old tokens', async (t) => {
  const s = await adminStand(t);
  const bob = (await s.login('bob', 'bob-password')).json;
  t.equal(bob.user.role, 'viewer');
  const rows = loadUsers(s.paths);
  rows.find((u) => u.username === 'bob')!.role = 'operator';
  saveUsers(s.paths, rows);
  const again = await s.call('POST', '/api/auth/refresh', { body: { refresh_token: bob.refresh_token } });
  t.equal(again.json.user.role, 'operator');

  const admin = (await s.login('alice', 'alice-password')).json;
  t.equal((await s.call('PUT', '/api/users/bob', { bearer: admin.access_token, body: { active: false } })).status, 200);
  t.equal((await s.call('GET', '/api/auth/me', { bearer: again.json.access_token })).status, 401, 'an unexpired access token of an inactive user');
  t.equal((await s.call('POST', '/api/auth/refresh', { body: { refresh_token: again.json.refresh_token } })).status, 401, 'refresh of an inactive user');
  t.equal((await s.login('bob', 'bob-password')).status, 401, 'login of an inactive user');
  t.same((await s.login('bob', 'bob-password')).json.code, 'invalid-credentials', 'indistinguishable from a wrong password');
  t.equal((await s.call('PUT', '/api/users/bob', { bearer: admin.access_token, body: { active: true, password: 'bob-new-password' } })).status, 200);
  t.equal((await s.call('GET', '/api/auth/me', { bearer: again.json.access_token })).status, 401, 'a password reset ends the sessions before it');
  const fresh = await s.login('bob', 'bob-new-password');
  t.equal(fresh.status, 200);
  t.equal(loadUsers(s.paths).find((u) => u.username === 'bob')!.token_version, 2, 'bumped by the deactivation and by the reset');
});

await t.test('cookie sessions need the CSRF header on writes; bearer requests do not', async (t) => {
  const s = await adminStand(t);
  const r = await s.login('alice', 'alice-password');
  const jar = cookieJar(r.cookies);
  const cookie = cookieHeader(jar);
  const ackAt = () => loadUsers(s.paths).find((u) => u.username === 'alice')!.errors_ack_at;
  const missing = await s.call('POST', '/api/dashboard/errors/ack', { headers: { cookie } });
  t.equal(missing.status, 403);
  t.equal(missing.json.code, 'csrf-failed');
  t.equal((await s.call('POST', '/api/dashboard/errors/ack', { headers: { cookie, 'x-csrf-token': 'guess' } })).status, 403);
  t.equal((await s.call('POST', '/api/dashboard/errors/ack', { headers: { cookie: `svc_access=${jar.svc_access}`, 'x-csrf-token': '' } })).status, 403, 'no csrf cookie at all');
  t.equal(ackAt(), null, 'nothing changed');
  t.equal((await s.call('GET', '/api/auth/me', { headers: { cookie } })).status, 200, 'reads need no header');
  s.clock.now += 5000;
  const ok = await s.call('POST', '/api/dashboard/errors/ack', { headers: { cookie, 'x-csrf-token': jar.svc_csrf! } });
  t.same(ok.json, { ok: true, ack_at: (T0 + 5000) / 1000 });
  t.equal(ackAt(), (T0 + 5000) / 1000);
  s.clock.now += 5000;
  t.equal((await s.call('POST', '/api/dashboard/errors/ack', { bearer: r.json.access_token })).status, 200, 'bearer: no CSRF needed');
  // Refresh and logout by cookie carry the same proof.
  t.equal((await s.call('POST', '/api/auth/refresh', { headers: { cookie } })).status, 403);
  t.equal((await s.call('POST', '/api/auth/refresh', { headers: { cookie, 'x-csrf-token': jar.svc_csrf! } })).status, 200);
});

await t.test('the static api.token is the legacy admin: me, token login, 400 on errors-ack, dies with the token', async (t) => {
  const s = await adminStand(t);
  t.match((await s.call('GET', '/api/auth/me', { bearer: API_TOKEN })).json, { username: 'api-token', role: 'admin' });
  const ack = await s.call('POST', '/api/dashboard/errors/ack', { bearer: API_TOKEN });
  t.equal(ack.status, 400);
  t.equal(ack.json.code, 'legacy-admin');
  t.equal((await s.call('POST', '/api/auth/login', { body: { token: 'wrong' } })).status, 401);
  const pair = await s.call('POST', '/api/auth/login', { body: { token: API_TOKEN } });
  t.equal(pair.status, 200);
  t.equal((await s.call('GET', '/api/users', { bearer: pair.json.access_token })).status, 200, 'its JWT acts as admin');
  const refreshed = await s.call('POST', '/api/auth/refresh', { body: { refresh_token: pair.json.refresh_token } });
  t.equal(refreshed.status, 200);
  s.setConfig({ token: 'another-static-token-0123' });
  t.equal((await s.call('GET', '/api/users', { bearer: refreshed.json.access_token })).status, 401, 'a new api.token ends its sessions');
  t.equal((await s.call('POST', '/api/auth/refresh', { body: { refresh_token: refreshed.json.refresh_token } })).status, 401);
});

await t.test('5 login attempts per minute per IP, then 429; X-Forwarded-For only from a trusted proxy', async (t) => {
  const s = await adminStand(t);
  for (let i = 0; i < 5; i++) t.not((await s.login('alice', i === 4 ? 'alice-password' : 'wrong-pass')).status, 429);
  const over = await s.login('alice', 'alice-password');
  t.equal(over.status, 429);
  t.equal(over.json.code, 'rate-limited');
  t.equal(over.headers.get('retry-after'), '60');
  t.equal((await s.login('alice', 'alice-password', { 'x-forwarded-for': '203.0.113.9' })).status, 429, 'a forged X-Forwarded-For changes nothing');
  t.equal((await s.call('POST', '/api/auth/2fa/login', { body: { temp_token: 'x', code: '123456' } })).status, 429, 'the 2FA step counts too');
  s.clock.now += 60_000;
  t.equal((await s.login('alice', 'alice-password')).status, 200, 'the window slides');

  s.setConfig({ trusted_proxies: ['127.0.0.1'] });
  s.clock.now += 60_000;
  for (let i = 0; i < 5; i++) await s.login('alice', 'wrong-pass', { 'x-forwarded-for': '203.0.113.1' });
  t.equal((await s.login('alice', 'alice-password', { 'x-forwarded-for': '203.0.113.1' })).status, 429, 'the forwarded client is limited');
  t.equal((await s.login('alice', 'alice-password', { 'x-forwarded-for': '203.0.113.2' })).status, 200, 'another client behind the proxy is not');
});

await t.test('per-account lockout after 10 failures in 15 min, for any name; lifted after 15 min', async (t) => {
  const s = await adminStand(t, { config: { trusted_proxies: ['127.0.0.1'] } });
  // Ten addresses, so the per-IP limit is never what stops them.
  for (let i = 0; i < 10; i++) {
    t.equal((await s.login('alice', 'wrong-pass', { 'x-forwarded-for': `198.51.100.${i}` })).status, 401);
    t.equal((await s.login('ghost', 'wrong-pass', { 'x-forwarded-for': `198.51.100.${i}` })).status, 401);
  }
  const locked = await s.login('alice', 'alice-password', { 'x-forwarded-for': '198.51.100.200' });
  t.equal(locked.status, 429);
  t.equal(locked.json.code, 'account-locked');
  const ghost = await s.login('ghost', 'whatever', { 'x-forwarded-for': '198.51.100.201' });
  t.same(ghost.json, locked.json, 'an unknown name locks the same way: no hint that alice exists');
  t.equal((await s.login('bob', 'bob-password', { 'x-forwarded-for': '198.51.100.202' })).status, 200, 'other accounts are unaffected');
  s.clock.now += 15 * 60_000;
  t.equal((await s.login('alice', 'alice-password', { 'x-forwarded-for': '198.51.100.203' })).status, 200);
});

await t.test('CORS: only api.cors_origins, with credentials; preflight answered', async (t) => {
  const s = await adminStand(t, { config: { cors_origins: ['https://panel.example'] } });
  const pre = await s.call('OPTIONS', '/api/auth/login', { headers: { origin: 'https://panel.example', 'access-control-request-method': 'POST' } });
  t.equal(pre.status, 204);
  t.equal(pre.headers.get('access-control-allow-origin'), 'https://panel.example');
  t.equal(pre.headers.get('access-control-allow-credentials'), 'true');
  t.equal(pre.headers.get('access-control-allow-methods'), 'GET, POST, PUT, DELETE');
  t.equal(pre.headers.get('access-control-allow-headers'), 'Content-Type, Accept-Language, X-CSRF-Token, Authorization');
  const evil = await s.call('OPTIONS', '/api/auth/login', { headers: { origin: 'https://panel.example.evil', 'access-control-request-method': 'POST' } });
  t.equal(evil.status, 403);
  t.equal(evil.headers.get('access-control-allow-origin'), null);
  t.equal((await s.call('GET', '/api/auth/me', { bearer: API_TOKEN, headers: { origin: 'https://panel.example' } })).headers.get('access-control-allow-origin'), 'https://panel.example');
  t.equal((await s.call('GET', '/api/auth/me', { bearer: API_TOKEN, headers: { origin: 'http://panel.example' } })).headers.get('access-control-allow-origin'), null, 'exact origin only');
});

await t.test('malformed, oversized and unknown-field bodies: a clear 4xx, nothing changed', async (t) => {
  const s = await adminStand(t);
  const before = readFileSync(s.paths.usersFile, 'utf8');
  const cases: [unknown, number, RegExp][] = [
    [{ username: 'alice' }, 400, /body\.password/],
    [{ username: 'alice', password: 'alice-password', role: 'admin' }, 400, /role/],
    [{ username: 5, password: 'x' }, 400, /body\.username/],
    [{ token: 'x', username: 'alice' }, 400, /username/],
    [[1, 2], 400, /body/],
  ];
  for (const [body, status, msg] of cases) {
    s.clock.now += 60_000;
    const r = await s.call('POST', '/api/auth/login', { body });
    t.equal(r.status, status, JSON.stringify(body));
    t.match(r.json.error, msg);
  }
  s.clock.now += 60_000;
  t.equal((await s.call('POST', '/api/auth/login', { raw: '{"username":', headers: { 'content-type': 'application/json' } })).json.code, 'invalid-json');
  t.equal((await s.call('POST', '/api/auth/login', { raw: JSON.stringify({ username: 'a', password: 'x'.repeat(20_000) }) })).status, 413);
  const admin = (await s.login('alice', 'alice-password')).json.access_token;
  t.equal((await s.call('PUT', '/api/auth/profile', { bearer: admin, body: { display_name: 'A', is_admin: true } })).status, 400);
  t.equal((await s.call('PUT', '/api/auth/profile', { bearer: admin, body: { avatar: '../../etc/passwd' } })).json.code, 'invalid-body');
  t.equal(readFileSync(s.paths.usersFile, 'utf8'), before);
  t.notOk(s.log.read().some((e) => e.type === USER_EVENTS.updated));
});

await t.test('a user whose row disappears or whose users.json is replaced is refused at once', async (t) => {
  const s = await adminStand(t);
  const token = (await s.login('bob', 'bob-password')).json.access_token;
  saveUsers(s.paths, parseUsers([await userRow('alice', 'admin', 'alice-password')]));
  t.equal((await s.call('GET', '/api/auth/me', { bearer: token })).status, 401);
});
