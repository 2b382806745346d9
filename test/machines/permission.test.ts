import t from 'tap';
import * as v from 'valibot';
import {
  SYSTEM_ROLE,
  agentAllowed,
  asRole,
  permissionModeFor,
  resolvePermissionMode,
  roleForCaller,
  roleForMessengerSender,
  roleForSource,
  type PermissionSource,
} from '../../machines/index.js';
import { UserRecordSchema, defaultConfig, validateUsers, type AgentConfig, type UserRecord } from '../../schemas/index.js';

const user = (fields: Record<string, unknown>): UserRecord => v.parse(UserRecordSchema, fields);

const USERS: UserRecord[] = [
  user({ username: 'admin', role: 'admin', telegram_user_ids: [100] }),
  user({ username: 'olga', role: 'operator', telegram_user_ids: [200, 201] }),
  user({ username: 'vic', role: 'viewer', telegram_user_ids: [300] }),
  user({ username: 'gone', role: 'admin', active: false, telegram_user_ids: [400] }),
];

/** Every mode distinct, so a test can tell which rule answered. */
const config = (over: Partial<AgentConfig> = {}): AgentConfig => ({
  ...defaultConfig(),
  permission_mode: 'plan',
  permission_mode_by_role: { admin: 'bypassPermissions', operator: 'acceptEdits', viewer: 'default' },
  ...over,
});

await t.test('resolvePermissionMode: role in the map wins, else permission_mode; {} is legacy', async (t) => {
  const rows: Array<[string, Partial<AgentConfig>, Parameters<typeof resolvePermissionMode>[1], string]> = [
    ['admin in map', {}, 'admin', 'bypassPermissions'],
    ['operator in map', {}, 'operator', 'acceptEdits'],
    ['viewer in map', {}, 'viewer', 'default'],
    ['no role', {}, null, 'plan'],
    ['role missing from map', { permission_mode_by_role: { admin: 'dontAsk' } }, 'viewer', 'plan'],
    ['partial map still answers its role', { permission_mode_by_role: { admin: 'dontAsk' } }, 'admin', 'dontAsk'],
    ['{} legacy: admin', { permission_mode_by_role: {} }, 'admin', 'plan'],
    ['{} legacy: viewer', { permission_mode_by_role: {} }, 'viewer', 'plan'],
    ['{} legacy: none', { permission_mode_by_role: {} }, null, 'plan'],
    ['unknown role string', {}, 'root' as never, 'plan'],
    ['prototype key is not a role', {}, 'constructor' as never, 'plan'],
  ];
  for (const [name, over, role, want] of rows) t.equal(resolvePermissionMode(config(over), role), want, name);
});

await t.test('the defaults of a fresh config follow SPEC', async (t) => {
  const c = defaultConfig();
  t.equal(resolvePermissionMode(c, 'viewer'), 'default');
  t.equal(resolvePermissionMode(c, null), 'bypassPermissions');
});

await t.test('role-sources table: every row of SPEC "CLI permission mode by role"', async (t) => {
  const rows: Array<[string, PermissionSource, string]> = [
    // REST / admin WebSocket: role claim of the access token, fallback permission_mode
    ['token admin', { kind: 'token', role: 'admin' }, 'bypassPermissions'],
    ['token operator', { kind: 'token', role: 'operator' }, 'acceptEdits'],
    ['token viewer', { kind: 'token', role: 'viewer' }, 'default'],
    ['token without role (static legacy token handled by caller as admin)', { kind: 'token', role: null }, 'plan'],
    ['token with unknown role claim', { kind: 'token', role: 'superuser' }, 'plan'],
    // Chat messenger: sender id in telegram_user_ids of active records
    ['messenger admin', { kind: 'messenger', senderId: 100 }, 'bypassPermissions'],
    ['messenger operator second id', { kind: 'messenger', senderId: 201 }, 'acceptEdits'],
    ['messenger viewer', { kind: 'messenger', senderId: 300 }, 'default'],
    ['messenger id as digit string', { kind: 'messenger', senderId: '200' }, 'acceptEdits'],
    ['messenger unknown sender -> permission_mode', { kind: 'messenger', senderId: 999 }, 'plan'],
    ['messenger sender of an inactive user -> permission_mode', { kind: 'messenger', senderId: 400 }, 'plan'],
    ['messenger garbage id', { kind: 'messenger', senderId: '1e3' }, 'plan'],
    // Inter-agent: user_role=admin, or SVC_CALLER_USER_ID
    ['interagent user_role=admin', { kind: 'interagent', userRole: 'admin' }, 'bypassPermissions'],
    ['interagent caller operator', { kind: 'interagent', callerUserId: 'olga' }, 'acceptEdits'],
    ['interagent caller viewer', { kind: 'interagent', callerUserId: 'vic' }, 'default'],
    ['interagent unknown caller', { kind: 'interagent', callerUserId: 'mallory' }, 'plan'],
    ['interagent inactive caller', { kind: 'interagent', callerUserId: 'gone' }, 'plan'],
    ['interagent named caller is not lifted by user_role', { kind: 'interagent', callerUserId: 'vic', userRole: 'admin' }, 'default'],
    ['interagent unknown caller is not lifted by user_role', { kind: 'interagent', callerUserId: 'mallory', userRole: 'admin' }, 'plan'],
    ['interagent neither', { kind: 'interagent' }, 'plan'],
    ['interagent bogus user_role', { kind: 'interagent', userRole: 'god' }, 'plan'],
    // System-initiated: admin role
    ['system', { kind: 'system' }, 'bypassPermissions'],
    // none
    ['none', { kind: 'none' }, 'plan'],
  ];
  for (const [name, source, want] of rows) t.equal(permissionModeFor(config(), USERS, source), want, name);
  t.equal(SYSTEM_ROLE, 'admin');
});

await t.test('with {} every source runs in permission_mode', async (t) => {
  const legacy = config({ permission_mode_by_role: {} });
  for (const source of [
    { kind: 'token', role: 'admin' },
    { kind: 'messenger', senderId: 100 },
    { kind: 'interagent', userRole: 'admin' },
    { kind: 'system' },
    { kind: 'none' },
  ] as PermissionSource[]) {
    t.equal(permissionModeFor(legacy, USERS, source), 'plan', source.kind);
  }
});

await t.test('roleForMessengerSender: active records only; a shared id gives the least privileged role', async (t) => {
  t.equal(roleForMessengerSender(USERS, 100), 'admin');
  t.equal(roleForMessengerSender(USERS, 400), null, 'inactive ignored');
  t.equal(roleForMessengerSender([], 100), null);
  const shared = [user({ username: 'a', role: 'admin', telegram_user_ids: [7] }), user({ username: 'b', role: 'viewer', telegram_user_ids: [7] })];
  t.equal(roleForMessengerSender(shared, 7), 'viewer');
  t.equal(roleForMessengerSender(shared, 7.5), null, 'non-integer id');
  t.equal(roleForMessengerSender(shared, ''), null, 'empty id');
  t.equal(roleForMessengerSender(shared, ' 7 '), 'viewer', 'digit string with spaces');
  t.equal(roleForMessengerSender(shared, '99999999999999999999'), null, 'oversized id');
});

await t.test('roleForCaller: username match on active users', async (t) => {
  t.equal(roleForCaller(USERS, 'olga'), 'operator');
  t.equal(roleForCaller(USERS, 'OLGA'), null, 'case-sensitive primary key');
  t.equal(roleForCaller(USERS, 'gone'), null);
  t.equal(roleForCaller(USERS, undefined), null);
  t.equal(roleForCaller(USERS, ''), null);
  t.equal(roleForSource(USERS, { kind: 'system' }), 'admin');
  t.equal(asRole('viewer'), 'viewer');
  t.equal(asRole(42), null);
  t.equal(asRole('toString'), null);
});

await t.test('agentAllowed: empty list or * is unrestricted; inactive users get nothing', async (t) => {
  const rows: Array<[string, string[], boolean, string, boolean]> = [
    ['empty list', [], true, 'any', true],
    ['star', ['*'], true, 'any', true],
    ['listed', ['main', 'research'], true, 'research', true],
    ['not listed', ['main'], true, 'research', false],
    ['exact name only', ['main'], true, 'Main', false],
    ['inactive, empty list', [], false, 'main', false],
  ];
  for (const [name, allowed, active, agent, want] of rows) {
    t.equal(agentAllowed(user({ username: 'u', role: 'viewer', allowed_agents: allowed, active }), agent), want, name);
  }
});

await t.test('users.json: defaults, both shapes, and bad input', async (t) => {
  const ok = validateUsers([{ username: 'admin', role: 'admin' }], 'users.json');
  t.ok(ok.ok);
  if (ok.ok) {
    t.same(ok.users[0], {
      username: 'admin', role: 'admin', active: true, allowed_agents: [], telegram_user_ids: [], token_version: 0,
      errors_ack_at: null, display_name: '', avatar: null, password_hash: '', totp_secret: null, totp_enabled: false, created_at: 0,
    });
  }
  const wrapped = validateUsers({ users: [{ username: 'a', role: 'viewer', extra: 1 }] }, 'users.json');
  t.ok(wrapped.ok && wrapped.users[0]!.extra === 1, '{users:[...]} accepted; unknown keys kept');

  const bad: Array<[string, unknown, RegExp]> = [
    ['unknown role', [{ username: 'a', role: 'root' }], /users\.json: \[0\]\.role = "root" is not allowed \(one of admin, operator, viewer\)/],
    ['missing username', [{ role: 'admin' }], /\[0\]\.username is missing/],
    ['blank username', [{ username: ' ', role: 'admin' }], /\[0\]\.username/],
    ['duplicate username', [{ username: 'a', role: 'admin' }, { username: 'a', role: 'viewer' }], /unique usernames; duplicated: a/],
    ['sender id not an int', [{ username: 'a', role: 'admin', telegram_user_ids: ['12'] }], /\[0\]\.telegram_user_ids\[0\]/],
    ['negative token_version', [{ username: 'a', role: 'admin', token_version: -1 }], /token_version = -1/],
    ['active not bool', [{ username: 'a', role: 'admin', active: 'yes' }], /\[0\]\.active = "yes" has the wrong type/],
    ['wrapped bad role', { users: [{ username: 'a', role: 'x' }] }, /users\.json: users\[0\]\.role = "x"/],
    ['wrapped duplicate', { users: [{ username: 'a', role: 'admin' }, { username: 'a', role: 'admin' }] }, /users\.json: users = .*unique usernames/],
    ['object without users', { admin: {} }, /expected a JSON array of user records/],
    ['string', 'admin', /users\.json/],
    ['null', null, /users\.json/],
    ['oversized username', [{ username: 'x'.repeat(65), role: 'admin' }], /at most 64/],
  ];
  for (const [name, raw, re] of bad) {
    const r = validateUsers(raw, 'users.json');
    t.notOk(r.ok, name);
    if (!r.ok) t.match(r.errors.join('\n'), re, name);
  }
});
