import * as v from 'valibot';
import type { HomePaths } from './home.js';
import { readJsonFileSync, writeJsonAtomicSync } from './json-file.js';

/*
 * `_secrets/refresh_tokens.json` (0600): one row per refresh-token family (one login), holding the
 * SHA-256 of the jti that is current in it. A file and not facts in the event log: this is
 * revocation state read on every refresh and rewritten on every rotation, it is pruned when a family
 * expires, and even hashes of bearer-token ids have no business in a log that is kept forever and
 * exported. It survives a restart, so a restart neither logs everybody out nor forgets a revocation.
 */
const FamilySchema = v.object({
  username: v.string(),
  /** hex SHA-256 of the jti of the one refresh token of this family that may still be used. */
  current: v.pipe(v.string(), v.regex(/^[0-9a-f]{64}$/)),
  /** Epoch seconds; past it the row is dropped. */
  expires_at: v.number(),
  /** Set by logout or by the reuse of a rotated token; kept until expiry so the reuse stays refused. */
  revoked: v.boolean(),
});
export type RefreshFamily = v.InferOutput<typeof FamilySchema>;
const RefreshTokensSchema = v.object({ families: v.record(v.pipe(v.string(), v.regex(/^[A-Za-z0-9_-]{1,64}$/)), FamilySchema) });
export type RefreshTokens = v.InferOutput<typeof RefreshTokensSchema>;

export function loadRefreshTokens(paths: HomePaths): RefreshTokens {
  return readJsonFileSync(paths.refreshTokensFile, RefreshTokensSchema, { missing: () => ({ families: {} }) });
}

/** Atomic, 0600 in the 0700 secrets directory; expired families are dropped on the way. */
export function saveRefreshTokens(paths: HomePaths, state: RefreshTokens, nowSeconds: number): void {
  const families = Object.fromEntries(Object.entries(state.families).filter(([, f]) => f.expires_at > nowSeconds));
  writeJsonAtomicSync(paths.refreshTokensFile, { families }, { mode: 0o600, dirMode: 0o700 });
}
