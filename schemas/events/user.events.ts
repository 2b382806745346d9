import * as v from 'valibot';
import { typeNames } from './type-names.js';

/*
 * Stream `user:<username>`: what happened to a users.json row. Never carries a password, hash,
 * token or TOTP secret. Sockets of a user whose `token_version` moved or who became inactive or was
 * deleted are closed on these facts (WIRE.md §2 `/ws/admin`).
 */
const Username = v.string();
export const userStream = (username: string): string => `user:${username}`;
/** Stream of the users file as a whole, for what concerns no single row. */
export const USERS_FILE_STREAM = 'users';
export const USER_EVENT_SCHEMAS = {
  'user.created': v.object({ username: Username, role: v.string(), by: v.nullable(v.string()) }),
  /** `fields`: names of what changed (`role`, `active`, `allowed_agents`, `password`, `totp`, ...). */
  'user.updated': v.object({ username: Username, fields: v.array(v.string()), token_version: v.number(), active: v.boolean(), by: v.nullable(v.string()) }),
  'user.deleted': v.object({ username: Username, by: v.nullable(v.string()) }),
  /** A hand edit of users.json did not parse or validate; the last good rows stay in force. */
  'user.file_rejected': v.object({ file: v.string(), errors: v.array(v.string()) }),
};
export const USER_EVENTS = typeNames(USER_EVENT_SCHEMAS);
