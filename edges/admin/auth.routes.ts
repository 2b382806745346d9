import * as v from 'valibot';
import { randomBytes } from 'node:crypto';
import {
  AUTH_COOKIES,
  CSRF_HEADER,
  LEGACY_ADMIN_INFO,
  PasswordLoginBodySchema,
  ProfileBodySchema,
  RefreshBodySchema,
  SvcError,
  TokenLoginBodySchema,
  TotpCodeBodySchema,
  TotpDisableBodySchema,
  TwoFactorLoginBodySchema,
  USER_COMMANDS,
  isPlainObject,
  userInfo,
  type Principal,
  type TokenPair,
} from '../../schemas/index.js';
import { json, parseStrictBody, withBody, type HttpReply, type HttpRequest, type Route } from '../http/index.js';
import { csrfProven, parseCookies } from './access-token.js';
import { adminAuth } from './admin-auth.js';
import type { AdminDeps } from './admin-deps.js';
import { LoginRateLimit, clientIp, fromTrustedProxy } from './login-rate-limit.js';

/*
 * SPEC.md "Admin REST: authentication" with WIRE.md §2's shapes. The handlers parse and translate;
 * the users directory (actors/users) decides every login, rotation and change. Tokens go out in the
 * body (scripts, the panel's bearer mode) and as cookies (the panel's cookie mode): access and
 * refresh httpOnly, `sygen_csrf` (and its twin `svc_csrf`) readable for the double submit.
 */

/** Credentials and codes are short; nothing here needs more. */
const AUTH_BODY_BYTES = 16 * 1024;

function cookie(name: string, value: string, maxAgeS: number, opts: { httpOnly: boolean; secure: boolean }): string {
  return [`${name}=${value}`, 'Path=/', `Max-Age=${maxAgeS}`, 'SameSite=Lax', ...(opts.httpOnly ? ['HttpOnly'] : []), ...(opts.secure ? ['Secure'] : [])].join('; ');
}

/** Either way of logging in, for the API description (the handler tells them apart by `token`). */
const LoginBodySchema = v.union([PasswordLoginBodySchema, TokenLoginBodySchema]);

export function authRoutes(deps: AdminDeps): Route[] {
  const limit = new LoginRateLimit(deps.clock);
  const trusted = () => deps.config().api.trusted_proxies ?? [];
  const ip = (req: HttpRequest) => clientIp(req, trusted());
  /** Secure cookies when a trusted proxy says the browser spoke https (TLS ends at the proxy). */
  const secure = (req: HttpRequest) => fromTrustedProxy(req, trusted()) && req.headers['x-forwarded-proto'] === 'https';

  const limited = (req: HttpRequest): HttpReply | null => {
    const waitMs = limit.attempt(ip(req));
    if (waitMs === 0) return null;
    const s = Math.max(1, Math.ceil(waitMs / 1000));
    return json(429, { error: `too many login or password attempts from this address; try again in ${s} s`, code: 'rate-limited' }, { 'retry-after': String(s) });
  };

  const session = (req: HttpRequest, pair: TokenPair): HttpReply => {
    const flags = { secure: secure(req) };
    const csrf = randomBytes(24).toString('base64url');
    return {
      status: 200,
      json: pair,
      cookies: [
        cookie(AUTH_COOKIES.access, pair.access_token, pair.expires_in, { ...flags, httpOnly: true }),
        cookie(AUTH_COOKIES.refresh, pair.refresh_token, pair.refresh_expires_in, { ...flags, httpOnly: true }),
        ...[AUTH_COOKIES.csrf, AUTH_COOKIES.csrfAlias].map((n) => cookie(n, csrf, pair.refresh_expires_in, { ...flags, httpOnly: false })),
      ],
    };
  };

  /** The refresh token of the body, else of the cookie; from the cookie only with the CSRF proof. */
  const refreshToken = (body: v.InferOutput<typeof RefreshBodySchema>, req: HttpRequest): string | null => {
    if (body?.refresh_token) return body.refresh_token;
    const cookies = parseCookies(req.headers.cookie);
    const fromCookie = cookies.get(AUTH_COOKIES.refresh);
    if (!fromCookie) return null;
    if (!csrfProven(req, cookies)) throw new SvcError('csrf-failed', `using the ${AUTH_COOKIES.refresh} cookie needs the ${CSRF_HEADER} header equal to the ${AUTH_COOKIES.csrf} cookie`);
    return fromCookie;
  };

  return [
    {
      method: 'POST',
      pattern: '/api/auth/login',
      summary: 'Log in with a username and password (or the API token): tokens and cookies, or a 2FA step',
      body: LoginBodySchema,
      auth: 'public',
      maxBodyBytes: AUTH_BODY_BYTES,
      handler: async (req) => {
        const tooMany = limited(req);
        if (tooMany) return tooMany;
        // Parsed by hand: the limit counts a malformed attempt too, and the schema is picked by the body.
        // Two shapes; choosing by the `token` key gives a message about the shape the client meant.
        let raw: unknown = null;
        try {
          raw = JSON.parse(req.body.toString('utf8'));
        } catch {
          /* parseStrictBody below says what is wrong */
        }
        const credentials = isPlainObject(raw) && 'token' in raw ? parseStrictBody(req, TokenLoginBodySchema) : parseStrictBody(req, PasswordLoginBodySchema);
        const result = await deps.bus.send(USER_COMMANDS.login, { ip: ip(req), credentials });
        return 'requires_2fa' in result ? json(200, result) : session(req, result);
      },
    },
    {
      method: 'POST',
      pattern: '/api/auth/2fa/login',
      summary: 'Complete a login with the temp token and a TOTP code',
      body: TwoFactorLoginBodySchema,
      auth: 'public',
      maxBodyBytes: AUTH_BODY_BYTES,
      handler: async (req) => {
        const tooMany = limited(req);
        if (tooMany) return tooMany;
        // Parsed by hand, after the limit: a malformed attempt counts (and is refused 429) like any other.
        const body = parseStrictBody(req, TwoFactorLoginBodySchema);
        return session(req, await deps.bus.send(USER_COMMANDS.loginTwoFactor, { ip: ip(req), ...body }));
      },
    },
    {
      method: 'POST',
      pattern: '/api/auth/refresh',
      summary: 'A new access token (the refresh token rotates; a reused one ends its family)',
      auth: 'public',
      maxBodyBytes: AUTH_BODY_BYTES,
      ...withBody(RefreshBodySchema, async (body, req) => {
        const token = refreshToken(body, req);
        if (token === null) throw new SvcError('invalid-credentials', `send {"refresh_token": ...} or the ${AUTH_COOKIES.refresh} cookie`);
        return session(req, await deps.bus.send(USER_COMMANDS.refresh, { ip: ip(req), refresh_token: token }));
      }),
    },
    {
      // Public: it must work once the access token has expired; the refresh token is the proof.
      method: 'POST',
      pattern: '/api/auth/logout',
      summary: 'Log out: the refresh token is revoked',
      auth: 'public',
      maxBodyBytes: AUTH_BODY_BYTES,
      ...withBody(RefreshBodySchema, async (body, req) => {
        const token = refreshToken(body, req);
        await deps.bus.send(USER_COMMANDS.logout, { ip: ip(req), refresh_token: token });
        const gone = { secure: secure(req) };
        return {
          status: 200,
          json: { ok: true },
          cookies: [AUTH_COOKIES.access, AUTH_COOKIES.refresh, AUTH_COOKIES.csrf, AUTH_COOKIES.csrfAlias].map((n) =>
            cookie(n, '', 0, { ...gone, httpOnly: n === AUTH_COOKIES.access || n === AUTH_COOKIES.refresh }),
          ),
        };
      }),
    },
    {
      method: 'GET',
      pattern: '/api/auth/me',
      summary: 'The caller, as users.json says now',
      auth: adminAuth('account.self'),
      handler: (_req, principal) => {
        if (principal.id === null) return json(200, LEGACY_ADMIN_INFO);
        const row = deps.users().find((u) => u.username === principal.id);
        if (!row) throw new SvcError('invalid-credentials', 'this account no longer exists');
        return json(200, userInfo(row));
      },
    },
    {
      method: 'PUT',
      pattern: '/api/auth/profile',
      summary: 'Change your display name, avatar or password',
      auth: adminAuth('account.self'),
      maxBodyBytes: AUTH_BODY_BYTES,
      // Parsed first, then the limit: only a body with a password check counts as an attempt.
      ...withBody(ProfileBodySchema, async (changes, req, principal: Principal) => {
        // A password check is a login attempt to a thief holding an access token: the same per-address limit.
        if (changes.old_password !== undefined) {
          const tooMany = limited(req);
          if (tooMany) return tooMany;
        }
        return json(200, await deps.bus.send(USER_COMMANDS.profile, { principal, ip: ip(req), changes }));
      }),
    },
    {
      method: 'POST',
      pattern: '/api/auth/2fa/setup',
      summary: 'Start 2FA: a new TOTP secret and its otpauth URI',
      auth: adminAuth('account.self'),
      maxBodyBytes: AUTH_BODY_BYTES,
      handler: async (req, principal) => json(200, await deps.bus.send(USER_COMMANDS.totpSetup, { principal, ip: ip(req) })),
    },
    {
      method: 'POST',
      pattern: '/api/auth/2fa/verify',
      summary: 'Turn 2FA on with a code from the new secret',
      auth: adminAuth('account.self'),
      maxBodyBytes: AUTH_BODY_BYTES,
      ...withBody(TotpCodeBodySchema, async (body, req, principal: Principal) => json(200, await deps.bus.send(USER_COMMANDS.totpVerify, { principal, ip: ip(req), ...body }))),
    },
    {
      method: 'POST',
      pattern: '/api/auth/2fa/disable',
      summary: 'Turn 2FA off (a current code and the password)',
      auth: adminAuth('account.self'),
      maxBodyBytes: AUTH_BODY_BYTES,
      // Parsed first, then the limit: a malformed body is refused without counting as an attempt.
      ...withBody(TotpDisableBodySchema, async (body, req, principal: Principal) => {
        // It checks the password and a code: the same per-address limit as a login.
        const tooMany = limited(req);
        if (tooMany) return tooMany;
        return json(200, await deps.bus.send(USER_COMMANDS.totpDisable, { principal, ip: ip(req), ...body }));
      }),
    },
    {
      method: 'POST',
      pattern: '/api/dashboard/errors/ack',
      summary: 'Acknowledge the errors shown so far (per user)',
      auth: adminAuth('dashboard.ack-errors'),
      maxBodyBytes: AUTH_BODY_BYTES,
      handler: async (req, principal) => json(200, await deps.bus.send(USER_COMMANDS.ackErrors, { principal, ip: ip(req) })),
    },
  ];
}
