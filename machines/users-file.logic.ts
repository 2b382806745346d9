import type { UserRecord } from '../schemas/index.js';

/*
 * What a hand edit of users.json changed, row by row, in the words the `user.*` facts use: the
 * daemon records it as if the directory had made the change (by: null), so the admin socket drops
 * a removed or demoted user's connections and the log says who could do what when.
 */

export interface UsersFileChange {
  created: { username: string; role: string }[];
  updated: { username: string; fields: string[]; token_version: number; active: boolean }[];
  deleted: string[];
}

/** Field names as `user.updated` spells them: secrets are named by what they are, never shown. */
const FIELD_NAMES: Readonly<Record<string, string>> = {
  password_hash: 'password',
  totp_secret: 'totp',
  totp_enabled: 'totp',
  totp_last_step: 'totp_last_step',
};

function changedFields(before: UserRecord, after: UserRecord): string[] {
  const fields = new Set<string>();
  for (const key of new Set([...Object.keys(before), ...Object.keys(after)])) {
    const a = (before as Record<string, unknown>)[key];
    const b = (after as Record<string, unknown>)[key];
    if (JSON.stringify(a) !== JSON.stringify(b)) fields.add(FIELD_NAMES[key] ?? key);
  }
  return [...fields];
}

export function diffUsers(before: readonly UserRecord[], after: readonly UserRecord[]): UsersFileChange {
  const old = new Map(before.map((u) => [u.username, u]));
  const now = new Set(after.map((u) => u.username));
  const change: UsersFileChange = { created: [], updated: [], deleted: [] };
  for (const u of after) {
    const was = old.get(u.username);
    if (!was) {
      change.created.push({ username: u.username, role: u.role });
      continue;
    }
    const fields = changedFields(was, u);
    if (fields.length) change.updated.push({ username: u.username, fields, token_version: u.token_version, active: u.active });
  }
  for (const u of before) if (!now.has(u.username)) change.deleted.push(u.username);
  return change;
}

export const noUsersChange = (c: UsersFileChange): boolean => c.created.length + c.updated.length + c.deleted.length === 0;
