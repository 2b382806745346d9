// Issue 24 item 4: users.json is held in memory and reloaded by its watcher, not read per request.
// A hand edit is seen by the admin API without a restart (synchronised on the facts the watcher
// records), a malformed one keeps the last good users; and the verified-token cache never outlives
// what makes a token good (logout, password change, role change, deactivation, a new jwt_secret).
import t from 'tap';
import { renameSync, writeFileSync } from 'node:fs';
import { firstValueFrom, filter } from 'rxjs';
import { ACCESS_TTL_S, issueToken } from '../../actors/index.js';
import { ofType } from '../../bus/index.js';
import { TOKEN_TYPES, USER_EVENTS, type UserRecord } from '../../schemas/index.js';
import { loadUsers } from '../../store/index.js';
import { JWT_SECRET, T0, adminStand, userRow } from '../fixtures/admin-auth-stand.js';

type Stand = Awaited<ReturnType<typeof adminStand>>;

/** Rewrites users.json as an editor saves it (a temp file renamed over it), or in place. */
function handEdit(s: Stand, edit: (rows: UserRecord[]) => unknown, how: 'rename' | 'in-place' = 'rename') {
  const rows = loadUsers(s.paths);
  edit(rows);
  const text = JSON.stringify(rows, null, 2);
  if (how === 'in-place') {
    writeFileSync(s.paths.usersFile, text);
    return;
  }
  writeFileSync(`${s.paths.usersFile}.edit`, text);
  renameSync(`${s.paths.usersFile}.edit`, s.paths.usersFile);
}

/** The next fact of `type` about `username` (or any, for the file's own facts), subscribed before the edit that causes it. */
const nextFact = (s: Stand, type: string, username?: string) =>
  firstValueFrom(s.bus.events$.pipe(ofType(type as typeof USER_EVENTS.updated), filter((e) => username === undefined || (e.data as { username?: string }).username === username)));

await t.test('a hand edit of users.json (add, change role, remove) reaches the admin API without a restart', async (t) => {
  const s = await adminStand(t);
  const alice = (await s.login('alice', 'alice-password')).json.access_token as string;
  const bob = (await s.login('bob', 'bob-password')).json.access_token as string;
  const carol = (await issueToken(JWT_SECRET, T0, { typ: TOKEN_TYPES.access, sub: 'carol', tv: 0, role: 'operator', ttlS: ACCESS_TTL_S })).token;

  t.equal((await s.call('GET', '/api/auth/me', { bearer: carol })).status, 401, 'no carol yet: her well-signed token speaks for nobody');
  const created = nextFact(s, USER_EVENTS.created, 'carol');
  const carolRow = await userRow('carol', 'operator', 'carol-password');
  handEdit(s, (rows) => rows.push(carolRow as UserRecord));
  t.match((await created).data, { username: 'carol', role: 'operator', by: null }, 'the edit is recorded as the directory would have');
  t.match(await s.call('GET', '/api/auth/me', { bearer: carol }), { status: 200, json: { username: 'carol', role: 'operator' } }, 'the same token works once the watcher read the edit');
  t.ok((await s.call('GET', '/api/users', { bearer: alice })).json.some((u: { username: string }) => u.username === 'carol'), 'and the users list shows her');

  t.equal((await s.call('GET', '/api/users', { bearer: bob })).status, 403, 'bob is a viewer');
  const promoted = nextFact(s, USER_EVENTS.updated, 'bob');
  handEdit(s, (rows) => (rows.find((u) => u.username === 'bob')!.role = 'admin'), 'in-place');
  t.match((await promoted).data, { username: 'bob', fields: ['role'], by: null });
  t.equal((await s.call('GET', '/api/users', { bearer: bob })).status, 200, 'a promotion applies to the next request of a token already in use');
  t.equal((await s.call('GET', '/api/auth/me', { bearer: bob })).json.role, 'admin');

  const demoted = nextFact(s, USER_EVENTS.updated, 'bob');
  handEdit(s, (rows) => (rows.find((u) => u.username === 'bob')!.role = 'viewer'));
  await demoted;
  t.equal((await s.call('GET', '/api/users', { bearer: bob })).status, 403, 'and so does a demotion');

  const removed = nextFact(s, USER_EVENTS.deleted, 'bob');
  handEdit(s, (rows) => rows.splice(rows.findIndex((u) => u.username === 'bob'), 1));
  t.match((await removed).data, { username: 'bob', by: null });
  t.equal((await s.call('GET', '/api/auth/me', { bearer: bob })).status, 401, 'a removed user is refused at the next request');
  t.equal((await s.call('GET', '/api/auth/me', { bearer: alice })).status, 200, 'the others are untouched');
});

await t.test('a malformed hand edit keeps the last good users, is recorded and logged; the next good edit applies', async (t) => {
  const s = await adminStand(t);
  const bob = (await s.login('bob', 'bob-password')).json.access_token as string;
  const logs: string[] = [];
  const sub = s.bus.transient$.subscribe((m) => m.stream === 'log' && logs.push(String((m.data as { msg: string }).msg)));
  t.teardown(() => sub.unsubscribe());
  const { logConfigWarnings } = await import('../../actors/index.js');
  const warnings = logConfigWarnings(s.bus);
  t.teardown(() => warnings.unsubscribe());

  for (const [what, text, says] of [
    ['broken JSON', '[{"username": "alice", "role": ', /not valid JSON/],
    ['an unknown role', JSON.stringify([{ username: 'alice', role: 'emperor' }]), /role/],
    ['a duplicated name', JSON.stringify([{ username: 'alice', role: 'admin' }, { username: 'alice', role: 'viewer' }]), /unique usernames/],
  ] as const) {
    const rejected = nextFact(s, USER_EVENTS.file_rejected);
    writeFileSync(s.paths.usersFile, text);
    const fact = await rejected;
    t.equal((fact.data as unknown as { file: string }).file, s.paths.usersFile, `${what}: the fact names the file`);
    t.match((fact.data as unknown as { errors: string[] }).errors.join('; '), says, `${what}: and says what is wrong`);
    t.match(await s.call('GET', '/api/auth/me', { bearer: bob }), { status: 200, json: { username: 'bob', role: 'viewer' } }, `${what}: the last good users stay in force`);
    t.match(logs.at(-1), /edit rejected, the last good users and roles stay in force/, `${what}: a warning line says so`);
  }

  const fixed = nextFact(s, USER_EVENTS.deleted, 'bob');
  writeFileSync(s.paths.usersFile, JSON.stringify([{ username: 'alice', role: 'admin' }]));
  await fixed;
  t.equal((await s.call('GET', '/api/auth/me', { bearer: bob })).status, 401, 'a good edit after them applies, diffed against the last good users');
});

await t.test('a write through svc is in force at the next request, with no wait for the watcher', async (t) => {
  const s = await adminStand(t);
  const alice = (await s.login('alice', 'alice-password')).json.access_token as string;
  const made = await s.call('POST', '/api/users', { bearer: alice, body: { username: 'dave', role: 'operator', password: 'dave-password-1' } });
  t.equal(made.status, 201);
  t.ok(s.live.all().some((u) => u.username === 'dave'), 'the copy in memory has the new row as soon as the command answered');
  t.equal((await s.login('dave', 'dave-password-1')).status, 200, 'and the new user logs in at once');
  t.equal((await s.call('GET', '/api/users', { bearer: alice })).json.length, 3);
});

await t.test('the verified-token cache ends with whatever ends the token', async (t) => {
  const s = await adminStand(t);
  const me = (token: string) => s.call('GET', '/api/auth/me', { bearer: token });
  const admin = (await s.login('alice', 'alice-password')).json.access_token as string;

  // Logout: token_version moves on, the cached signature check does not save the token.
  let bob = (await s.login('bob', 'bob-password')).json;
  t.equal((await me(bob.access_token)).status, 200, 'used once: its signature check is cached');
  t.equal((await s.call('POST', '/api/auth/logout', { body: { refresh_token: bob.refresh_token } })).status, 200);
  t.equal((await me(bob.access_token)).status, 401, 'refused after logout');

  // A password change by the user.
  bob = (await s.login('bob', 'bob-password')).json;
  t.equal((await me(bob.access_token)).status, 200);
  t.equal((await s.call('PUT', '/api/auth/profile', { bearer: bob.access_token, body: { old_password: 'bob-password', new_password: 'bob-password-2' } })).status, 200);
  t.equal((await me(bob.access_token)).status, 401, 'refused after a password change');

  // A role change and a deactivation by an admin.
  bob = (await s.login('bob', 'bob-password-2')).json;
  t.equal((await s.call('GET', '/api/users', { bearer: bob.access_token })).status, 403);
  t.equal((await s.call('PUT', '/api/users/bob', { bearer: admin, body: { role: 'admin' } })).status, 200);
  t.equal((await s.call('GET', '/api/users', { bearer: bob.access_token })).status, 200, 'a promotion shows on the cached token at once');
  t.equal((await s.call('PUT', '/api/users/bob', { bearer: admin, body: { role: 'viewer' } })).status, 200);
  t.equal((await s.call('GET', '/api/users', { bearer: bob.access_token })).status, 403, 'a demotion too');
  t.equal((await s.call('PUT', '/api/users/bob', { bearer: admin, body: { active: false } })).status, 200);
  t.equal((await me(bob.access_token)).status, 401, 'refused after a deactivation');

  // Expiry on the clock, and a new jwt_secret.
  t.equal((await me(admin)).status, 200);
  s.clock.now = T0 + ACCESS_TTL_S * 1000;
  t.equal((await me(admin)).status, 401, 'a cached token still expires at its exp');
  s.clock.now = T0;
  t.equal((await me(admin)).status, 200);
  s.setConfig({ jwt_secret: 'another-jwt-secret-of-at-least-32-bytes!!' });
  t.equal((await me(admin)).status, 401, 'a new jwt_secret refuses tokens verified under the old one');
});
