import { timingSafeEqual } from 'node:crypto';
import { jwtVerify, type JWTPayload } from 'jose';
import * as v from 'valibot';
import {
  AUTH_COOKIES,
  AdminTokenClaimsSchema,
  CSRF_HEADER,
  SvcError,
  TOKEN_TYPES,
  staticTokenFingerprint,
  type AdminTokenClaims,
  type AgentConfig,
  type Principal,
  type UserRecord,
} from '../../schemas/index.js';
import type { Authenticator, HttpRequest } from '../http/index.js';
import { LEGACY_ADMIN } from './static-token.js';
import type { VerifiedAccessTokens } from './verified-tokens.js';

/*
 * The admin panel's access token (issued by actors/users) turned into a Principal on every request:
 * HS256 only (alg none and every other alg refused), `typ` access, not expired, then the live
 * users.json row — present, active, the same token_version — so a password reset, a deactivation
 * or a deletion ends every session at its next request, not when the token expires. Role and
 * allowed_agents come from the row, not the token: a demotion takes effect at once. Only the
 * signature check is remembered between requests (verified-tokens.ts); the row is asked every time.
 */

export interface AccessTokenDeps {
  config: () => AgentConfig;
  /** The users in force; the same array until they change (actors/users' live copy), so an index by name is kept per array. */
  users: () => UserRecord[];
  /** Epoch ms. */
  clock: () => number;
  /** api.jwt_secret as the daemon holds it (generated at start when config.json had none). */
  jwtSecret?: () => string;
  /** api.token as the daemon holds it (generated at start when config.json had none). */
  apiToken?: () => string;
  /** Tokens already verified (edges/admin/verified-tokens.ts); absent: every request verifies afresh. */
  verified?: VerifiedAccessTokens;
}

const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

/** Rows by username, built once per users array (it is replaced, never changed in place, when users.json changes). */
const indexes = new WeakMap<readonly UserRecord[], Map<string, UserRecord>>();
function userNamed(users: readonly UserRecord[], username: string): UserRecord | undefined {
  let index = indexes.get(users);
  if (!index) indexes.set(users, (index = new Map(users.map((u) => [u.username, u]))));
  return index.get(username);
}

/** The signature and claims of an access token, from the cache when it verified them already. */
async function verifiedClaims(token: string, secret: string, deps: AccessTokenDeps): Promise<AdminTokenClaims | null> {
  const now = deps.clock();
  const known = deps.verified?.get(secret, token, now);
  if (known) return known;
  let payload: JWTPayload;
  try {
    ({ payload } = await jwtVerify(token, new TextEncoder().encode(secret), { algorithms: ['HS256'], currentDate: new Date(now) }));
  } catch {
    return null;
  }
  const parsed = v.safeParse(AdminTokenClaimsSchema, payload);
  if (!parsed.success || parsed.output.typ !== TOKEN_TYPES.access) return null;
  // A not-before date is checked by jose at each verification; none of svc's tokens carries one.
  if (payload.nbf === undefined) deps.verified?.add(secret, token, parsed.output);
  return parsed.output;
}

/** The principal an access token speaks for, or null for any token that is not a valid, live one. */
export async function principalFromAccessToken(token: string, deps: AccessTokenDeps): Promise<Principal | null> {
  if (token.length > 4096 || !JWT_SHAPE.test(token)) return null;
  const secret = deps.jwtSecret?.() || deps.config().api.jwt_secret;
  if (secret === '') return null;
  const claims = await verifiedClaims(token, secret, deps);
  if (claims === null) return null;
  if (claims.legacy) {
    const api = deps.apiToken?.() ?? deps.config().api.token;
    return api !== '' && claims.tv === staticTokenFingerprint(api) ? LEGACY_ADMIN : null;
  }
  const row = userNamed(deps.users(), claims.sub);
  if (!row || !row.active || row.token_version !== claims.tv) return null;
  return {
    kind: 'user',
    id: row.username,
    acting_for: null,
    role: row.role,
    allowed_agents: [...row.allowed_agents],
    origin: { transport: 'admin', chat_id: null, topic_id: null },
  };
}

/** `Cookie:` as name → value; the first of a repeated name wins (RFC 6265 5.4 order). */
export function parseCookies(header: string | undefined): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of (header ?? '').split(';')) {
    const i = part.indexOf('=');
    if (i <= 0) continue;
    const name = part.slice(0, i).trim();
    if (!out.has(name)) out.set(name, part.slice(i + 1).trim());
  }
  return out;
}

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

const MUTATING = new Set(['POST', 'PUT', 'DELETE', 'PATCH']);

/**
 * The double-submit proof: `X-CSRF-Token` equal to the readable CSRF cookie, `sygen_csrf` (the name
 * the panel reads) or else its older twin `svc_csrf`; both are set with one value at every login.
 */
export function csrfProven(req: Pick<HttpRequest, 'headers'>, cookies: Map<string, string>): boolean {
  const csrf = cookies.get(AUTH_COOKIES.csrf) ?? cookies.get(AUTH_COOKIES.csrfAlias) ?? '';
  return csrf !== '' && sameSecret(csrf, req.headers[CSRF_HEADER] ?? '');
}

/** `Authorization: Bearer <access JWT>`; any other bearer is left to the next credential (the static token). */
export function adminJwtAuthenticator(deps: AccessTokenDeps): Authenticator {
  return {
    credential: 'admin-jwt',
    hint: 'Authorization: Bearer <access token>',
    authenticate: async (req) => {
      const m = /^Bearer ([^\s]+)$/.exec(req.headers.authorization ?? '');
      return m ? principalFromAccessToken(m[1]!, deps) : null;
    },
  };
}

/**
 * The panel's httpOnly access cookie. A browser sends it on cross-site requests too, so a
 * mutating request must also prove it was made by the panel's page: `X-CSRF-Token` equal to the
 * readable `sygen_csrf` cookie (double submit), which another site can neither read nor set.
 */
export function adminCookieAuthenticator(deps: AccessTokenDeps): Authenticator {
  return {
    credential: 'admin-cookie',
    hint: `the ${AUTH_COOKIES.access} cookie (with ${CSRF_HEADER} on writes)`,
    authenticate: async (req: HttpRequest) => {
      const cookies = parseCookies(req.headers.cookie);
      const token = cookies.get(AUTH_COOKIES.access);
      if (!token) return null;
      const principal = await principalFromAccessToken(token, deps);
      if (principal === null) return null;
      if (MUTATING.has(req.method)) {
        if (!csrfProven(req, cookies)) {
          throw new SvcError('csrf-failed', `a cookie-authenticated ${req.method} needs the ${CSRF_HEADER} header equal to the ${AUTH_COOKIES.csrf} cookie`);
        }
      }
      return principal;
    },
  };
}
