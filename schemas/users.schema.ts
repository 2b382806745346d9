import * as v from 'valibot';
import { ROLES, formatIssues, isPlainObject } from './config.schema.js';

/*
 * `_secrets/users.json` (SPEC.md "User record", WIRE.md `UserInfo`). Written as a top-level array;
 * read as either the array or `{users: [...]}` so a file from an older writer still loads.
 * Records are loose objects: a rewrite (password reset, profile edit) keeps keys this schema does not know.
 */

const wholeNumber = (min: number) =>
  v.pipe(v.number(), v.check((n) => Number.isSafeInteger(n) && n >= min, `a whole number >= ${min}`));
const epochSeconds = () => v.pipe(v.number(), v.check((n) => Number.isFinite(n) && n >= 0, 'epoch seconds (a number >= 0)'));

export const USERNAME_MAX_LENGTH = 64;

export const UserRecordSchema = v.looseObject({
  /** Primary key, and the caller user id of inter-agent calls (`SVC_CALLER_USER_ID`). */
  username: v.pipe(
    v.string(),
    v.check(
      (s) => s.trim() === s && s !== '' && s.length <= USERNAME_MAX_LENGTH && !/[\s\u0000-\u001f]/.test(s),
      `a non-empty name of at most ${USERNAME_MAX_LENGTH} characters without spaces or control characters`,
    ),
  ),
  role: v.picklist(ROLES),
  active: v.optional(v.boolean(), true),
  /** Empty or `['*']`: every agent. */
  allowed_agents: v.optional(v.array(v.string()), () => [] as string[]),
  /** Messenger sender ids (SPEC's `<messenger>_user_ids`) that act as this user. */
  telegram_user_ids: v.optional(
    v.array(v.pipe(v.number(), v.check((n) => Number.isSafeInteger(n), 'a whole number (numeric sender id)'))),
    () => [] as number[],
  ),
  /** Bumped on password reset; a JWT carrying an older value is rejected. */
  token_version: v.optional(wholeNumber(0), 0),
  errors_ack_at: v.optional(v.nullable(epochSeconds()), null),
  display_name: v.optional(v.string(), ''),
  /** Reference to the stored avatar file; null when none was uploaded. */
  avatar: v.optional(v.nullable(v.string()), null),
  /** Empty means no password was ever set: password login always fails for this record. */
  password_hash: v.optional(v.string(), ''),
  totp_secret: v.optional(v.nullable(v.string()), null),
  totp_enabled: v.optional(v.boolean(), false),
  /** The last TOTP time step accepted: a code is good once (a replayed or older one is refused). */
  totp_last_step: v.optional(v.nullable(wholeNumber(0))),
  created_at: v.optional(epochSeconds(), 0),
});

function duplicateUsernames(users: readonly { username: string }[]): string[] {
  const seen = new Set<string>();
  const dupes = new Set<string>();
  for (const u of users) (seen.has(u.username) ? dupes : seen).add(u.username);
  return [...dupes];
}

/** The canonical (written) shape: a JSON array of user records with unique usernames. */
export const UsersSchema = v.pipe(
  v.array(UserRecordSchema),
  v.check(
    (users) => duplicateUsernames(users).length === 0,
    (issue) => `unique usernames; duplicated: ${duplicateUsernames(issue.input as { username: string }[]).join(', ')}`,
  ),
);

export type UserRecord = v.InferOutput<typeof UserRecordSchema>;
export type UserRecordInput = v.InferInput<typeof UserRecordSchema>;
export type Users = v.InferOutput<typeof UsersSchema>;

export type UsersCheck = { ok: true; users: UserRecord[] } | { ok: false; errors: string[] };

/**
 * Validate a parsed users.json: the array, or the legacy `{users: [...]}` wrapper (its issues are
 * reported under `users[...]`). Errors name file, field, value and what is allowed.
 */
export function validateUsers(raw: unknown, file: string): UsersCheck {
  const wrapped = isPlainObject(raw);
  if (wrapped && !Array.isArray(raw.users)) {
    return { ok: false, errors: [`${file}: expected a JSON array of user records (or an object with a "users" array)`] };
  }
  const list = wrapped ? raw.users : raw;
  const result = v.safeParse(UsersSchema, list);
  if (result.success) return { ok: true, users: result.output };
  const errors = formatIssues(result.issues, file);
  if (!wrapped) return { ok: false, errors };
  // Issue paths are relative to the array; in the wrapped form that array is the `users` field.
  return {
    ok: false,
    errors: errors.map((e) =>
      e.startsWith(`${file}: [`) ? `${file}: users${e.slice(file.length + 2)}`
        : e.startsWith(`${file}: top level`) ? `${file}: users${e.slice(file.length + 2 + 'top level'.length)}` : e,
    ),
  };
}
