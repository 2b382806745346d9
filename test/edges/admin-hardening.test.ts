// What a security review of the admin API found, each as the request that exploited it: a
// restricted admin cannot widen its own reach, a deleted or disabled account keeps no session, one
// refresh token rotates once, a right password does not reset the count that limits guessing the
// 2FA code, and every address of this machine is one client to the login limit.
import t from 'tap';
import { totpCode } from '../../actors/index.js';
import { LoginRateLimit, attemptLimitKey } from '../../edges/index.js';
import { homePaths, loadUsers, makeUserDir, removeUserFile } from '../../store/index.js';
import { adminStand, userRow } from '../fixtures/admin-auth-stand.js';

await t.test('an admin limited by allowed_agents manages no users (it could lift its own limit)', async (t) => {
  const s = await adminStand(t, { distinctClients: true, users: [await userRow('root', 'admin', 'root-password'), await userRow('ria', 'admin', 'ria-password', { allowed_agents: ['a'] })] });
  const ria = (await s.login('ria', 'ria-password')).json.access_token as string;
  const before = JSON.stringify(loadUsers(s.paths));
  for (const [method, path, body] of [
    ['PUT', '/api/users/ria', { allowed_agents: [] }],
    ['POST', '/api/users', { username: 'x', password: 'xxxxxxxx', role: 'admin' }],
    ['PUT', '/api/users/root', { password: 'taken-over-now' }],
    ['DELETE', '/api/users/root', undefined],
  ] as const) {
    const r = await s.call(method, path, { bearer: ria, ...(body ? { body } : {}) });
    t.equal(r.status, 403, `${method} ${path}`);
  }
  t.equal(JSON.stringify(loadUsers(s.paths)), before, 'users.json unchanged');
  const root = (await s.login('root', 'root-password')).json.access_token as string;
  t.equal((await s.call('PUT', '/api/users/ria', { bearer: root, body: { display_name: 'Ria' } })).status, 200, 'an unrestricted admin still can');
});

await t.test('a deleted user recreated under the same name does not inherit its sessions; a disabled one loses them', async (t) => {
  const s = await adminStand(t, { distinctClients: true, users: [await userRow('root', 'admin', 'root-password'), await userRow('bob', 'operator', 'bob-password')] });
  const root = (await s.login('root', 'root-password')).json.access_token as string;
  const old = (await s.login('bob', 'bob-password')).json as { access_token: string; refresh_token: string };
  t.equal((await s.call('DELETE', '/api/users/bob', { bearer: root })).status, 200);
  t.equal((await s.call('POST', '/api/users', { bearer: root, body: { username: 'bob', password: 'new-bob-password', role: 'admin' } })).status, 201);
  t.equal((await s.call('GET', '/api/auth/me', { bearer: old.access_token })).status, 401, 'the old access token');
  t.equal((await s.call('POST', '/api/auth/refresh', { body: { refresh_token: old.refresh_token } })).status, 401, 'the old refresh token');

  const fresh = (await s.login('bob', 'new-bob-password')).json as { access_token: string; refresh_token: string };
  t.equal((await s.call('PUT', '/api/users/bob', { bearer: root, body: { active: false } })).status, 200);
  t.equal((await s.call('PUT', '/api/users/bob', { bearer: root, body: { active: true } })).status, 200);
  t.equal((await s.call('GET', '/api/auth/me', { bearer: fresh.access_token })).status, 401, 'reactivating does not revive the access token');
  t.equal((await s.call('POST', '/api/auth/refresh', { body: { refresh_token: fresh.refresh_token } })).status, 401, 'nor the refresh token');
});

await t.test('two refreshes with one token: one rotates it, the other is refused', async (t) => {
  const s = await adminStand(t, { distinctClients: true });
  const { refresh_token } = (await s.login('alice', 'alice-password')).json as { refresh_token: string };
  const both = await Promise.all([1, 2].map(() => s.call('POST', '/api/auth/refresh', { body: { refresh_token } })));
  t.same(both.map((r) => r.status).sort(), [200, 401]);
});

await t.test('the password step of a 2FA login does not reset the failures that lock the account', async (t) => {
  const s = await adminStand(t, { distinctClients: true });
  const token = (await s.login('alice', 'alice-password')).json.access_token as string;
  const { secret } = (await s.call('POST', '/api/auth/2fa/setup', { bearer: token })).json as { secret: string };
  await s.call('POST', '/api/auth/2fa/verify', { bearer: token, body: { code: totpCode(secret, s.clock.now) } });
  let locked = false;
  for (let round = 0; round < 12 && !locked; round++) {
    const first = await s.login('alice', 'alice-password');
    if (first.status === 429) {
      locked = true;
      break;
    }
    const wrong = await s.call('POST', '/api/auth/2fa/login', { body: { temp_token: first.json.temp_token, code: '000000' } });
    if (wrong.status === 429) locked = true;
  }
  t.ok(locked, 'wrong codes lock the account although the password keeps being right');
});

await t.test('every address of this machine, and every address of one IPv6 /64, is one client to the login limit', async (t) => {
  t.equal(attemptLimitKey('127.0.0.1'), attemptLimitKey('127.200.3.4'));
  t.equal(attemptLimitKey('::ffff:127.0.0.9'), attemptLimitKey('127.0.0.1'));
  t.equal(attemptLimitKey('0000:0000:0000:0000:0000:ffff:7f00:0009'), attemptLimitKey('127.0.0.1'), 'as a dual-stack listener reports it');
  t.equal(attemptLimitKey('::1'), attemptLimitKey('127.0.0.1'), 'IPv6 loopback too');
  t.not(attemptLimitKey('0000:0000:0000:0000:0000:ffff:c0a8:0001'), attemptLimitKey('0000:0000:0000:0000:0000:ffff:c0a8:0002'), 'IPv4 clients on a dual-stack listener are not one /64');
  t.equal(attemptLimitKey('2001:db8:0:1::5'), attemptLimitKey('2001:db8:0:1:ffff::9'));
  t.not(attemptLimitKey('2001:db8:0:1::5'), attemptLimitKey('2001:db8:0:2::5'));
  t.not(attemptLimitKey('10.0.0.1'), attemptLimitKey('10.0.0.2'));
  const limit = new LoginRateLimit(() => 0);
  const waits = Array.from({ length: 6 }, (_, i) => limit.attempt(`127.0.0.${i + 1}`));
  t.same(waits.map((w) => w > 0), [false, false, false, false, false, true]);
});

await t.test("the file manager does not touch the CLIs' settings folders (the sandbox hook lives in .claude/)", async (t) => {
  const paths = homePaths(t.testdir());
  for (const p of ['.claude/hooks/sandbox_hook.py', '.claude', 'x/.CODEX/config.toml', '.gemini/settings.json']) {
    await t.rejects(removeUserFile(paths, 'main', p), { code: 'forbidden' }, `delete ${p}`);
    await t.rejects(makeUserDir(paths, 'main', p), { code: 'forbidden' }, `mkdir ${p}`);
  }
});
