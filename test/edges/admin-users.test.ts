import t from 'tap';
import { readFileSync } from 'node:fs';
import { totpCode, verifyPassword } from '../../actors/index.js';
import { AUDIT_EVENTS, USER_EVENTS } from '../../schemas/index.js';
import { loadUsers } from '../../store/index.js';
import { adminStand } from '../fixtures/admin-auth-stand.js';

const row = (s: { paths: Parameters<typeof loadUsers>[0] }, name: string) => loadUsers(s.paths).find((u) => u.username === name);

await t.test('TOTP: setup, verify, login in two steps, a code is good once, disable with code and password', async (t) => {
  const s = await adminStand(t, { distinctClients: true });
  const token = (await s.login('alice', 'alice-password')).json.access_token;
  const setup = await s.call('POST', '/api/auth/2fa/setup', { bearer: token });
  t.equal(setup.status, 200);
  const { secret, otpauth_uri, qr_data } = setup.json;
  t.match(secret, /^[A-Z2-7]{32}$/);
  t.match(otpauth_uri, /^otpauth:\/\/totp\/svc:alice\?/);
  t.match(qr_data, /^data:image\/png;base64,/, 'qr_data is an image the panel can show');
  const png = Buffer.from(qr_data.slice('data:image/png;base64,'.length), 'base64');
  t.same([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'a real PNG');
  t.ok(png.readUInt32BE(16) >= 150 && png.readUInt32BE(16) === png.readUInt32BE(20), 'square and large enough to scan');
  t.equal(row(s, 'alice')!.totp_enabled, false, 'not on until a code proves the app has it');
  t.equal((await s.call('POST', '/api/auth/2fa/verify', { bearer: token, body: { code: '000000' } })).json.code, 'invalid-totp');
  const verify = await s.call('POST', '/api/auth/2fa/verify', { bearer: token, body: { code: totpCode(secret, s.clock.now) } });
  t.same(verify.json, { status: 'enabled', totp_enabled: true });
  t.equal((await s.call('POST', '/api/auth/2fa/setup', { bearer: token })).json.code, 'totp-state', 'set up twice');
  t.notOk(JSON.stringify(s.log.read()).includes(secret), 'the secret is in no fact');
  t.notOk((await s.call('GET', '/api/users', { bearer: token })).json.some((u: object) => 'totp_secret' in u), 'nor in the users list');

  s.clock.now += 30_000;
  const first = await s.login('alice', 'alice-password');
  t.same(Object.keys(first.json).sort(), ['requires_2fa', 'temp_token']);
  t.equal(first.cookies.length, 0, 'no session before the second step');
  t.equal((await s.call('GET', '/api/auth/me', { bearer: first.json.temp_token })).status, 401, 'the temp token is no access token');
  const code = totpCode(secret, s.clock.now);
  const done = await s.call('POST', '/api/auth/2fa/login', { body: { temp_token: first.json.temp_token, code } });
  t.equal(done.status, 200);
  t.equal(done.json.user.totp_enabled, true);
  t.equal(done.cookies.length, 4, 'access, refresh, sygen_csrf, svc_csrf');
  t.ok(s.log.read().some((e) => e.type === USER_EVENTS.updated && (e.data as { fields: string[] }).fields.includes('totp_last_step')), 'the accepted step is a users.json change like any other: a fact');

  const second = await s.login('alice', 'alice-password');
  const replay = await s.call('POST', '/api/auth/2fa/login', { body: { temp_token: second.json.temp_token, code } });
  t.equal(replay.status, 401, 'the same code again is refused');
  t.equal((await s.call('POST', '/api/auth/2fa/login', { body: { temp_token: second.json.temp_token, code: totpCode(secret, s.clock.now - 30_000) } })).status, 401, 'and an older one');
  s.clock.now += 30_000;
  t.equal((await s.call('POST', '/api/auth/2fa/login', { body: { temp_token: second.json.temp_token, code: totpCode(secret, s.clock.now) } })).status, 200, 'the next step works');
  s.clock.now += 5 * 60_000;
  t.equal((await s.call('POST', '/api/auth/2fa/login', { body: { temp_token: second.json.temp_token, code: totpCode(secret, s.clock.now) } })).status, 401, 'the temp token expires');

  const fresh = done.json.access_token;
  s.clock.now = s.clock.now - 5 * 60_000 + 30_000;
  t.equal((await s.call('POST', '/api/auth/2fa/disable', { bearer: fresh, body: { code: totpCode(secret, s.clock.now), password: 'wrong' } })).status, 400);
  t.equal(row(s, 'alice')!.totp_enabled, true, 'a wrong password changes nothing');
  const off = await s.call('POST', '/api/auth/2fa/disable', { bearer: fresh, body: { code: totpCode(secret, s.clock.now), password: 'alice-password' } });
  t.same(off.json, { status: 'disabled', totp_enabled: false });
  t.match(row(s, 'alice'), { totp_enabled: false, totp_secret: null });
  t.equal((await s.login('alice', 'alice-password')).json.user.username, 'alice', 'one-step login again');
  t.equal((await s.call('POST', '/api/auth/2fa/setup', { bearer: 'static-api-token-0123456789' })).json.code, 'legacy-admin');
});

await t.test('profile: display name, avatar, password change needs the old one and ends other sessions', async (t) => {
  const s = await adminStand(t, { distinctClients: true });
  const token = (await s.login('bob', 'bob-password')).json.access_token;
  const r = await s.call('PUT', '/api/auth/profile', { bearer: token, body: { display_name: 'Bob B', avatar: 'bob.png' } });
  t.match(r.json, { username: 'bob', display_name: 'Bob B', avatar: 'bob.png' });
  t.match((await s.call('PUT', '/api/auth/profile', { bearer: token, body: { new_password: 'bob-new-password' } })).json.error, /old_password/);
  t.match((await s.call('PUT', '/api/auth/profile', { bearer: token, body: { old_password: 'wrong', new_password: 'bob-new-password' } })).json.error, /old_password/);
  t.match((await s.call('PUT', '/api/auth/profile', { bearer: token, body: { old_password: 'bob-password', new_password: 'short' } })).json.error, /new_password: at least 8/);
  t.equal(row(s, 'bob')!.token_version, 0, 'refused changes changed nothing');
  t.equal((await s.call('PUT', '/api/auth/profile', { bearer: token, body: { old_password: 'bob-password', new_password: 'bob-new-password' } })).status, 200);
  t.equal(row(s, 'bob')!.token_version, 1);
  t.ok(await verifyPassword('bob-new-password', row(s, 'bob')!.password_hash));
  t.equal((await s.call('GET', '/api/auth/me', { bearer: token })).status, 401);
  const updates = s.log.read().filter((e) => e.type === USER_EVENTS.updated).map((e) => (e.data as { fields: string[] }).fields);
  t.same(updates, [['display_name', 'avatar'], ['password']]);
  t.notOk(JSON.stringify(s.log.read()).includes('bob-new-password'));
});

await t.test('users CRUD: admin only, UserInfo rows, field-named errors, last active admin kept', async (t) => {
  const s = await adminStand(t, { distinctClients: true });
  const admin = (await s.login('alice', 'alice-password')).json.access_token;
  const viewer = (await s.login('bob', 'bob-password')).json.access_token;
  const list = await s.call('GET', '/api/users', { bearer: admin });
  t.same(list.json.map((u: { username: string }) => u.username), ['alice', 'bob']);
  t.notOk(JSON.stringify(list.json).includes('scrypt'), 'no hash');
  t.same(Object.keys(list.json[0]).sort(), ['active', 'allowed_agents', 'avatar', 'created_at', 'display_name', 'role', 'telegram_user_ids', 'totp_enabled', 'username']);

  for (const [method, path, body] of [['GET', '/api/users', undefined], ['POST', '/api/users', { username: 'x', password: 'xxxxxxxx', role: 'viewer' }], ['PUT', '/api/users/bob', { role: 'admin' }], ['DELETE', '/api/users/alice', undefined]] as const) {
    const r = await s.call(method, path, { bearer: viewer, ...(body ? { body } : {}) });
    t.equal(r.status, 403, `viewer: ${method} ${path}`);
  }

  const created = await s.call('POST', '/api/users', { bearer: admin, body: { username: 'carol', password: 'carol-password', role: 'operator', allowed_agents: ['main'], telegram_user_ids: [42] } });
  t.equal(created.status, 201);
  t.match(created.json, { username: 'carol', role: 'operator', allowed_agents: ['main'], telegram_user_ids: [42], active: true, totp_enabled: false });
  t.equal((await s.login('carol', 'carol-password')).status, 200);
  t.equal((await s.call('POST', '/api/users', { bearer: admin, body: { username: 'carol', password: 'carol-password', role: 'viewer' } })).json.code, 'user-exists');

  const before = readFileSync(s.paths.usersFile, 'utf8');
  const bad: [unknown, RegExp][] = [
    [{ username: 'dave', password: 'short', role: 'viewer' }, /body\.password/],
    [{ username: 'dave', password: 'dave-password', role: 'root' }, /body\.role/],
    [{ username: '../dave', password: 'dave-password', role: 'viewer' }, /body\.username/],
    [{ username: 'dave', password: 'dave-password', role: 'viewer', password_hash: 'x' }, /password_hash/],
    [{ username: 'dave', password: 'dave-password', role: 'viewer', telegram_user_ids: ['1'] }, /body\.telegram_user_ids/],
  ];
  for (const [body, msg] of bad) {
    const r = await s.call('POST', '/api/users', { bearer: admin, body });
    t.equal(r.status, 400);
    t.match(r.json.error, msg);
  }
  t.equal((await s.call('PUT', '/api/users/carol', { bearer: admin, body: { token_version: 0 } })).status, 400, 'token state is not writable');
  t.equal((await s.call('PUT', '/api/users/carol', { bearer: admin, body: { totp_enabled: true } })).status, 400, '2FA can only be turned off for someone');
  t.equal((await s.call('PUT', '/api/users/nobody', { bearer: admin, body: { role: 'viewer' } })).status, 404);
  t.equal((await s.call('PUT', '/api/users/carol', { bearer: admin, raw: 'x'.repeat(20_000) })).status, 413);
  t.equal((await s.call('PUT', '/api/users/alice', { bearer: admin, body: { role: 'viewer' } })).json.code, 'last-admin');
  t.equal((await s.call('PUT', '/api/users/alice', { bearer: admin, body: { active: false } })).json.code, 'last-admin');
  t.equal((await s.call('DELETE', '/api/users/alice', { bearer: admin })).json.code, 'last-admin');
  t.equal(readFileSync(s.paths.usersFile, 'utf8'), before, 'nothing refused changed the file');

  const promoted = await s.call('PUT', '/api/users/carol', { bearer: admin, body: { role: 'admin', display_name: 'Carol' } });
  t.match(promoted.json, { role: 'admin', display_name: 'Carol' });
  t.same((await s.call('DELETE', '/api/users/alice', { bearer: admin })).json, { username: 'alice', deleted: true }, 'another admin is left, so alice may go');
  t.equal((await s.call('GET', '/api/auth/me', { bearer: admin })).status, 401, 'and her token dies with her row');
  t.notOk(row(s, 'alice'));
  const events = s.log.read();
  t.same(events.filter((e) => e.type.startsWith('user.')).map((e) => e.type), [USER_EVENTS.created, USER_EVENTS.updated, USER_EVENTS.deleted]);
  t.ok(events.filter((e) => e.type === AUDIT_EVENTS.recorded).some((e) => (e.data as { action: string; target: string }).action === 'DELETE /api/users/:username' && (e.data as { target: string }).target === 'alice'));
});
