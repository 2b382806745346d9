import { chmodSync, writeFileSync } from 'node:fs';
import type { Bus } from '../../bus/index.js';
import { SvcError, USER_EVENTS, userStream, type AgentConfig, type UserRecord } from '../../schemas/index.js';
import { ensureDir, loadUsers, saveUsers, usersLocation, type HomePaths } from '../../store/index.js';
import { hashPassword, randomPassword } from './password.js';

/*
 * First start (SPEC.md "Admin panel (JWT)" 9): with no users.json anywhere, user `admin` is created
 * with a random 16-character password written to `_secrets/.initial_admin_password` (0600), and
 * its messenger ids seeded from `allowed_user_ids`. The file stays until the password is changed
 * (`svc users set-password`), so its presence is what `svc status` reports as "unchanged".
 */

export const BOOTSTRAP_USERNAME = 'admin';

export interface BootstrapResult {
  /** True only on the start that created the admin: the banner says where the password is once. */
  created: boolean;
  passwordFile: string;
}

export async function ensureBootstrapAdmin(paths: HomePaths, config: AgentConfig, bus: Bus | null, nowMs: number): Promise<BootstrapResult> {
  const result = { created: false, passwordFile: paths.initialAdminPasswordFile };
  if (usersLocation(paths) !== null) return result;
  const password = randomPassword(16);
  const hash = await hashPassword(password);
  // Checked again after the (slow) hash: whoever wrote users.json meanwhile wins.
  if (usersLocation(paths) !== null || loadUsers(paths).length > 0) return result;
  const admin: UserRecord = {
    username: BOOTSTRAP_USERNAME,
    role: 'admin',
    active: true,
    allowed_agents: [],
    telegram_user_ids: [...config.allowed_user_ids],
    token_version: 0,
    errors_ack_at: null,
    display_name: '',
    avatar: null,
    password_hash: hash,
    totp_secret: null,
    totp_enabled: false,
    totp_last_step: null,
    created_at: Math.floor(nowMs / 1000),
  };
  ensureDir(paths.secretsDir, 0o700);
  // Password first: a users.json without its password file would be an admin nobody can log in as.
  writeFileSync(paths.initialAdminPasswordFile, `${password}\n`, { mode: 0o600 });
  chmodSync(paths.initialAdminPasswordFile, 0o600);
  saveUsers(paths, [admin]);
  await bus?.publish({ stream: userStream(admin.username), type: USER_EVENTS.created, data: { username: admin.username, role: admin.role, by: null } });
  return { ...result, created: true };
}

/**
 * `svc admin setup` on a home that has users: the bootstrap admin gets a new random password,
 * written to the same 0600 file the first start writes (never printed), and every session of it
 * ends (token_version is bumped). Throws `not-found` when users.json has no `admin`.
 */
export async function resetBootstrapAdminPassword(paths: HomePaths): Promise<{ passwordFile: string }> {
  if (!loadUsers(paths).some((u) => u.username === BOOTSTRAP_USERNAME)) {
    throw new SvcError('not-found', `no user ${BOOTSTRAP_USERNAME} in users.json; nothing changed (svc users set-password USER sets another user's password)`);
  }
  const password = randomPassword(16);
  const hash = await hashPassword(password);
  // Load → change → save with nothing awaited in between: the daemon may be writing the same file.
  const users = loadUsers(paths);
  const row = users.find((u) => u.username === BOOTSTRAP_USERNAME);
  if (!row) throw new SvcError('not-found', `user ${BOOTSTRAP_USERNAME} was removed meanwhile; nothing changed`);
  ensureDir(paths.secretsDir, 0o700);
  // Password file first, as at first start: users.json must never hold a password nobody can read.
  writeFileSync(paths.initialAdminPasswordFile, `${password}\n`, { mode: 0o600 });
  chmodSync(paths.initialAdminPasswordFile, 0o600);
  row.password_hash = hash;
  row.token_version += 1;
  saveUsers(paths, users);
  return { passwordFile: paths.initialAdminPasswordFile };
}
