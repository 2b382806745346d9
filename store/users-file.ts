import { existsSync, readFileSync } from 'node:fs';
import { SvcError, validateUsers, type UserRecord } from '../schemas/index.js';
import type { HomePaths } from './home.js';
import { ensureDir, writeJsonAtomicSync } from './json-file.js';

/** `_secrets/users.json`, else the legacy root copy; no file means no users (everyone falls back to permission_mode). */
export function usersLocation(paths: HomePaths): string | null {
  const legacy = `${paths.root}/users.json`;
  if (existsSync(paths.usersFile)) return paths.usersFile;
  return existsSync(legacy) ? legacy : null;
}

export function loadUsers(paths: HomePaths): UserRecord[] {
  const file = usersLocation(paths);
  if (!file) return [];
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new SvcError('corrupt-file', `${file}: not valid JSON (${(e as Error).message}); fix or remove it — it was left untouched`);
  }
  const checked = validateUsers(raw, file);
  if (!checked.ok) throw new SvcError('corrupt-file', checked.errors.join('; '));
  return checked.users;
}

/**
 * Writes `_secrets/users.json` (SPEC.md "Admin panel (JWT)" 10): atomically, 0600 in a 0700
 * directory, always at the new location; a legacy root copy is left for the user to remove.
 * Validated first, so a write never leaves a file the next read refuses.
 */
export function saveUsers(paths: HomePaths, users: readonly UserRecord[]): void {
  const checked = validateUsers(users, paths.usersFile);
  if (!checked.ok) throw new SvcError('invalid-body', checked.errors.join('; '));
  ensureDir(paths.secretsDir, 0o700);
  writeJsonAtomicSync(paths.usersFile, checked.users, { mode: 0o600, dirMode: 0o700 });
}
