import { createHash } from 'node:crypto';
import type { AdminTokenClaims } from '../../schemas/index.js';

/*
 * Access tokens whose signature and claims were already checked, so the panel's next request with
 * the same token skips the HMAC and the claims schema (most of what an authenticated read cost).
 * Only the signature check is remembered: whether the token still speaks for anyone — the row
 * present, active, the same token_version, its role — is asked of the live users on every request,
 * so a logout, a password change, a deactivation or a hand edit of users.json takes effect at the
 * next request without this cache being told. An entry is used only until the token's own `exp`,
 * and only under the secret that verified it (a new api.jwt_secret empties the cache). Keyed by the
 * SHA-256 of the token, so a lookup compares digests, never a presented token with a stored one.
 */

/** Enough for every signed-in panel of a busy instance; the oldest go first beyond it. */
export const MAX_VERIFIED_TOKENS = 4096;

export class VerifiedAccessTokens {
  private secret: string | null = null;
  private readonly byDigest = new Map<string, AdminTokenClaims>();

  constructor(private readonly max = MAX_VERIFIED_TOKENS) {}

  /** The claims `token` was verified with under `secret`, while it is unexpired at `nowMs`; else undefined. */
  get(secret: string, token: string, nowMs: number): AdminTokenClaims | undefined {
    if (secret !== this.secret) return undefined;
    const key = digest(token);
    const claims = this.byDigest.get(key);
    if (!claims) return undefined;
    if (nowMs >= claims.exp * 1000) {
      this.byDigest.delete(key);
      return undefined;
    }
    return claims;
  }

  /** Remembers a token that just passed verification under `secret`. */
  add(secret: string, token: string, claims: AdminTokenClaims): void {
    if (secret !== this.secret) {
      this.byDigest.clear();
      this.secret = secret;
    }
    this.byDigest.set(digest(token), claims);
    while (this.byDigest.size > this.max) this.byDigest.delete(this.byDigest.keys().next().value!);
  }

  get size(): number {
    return this.byDigest.size;
  }
}

const digest = (token: string) => createHash('sha256').update(token).digest('base64');
