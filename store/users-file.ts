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

/** The text of a users file checked as `file`: its rows, or every reason it is refused. */
export function parseUsersText(text: string, file: string): { ok: true; users: UserRecord[] } | { ok: false; errors: string[] } {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    return { ok: false, errors: [`${file}: not valid JSON (${(e as Error).message}); fix or remove it — it was left untouched`] };
  }
  return validateUsers(raw, file);
}

export function loadUsers(paths: HomePaths): UserRecord[] {
  const file = usersLocation(paths);
  if (!file) return [];
  const checked = parseUsersText(readFileSync(file, 'utf8'), file);
  if (!checked.ok) throw new SvcError('corrupt-file', checked.errors.join('; '));
  return checked.users;
}

type SavedListener = (users: readonly UserRecord[]) => void;
/** By users file path: whoever holds the rows in memory in this process (actors/users' live copy). */
const savedListeners = new Map<string, Set<SavedListener>>();

/**
 * Calls `listener` with the rows each time this process saves `paths`' users.json, before
 * `saveUsers` returns: a copy held in memory is current the moment a write is, with no wait for a
 * file watcher (a user just created can log in with the very next request). Returns the undo.
 */
export function onUsersSaved(paths: HomePaths, listener: SavedListener): () => void {
  let set = savedListeners.get(paths.usersFile);
  if (!set) savedListeners.set(paths.usersFile, (set = new Set()));
  set.add(listener);
  return () => {
    set.delete(listener);
    if (set.size === 0 && savedListeners.get(paths.usersFile) === set) savedListeners.delete(paths.usersFile);
  };
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
  for (const listener of savedListeners.get(paths.usersFile) ?? []) listener(checked.users);
}
