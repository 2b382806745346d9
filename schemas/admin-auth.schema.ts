import { createHash } from 'node:crypto';
import * as v from 'valibot';
import { ROLES } from './config.schema.js';
import { PrincipalSchema } from './principal.schema.js';
import { USERNAME_MAX_LENGTH, type UserRecord } from './users.schema.js';

/*
 * The admin panel's login, token and user shapes (SPEC.md "Admin REST: authentication", "Admin
 * panel (JWT)", WIRE.md §2). Bodies are strict: an unknown field is a 400 naming it, not ignored.
 */

/** The `typ` claim: an access token is never accepted where a refresh or a 2FA temp token is, and back. */
export const TOKEN_TYPES = { access: 'access', refresh: 'refresh', twoFactor: '2fa-pending' } as const;
export type TokenType = (typeof TOKEN_TYPES)[keyof typeof TOKEN_TYPES];

/** The claims of every admin JWT, as issued by actors/users and checked by edges/admin. */
export const AdminTokenClaimsSchema = v.object({
  typ: v.picklist(Object.values(TOKEN_TYPES)),
  sub: v.string(),
  /** The user's token_version when it was issued; a reset moves the row on and the token dies. */
  tv: v.number(),
  jti: v.string(),
  /** Refresh family: one login, across its rotations. */
  fam: v.optional(v.string()),
  role: v.optional(v.picklist(ROLES)),
  /** Tokens of the static-token legacy admin: `tv` is then the fingerprint of api.token. */
  legacy: v.optional(v.literal(true)),
  exp: v.number(),
});
export type AdminTokenClaims = v.InferOutput<typeof AdminTokenClaimsSchema>;

/** Tokens of the legacy admin die when api.token changes: their `tv` is this fingerprint of it. */
export const staticTokenFingerprint = (token: string): number => parseInt(createHash('sha256').update(token).digest('hex').slice(0, 12), 16);

/**
 * Cookie names the panel's session rides on (WIRE.md §2). `sygen_csrf` is readable by the page for
 * the double submit: the name the existing sygen-admin panel reads its X-CSRF-Token from.
 * `csrfAlias` (`svc_csrf`) carries the same value beside it, for clients written against the older name.
 */
export const AUTH_COOKIES = { access: 'svc_access', refresh: 'svc_refresh', csrf: 'sygen_csrf', csrfAlias: 'svc_csrf' } as const;
export const CSRF_HEADER = 'x-csrf-token';

export const PASSWORD_MIN_LENGTH = 8;
/** scrypt takes any length; a cap keeps a hostile body from buying CPU per byte. */
export const PASSWORD_MAX_LENGTH = 1024;
const Password = v.pipe(v.string(), v.minLength(1, 'a non-empty password'), v.maxLength(PASSWORD_MAX_LENGTH));
const NewPassword = v.pipe(
  v.string(),
  v.minLength(PASSWORD_MIN_LENGTH, `at least ${PASSWORD_MIN_LENGTH} characters`),
  v.maxLength(PASSWORD_MAX_LENGTH, `at most ${PASSWORD_MAX_LENGTH} characters`),
);
const LoginName = v.pipe(v.string(), v.minLength(1, 'a non-empty username'), v.maxLength(USERNAME_MAX_LENGTH));
const Username = v.pipe(
  v.string(),
  v.regex(/^[A-Za-z0-9._@-]{1,64}$/, `1..${USERNAME_MAX_LENGTH} letters, digits or . _ @ -`),
);
const TotpCode = v.pipe(v.string(), v.regex(/^\d{6}$/, 'six digits'));
const Jwt = v.pipe(v.string(), v.minLength(1), v.maxLength(4096));
const AgentName = v.pipe(v.string(), v.minLength(1), v.maxLength(128));
const DisplayName = v.pipe(v.string(), v.maxLength(128));
/** A stored avatar's file name, never a path: whoever serves it must not be led out of the avatars directory. */
const Avatar = v.nullable(v.pipe(v.string(), v.regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, 'a file name (letters, digits, . _ -), or null')));
const SenderIds = v.array(v.pipe(v.number(), v.safeInteger('a whole number (numeric sender id)')));

/** `{username, password}`, or `{token}` (the static api.token, SPEC.md "login ... or an API token"). */
export const PasswordLoginBodySchema = v.strictObject({ username: LoginName, password: Password });
export const TokenLoginBodySchema = v.strictObject({ token: v.pipe(v.string(), v.minLength(1), v.maxLength(1024)) });
export const LoginBodySchema = v.union([PasswordLoginBodySchema, TokenLoginBodySchema]);
export const TwoFactorLoginBodySchema = v.strictObject({ temp_token: Jwt, code: TotpCode });
/** The refresh token comes in the body or, for the panel, in its httpOnly cookie. */
export const RefreshBodySchema = v.nullish(v.strictObject({ refresh_token: v.optional(Jwt) }));
export const ProfileBodySchema = v.strictObject({
  display_name: v.optional(DisplayName),
  old_password: v.optional(Password),
  new_password: v.optional(NewPassword),
  /** `""` is how the panel's "remove avatar" says null. */
  avatar: v.optional(v.union([v.pipe(v.literal(''), v.transform(() => null)), Avatar], 'a file name (letters, digits, . _ -), "" or null')),
});
export const TotpCodeBodySchema = v.strictObject({ code: TotpCode });
export const TotpDisableBodySchema = v.strictObject({ code: TotpCode, password: Password });

export const CreateUserBodySchema = v.strictObject({
  username: Username,
  password: NewPassword,
  role: v.picklist(ROLES),
  display_name: v.optional(DisplayName),
  allowed_agents: v.optional(v.array(AgentName)),
  telegram_user_ids: v.optional(SenderIds),
  active: v.optional(v.boolean()),
});
export const UpdateUserBodySchema = v.strictObject({
  role: v.optional(v.picklist(ROLES)),
  password: v.optional(NewPassword),
  display_name: v.optional(DisplayName),
  allowed_agents: v.optional(v.array(AgentName)),
  telegram_user_ids: v.optional(SenderIds),
  active: v.optional(v.boolean()),
  /** An admin may only turn 2FA off for someone (lost phone); turning it on is the user's own setup. */
  totp_enabled: v.optional(v.literal(false)),
});

/** WIRE.md `UserInfo`: never a hash, a TOTP secret or token state. */
export const UserInfoSchema = v.object({
  username: v.string(),
  role: v.picklist(ROLES),
  display_name: v.string(),
  allowed_agents: v.array(v.string()),
  telegram_user_ids: v.array(v.number()),
  active: v.boolean(),
  created_at: v.number(),
  totp_enabled: v.boolean(),
  avatar: v.nullable(v.string()),
});
export type UserInfo = v.InferOutput<typeof UserInfoSchema>;

/** The row as the panel sees it: the hash, TOTP secret and token state stay behind. */
export function userInfo(u: UserRecord): UserInfo {
  return {
    username: u.username,
    role: u.role,
    display_name: u.display_name,
    allowed_agents: [...u.allowed_agents],
    telegram_user_ids: [...u.telegram_user_ids],
    active: u.active,
    created_at: u.created_at,
    totp_enabled: u.totp_enabled,
    avatar: u.avatar,
  };
}

/** The static-token legacy admin has no row; this is what `me` and a token login show for it. */
export const LEGACY_ADMIN_INFO: UserInfo = {
  username: 'api-token',
  role: 'admin',
  display_name: 'API token',
  allowed_agents: [],
  telegram_user_ids: [],
  active: true,
  created_at: 0,
  totp_enabled: false,
  avatar: null,
};

/** What the edge turns into the body and the cookies of a successful login or refresh. */
export const TokenPairSchema = v.object({
  access_token: v.string(),
  refresh_token: v.string(),
  token_type: v.literal('bearer'),
  /** Seconds. */
  expires_in: v.number(),
  refresh_expires_in: v.number(),
  user: UserInfoSchema,
});
export type TokenPair = v.InferOutput<typeof TokenPairSchema>;
export const LoginResultSchema = v.union([TokenPairSchema, v.object({ requires_2fa: v.literal(true), temp_token: v.string() })]);
export type LoginResult = v.InferOutput<typeof LoginResultSchema>;

export const TotpSetupSchema = v.object({ secret: v.string(), otpauth_uri: v.string(), qr_data: v.string() });
export const TotpStatusSchema = v.object({ status: v.string(), totp_enabled: v.boolean() });
export const ErrorsAckSchema = v.object({ ok: v.literal(true), ack_at: v.number() });
export const OkSchema = v.object({ ok: v.literal(true) });

/** Where the request came from, for audit facts and per-IP limits (null when not over HTTP). */
const Ip = v.nullable(v.pipe(v.string(), v.maxLength(64)));
const Caller = { principal: PrincipalSchema, ip: Ip };

export const LoginCommandSchema = v.strictObject({ ip: Ip, credentials: LoginBodySchema });
export const TwoFactorLoginCommandSchema = v.strictObject({ ip: Ip, temp_token: Jwt, code: TotpCode });
export const RefreshCommandSchema = v.strictObject({ ip: Ip, refresh_token: Jwt });
/** Proof enough is the refresh token itself: logout works after the access token expired. */
export const LogoutCommandSchema = v.strictObject({ ip: Ip, refresh_token: v.nullable(Jwt) });
export const ProfileCommandSchema = v.strictObject({ ...Caller, changes: ProfileBodySchema });
export const TotpSetupCommandSchema = v.strictObject({ ...Caller });
export const TotpVerifyCommandSchema = v.strictObject({ ...Caller, code: TotpCode });
export const TotpDisableCommandSchema = v.strictObject({ ...Caller, code: TotpCode, password: Password });
export const ErrorsAckCommandSchema = v.strictObject({ ...Caller });
export const CreateUserCommandSchema = v.strictObject({ ...Caller, user: CreateUserBodySchema });
export const UpdateUserCommandSchema = v.strictObject({ ...Caller, username: v.pipe(v.string(), v.maxLength(256)), changes: UpdateUserBodySchema });
export const DeleteUserCommandSchema = v.strictObject({ ...Caller, username: v.pipe(v.string(), v.maxLength(256)) });
export const DeleteUserResultSchema = v.object({ username: v.string(), deleted: v.literal(true) });
