import { createHash, randomBytes } from 'node:crypto';
import { SignJWT, jwtVerify } from 'jose';
import * as v from 'valibot';
import { AdminTokenClaimsSchema, SvcError, type AdminTokenClaims, type Role, type TokenType } from '../../schemas/index.js';

/*
 * The admin panel's JWTs (HS256 with api.jwt_secret). Issued here, where the login is decided;
 * access tokens are verified by the admin edge on every request (edges/admin/access-token.ts), with
 * the same rules: HS256 only, the expected `typ`, a live users.json check after the signature.
 */

/** SPEC.md leaves lifetimes open: short access tokens, because a revoked session may live this long on one. */
export const ACCESS_TTL_S = 15 * 60;
export const REFRESH_TTL_S = 30 * 24 * 3600;
export const TWO_FACTOR_TTL_S = 5 * 60;


export const newTokenId = (): string => randomBytes(16).toString('base64url');
export const sha256Hex = (s: string): string => createHash('sha256').update(s).digest('hex');

const key = (secret: string) => {
  if (secret === '') throw new SvcError('unauthorized', 'api.jwt_secret is not set: admin tokens cannot be issued or checked');
  return new TextEncoder().encode(secret);
};

export interface IssueInput {
  typ: TokenType;
  sub: string;
  tv: number;
  ttlS: number;
  fam?: string;
  role?: Role;
  legacy?: boolean;
  jti?: string;
}

export async function issueToken(secret: string, nowMs: number, t: IssueInput): Promise<{ token: string; jti: string }> {
  const jti = t.jti ?? newTokenId();
  const iat = Math.floor(nowMs / 1000);
  const token = await new SignJWT({
    typ: t.typ,
    tv: t.tv,
    ...(t.fam ? { fam: t.fam } : {}),
    ...(t.role ? { role: t.role } : {}),
    ...(t.legacy ? { legacy: true } : {}),
  })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(t.sub)
    .setJti(jti)
    .setIssuedAt(iat)
    .setExpirationTime(iat + t.ttlS)
    .sign(key(secret));
  return { token, jti };
}

/** The claims of a valid token of `typ`; anything else (signature, alg, expiry, type, shape) is null. */
export async function verifyToken(secret: string, nowMs: number, token: string, typ: TokenType): Promise<AdminTokenClaims | null> {
  try {
    const { payload } = await jwtVerify(token, key(secret), { algorithms: ['HS256'], currentDate: new Date(nowMs) });
    const claims = v.safeParse(AdminTokenClaimsSchema, payload);
    return claims.success && claims.output.typ === typ ? claims.output : null;
  } catch (e) {
    if (e instanceof SvcError) throw e;
    return null;
  }
}
