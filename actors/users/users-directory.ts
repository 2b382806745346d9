// Longer than 450 lines: the one writer of users.json rows and refresh-token state; each command's
// load → modify → save must stay synchronous beside the others, so they live in one subscription.
import { Subscription } from 'rxjs';
import QRCode from 'qrcode';
import { causedBy, type Bus, type Cause, type Command } from '../../bus/index.js';
import {
  AUDIT_EVENTS,
  AUDIT_STREAM,
  LEGACY_ADMIN_INFO,
  SvcError,
  TOKEN_TYPES,
  USER_COMMANDS,
  USER_EVENTS,
  staticTokenFingerprint,
  userInfo,
  userStream,
  type AgentConfig,
  type CommandData,
  type CommandReply,
  type Principal,
  type TokenPair,
  type UserRecord,
} from '../../schemas/index.js';
import { loadRefreshTokens, loadUsers, saveRefreshTokens, saveUsers, type HomePaths } from '../../store/index.js';
import { burnPasswordCheck, hashPassword, verifyPassword } from './password.js';
import { LoginThrottle } from './login-throttle.js';
import { ACCESS_TTL_S, REFRESH_TTL_S, TWO_FACTOR_TTL_S, issueToken, newTokenId, sha256Hex, verifyToken } from './tokens.js';
import { acceptTotp, newTotpSecret, totpUri } from './totp.js';
import { randomInt, timingSafeEqual } from 'node:crypto';

/*
 * The users directory: the daemon's one writer of users.json rows and of refresh-token state. Every
 * change is a synchronous load → modify → save (no await in between, so a concurrent writer such as
 * `svc users set-password` or another command is never overwritten with a stale copy); the slow
 * part (scrypt) is done before the load. Each change publishes a `user.*` fact and `audit.recorded`;
 * neither ever carries a password, hash, token or TOTP secret.
 */

export interface UsersDirectoryDeps {
  bus: Bus;
  paths: HomePaths;
  config: () => AgentConfig;
  /** api.jwt_secret as it is now (generated at start when missing). */
  jwtSecret: () => string;
  /** api.token as it is now (generated at start when missing); default: config's. */
  apiToken?: () => string;
  throttle?: LoginThrottle;
}

type Cmd<K extends keyof typeof USER_COMMANDS> = Command<string, CommandData<(typeof USER_COMMANDS)[K]>>;

/** One message for every refused login: it never tells a wrong name from a wrong password or a disabled account. */
const badLogin = () => new SvcError('invalid-credentials', 'wrong username or password');
const badToken = () => new SvcError('invalid-credentials', 'the token is invalid, expired or revoked; log in again');
const nowS = (ms: number) => Math.floor(ms / 1000);

function staticTokenMatches(presented: string, token: string): boolean {
  if (token === '') return false;
  const a = Buffer.from(presented);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

function activeAdmins(users: readonly UserRecord[]): number {
  return users.filter((u) => u.role === 'admin' && u.active).length;
}

export function startUsersDirectory(deps: UsersDirectoryDeps): Subscription {
  const { bus, paths } = deps;
  const throttle = deps.throttle ?? new LoginThrottle();
  const apiToken = deps.apiToken ?? (() => deps.config().api.token);
  const now = () => bus.now();

  /** Load → change → save, synchronously; `change` returns the row it changed (or throws, saving nothing). */
  const mutate = <R>(change: (users: UserRecord[]) => R): R => {
    const users = loadUsers(paths);
    const result = change(users);
    saveUsers(paths, users);
    return result;
  };
  const findUser = (username: string): UserRecord | undefined => loadUsers(paths).find((u) => u.username === username);
  const self = (p: Principal, what: string): string => {
    if (p.id === null) throw new SvcError('legacy-admin', `the static API token has no user record: ${what} needs a user login`);
    return p.id;
  };

  const audit = (cmd: Cause | null, actor: string | null, action: string, target: string | null, status: number, ip: string | null, detail?: Record<string, string | number | boolean | null>) =>
    bus.publish({ stream: AUDIT_STREAM, type: AUDIT_EVENTS.recorded, data: { actor, action, target, status, ip, ...(detail ? { detail } : {}) }, ...(cmd ? causedBy(cmd) : {}) });
  const updated = (cmd: Cmd<keyof typeof USER_COMMANDS>, u: UserRecord, fields: string[], by: string | null) =>
    bus.publish({ stream: userStream(u.username), type: USER_EVENTS.updated, data: { username: u.username, fields, token_version: u.token_version, active: u.active, by }, ...causedBy(cmd) });

  // ---- tokens -------------------------------------------------------------------------------

  /** A new refresh family (one per login) or the next token of one; its jti hash is what may be used next. */
  const issuePair = async (user: UserRecord | null, family: string | null, presentedJti: string | null = null): Promise<TokenPair> => {
    const secret = deps.jwtSecret();
    const t = now();
    const fam = family ?? newTokenId();
    const legacy = user === null;
    const sub = user?.username ?? '';
    const tv = user ? user.token_version : staticTokenFingerprint(apiToken());
    const role = user?.role ?? 'admin';
    const access = await issueToken(secret, t, { typ: TOKEN_TYPES.access, sub, tv, fam, role, legacy, ttlS: ACCESS_TTL_S });
    const refresh = await issueToken(secret, t, { typ: TOKEN_TYPES.refresh, sub, tv, fam, legacy, ttlS: REFRESH_TTL_S });
    const state = loadRefreshTokens(paths);
    const existing = state.families[fam];
    // A family revoked while this refresh was being signed stays revoked.
    if (family !== null && (!existing || existing.revoked)) throw badToken();
    // Two refreshes racing with one token: only the first rotates it; the second is refused.
    if (family !== null && presentedJti !== null && existing!.current !== sha256Hex(presentedJti)) throw badToken();
    state.families[fam] = { username: sub, current: sha256Hex(refresh.jti), expires_at: nowS(t) + REFRESH_TTL_S, revoked: false };
    saveRefreshTokens(paths, state, nowS(t));
    return {
      access_token: access.token,
      refresh_token: refresh.token,
      token_type: 'bearer',
      expires_in: ACCESS_TTL_S,
      refresh_expires_in: REFRESH_TTL_S,
      user: user ? userInfo(user) : LEGACY_ADMIN_INFO,
    };
  };

  const revokeFamily = (fam: string): boolean => {
    const state = loadRefreshTokens(paths);
    const f = state.families[fam];
    if (!f || f.revoked) return false;
    f.revoked = true;
    saveRefreshTokens(paths, state, nowS(now()));
    return true;
  };

  /**
   * Ends the access tokens of `username` now, not when they expire (15 min): the token_version
   * moves on, so the edge refuses them at their next request and the admin socket closes the
   * user's connections. The version is per account, so this ends every sign-in of it (each device
   * logs in again): the price of a revocation that needs no per-request lookup of token ids. The
   * legacy admin (the static token) has no row; its tokens die only with api.token.
   */
  const endAccessTokens = async (cmd: Cmd<'logout'> | Cmd<'refresh'>, username: string): Promise<void> => {
    if (username === '') return;
    const u = mutate((users) => {
      const row = users.find((x) => x.username === username);
      if (row) row.token_version += 1;
      return row;
    });
    if (u) await updated(cmd, u, ['token_version'], username);
  };

  /**
   * A password (or 2FA code) checked for a signed-in user: under the same per-account lockout as a
   * login, and each wrong one counts toward it, so a stolen access token cannot guess the password.
   */
  const assertNotLocked = async (cmd: Cmd<'profile'> | Cmd<'totpDisable'>, username: string): Promise<void> => {
    const lockedFor = throttle.lockedFor(username, now());
    if (lockedFor > 0) {
      await audit(cmd, username, 'auth.password_check_locked', username, 429, cmd.data.ip);
      throw new SvcError('account-locked', `too many failed password checks for this account; try again in ${Math.ceil(lockedFor / 60_000)} min`);
    }
  };
  const checkFailed = async (cmd: Cmd<'profile'> | Cmd<'totpDisable'>, username: string): Promise<void> => {
    throttle.failed(username, now());
    await audit(cmd, username, 'auth.password_check_failed', username, 400, cmd.data.ip);
  };

  /** The live row a token speaks for, when it still may: present, active, same token_version. */
  const liveUser = (claims: { sub: string; tv: number; legacy?: true | undefined }): UserRecord | null | 'legacy' => {
    if (claims.legacy) return claims.tv === staticTokenFingerprint(apiToken()) && apiToken() !== '' ? 'legacy' : null;
    const u = findUser(claims.sub);
    return u && u.active && u.token_version === claims.tv ? u : null;
  };

  // ---- login --------------------------------------------------------------------------------

  const login = async (cmd: Cmd<'login'>): Promise<CommandReply<typeof USER_COMMANDS.login>> => {
    const { credentials, ip } = cmd.data;
    if ('token' in credentials) {
      if (!staticTokenMatches(credentials.token, apiToken())) {
        await audit(cmd, null, 'auth.login_failed', null, 401, ip, { method: 'token' });
        throw badLogin();
      }
      const pair = await issuePair(null, null);
      await audit(cmd, null, 'auth.login', null, 200, ip, { method: 'token' });
      return pair;
    }
    const { username, password } = credentials;
    const t = now();
    const lockedFor = throttle.lockedFor(username, t);
    if (lockedFor > 0) {
      await audit(cmd, null, 'auth.login_locked', username, 429, ip);
      throw new SvcError('account-locked', `too many failed logins for this account; try again in ${Math.ceil(lockedFor / 60_000)} min`);
    }
    const found = findUser(username);
    const ok = found && found.password_hash !== '' ? await verifyPassword(password, found.password_hash) : (await burnPasswordCheck(password), false);
    if (!ok || !found || !found.active) {
      throttle.failed(username, t);
      await audit(cmd, null, 'auth.login_failed', username, 401, ip);
      throw badLogin();
    }
    // With a second factor to come, failures so far stand until it succeeds: a right password
    // alone must not reset the count that limits guessing the code.
    if (found.totp_enabled && found.totp_secret) {
      const temp = await issueToken(deps.jwtSecret(), t, { typ: TOKEN_TYPES.twoFactor, sub: found.username, tv: found.token_version, ttlS: TWO_FACTOR_TTL_S });
      await audit(cmd, found.username, 'auth.login_2fa_required', found.username, 200, ip);
      return { requires_2fa: true, temp_token: temp.token };
    }
    throttle.succeeded(username);
    const pair = await issuePair(found, null);
    await audit(cmd, found.username, 'auth.login', found.username, 200, ip);
    return pair;
  };

  /** Checks a TOTP code for `username` and records its step, in one synchronous write. */
  const consumeTotp = (username: string, code: string, wantEnabled: boolean): UserRecord =>
    mutate((users) => {
      const u = users.find((x) => x.username === username);
      if (!u || !u.totp_secret || u.totp_enabled !== wantEnabled) throw new SvcError('totp-state', wantEnabled ? '2FA is not enabled for this account' : 'start 2FA setup first (POST /api/auth/2fa/setup)');
      const step = acceptTotp(u.totp_secret, code, now(), u.totp_last_step ?? null);
      if (step === null) throw new SvcError('invalid-totp', 'wrong or already used 2FA code');
      u.totp_last_step = step;
      return u;
    });

  const loginTwoFactor = async (cmd: Cmd<'loginTwoFactor'>): Promise<TokenPair> => {
    const { temp_token, code, ip } = cmd.data;
    const claims = await verifyToken(deps.jwtSecret(), now(), temp_token, TOKEN_TYPES.twoFactor);
    const user = claims ? liveUser(claims) : null;
    if (!claims || user === null || user === 'legacy') throw badToken();
    const lockedFor = throttle.lockedFor(user.username, now());
    if (lockedFor > 0) throw new SvcError('account-locked', `too many failed logins for this account; try again in ${Math.ceil(lockedFor / 60_000)} min`);
    let checked: UserRecord;
    try {
      checked = consumeTotp(user.username, code, true);
    } catch (e) {
      throttle.failed(user.username, now());
      await audit(cmd, user.username, 'auth.login_failed', user.username, 401, ip, { method: '2fa' });
      throw e instanceof SvcError && e.code === 'invalid-totp' ? new SvcError('invalid-credentials', e.message) : e;
    }
    throttle.succeeded(user.username);
    await updated(cmd, checked, ['totp_last_step'], user.username);
    const pair = await issuePair(checked, null);
    await audit(cmd, user.username, 'auth.login', user.username, 200, ip, { method: '2fa' });
    return pair;
  };

  const refresh = async (cmd: Cmd<'refresh'>): Promise<TokenPair> => {
    const { refresh_token, ip } = cmd.data;
    const claims = await verifyToken(deps.jwtSecret(), now(), refresh_token, TOKEN_TYPES.refresh);
    if (!claims || !claims.fam) throw badToken();
    const fam = claims.fam;
    const family = loadRefreshTokens(paths).families[fam];
    if (!family || family.revoked) throw badToken();
    if (family.current !== sha256Hex(claims.jti)) {
      // A rotated token came back: someone holds a copy. End the whole login, theirs and ours,
      // the access tokens it handed out included.
      revokeFamily(fam);
      if (!claims.legacy) await endAccessTokens(cmd, claims.sub);
      await audit(cmd, claims.sub || null, 'auth.refresh_reuse', claims.sub || null, 401, ip);
      throw badToken();
    }
    const user = liveUser(claims);
    if (user === null) {
      revokeFamily(fam);
      throw badToken();
    }
    return issuePair(user === 'legacy' ? null : user, fam, claims.jti);
  };

  const logout = async (cmd: Cmd<'logout'>): Promise<{ ok: true }> => {
    const { refresh_token, ip } = cmd.data;
    if (refresh_token === null) return { ok: true };
    // An expired refresh token still names the family to end; only the signature must hold.
    const claims = await verifyToken(deps.jwtSecret(), 0, refresh_token, TOKEN_TYPES.refresh);
    if (claims?.fam) {
      // Only a live sign-in ends the account's access tokens: an old, already revoked refresh
      // token replayed to /logout must not become a way to log the user out everywhere.
      if (revokeFamily(claims.fam) && !claims.legacy) await endAccessTokens(cmd, claims.sub);
      await audit(cmd, claims.sub || null, 'auth.logout', claims.sub || null, 200, ip);
    }
    return { ok: true };
  };

  // ---- own account --------------------------------------------------------------------------

  const profile = async (cmd: Cmd<'profile'>) => {
    const { principal, changes } = cmd.data;
    const username = self(principal, 'a profile');
    if (changes.new_password !== undefined && changes.old_password === undefined) throw new SvcError('invalid-body', 'body.old_password: required to set new_password');
    if (changes.old_password !== undefined && changes.new_password === undefined) throw new SvcError('invalid-body', 'body.new_password: required with old_password');
    let hash: string | null = null;
    if (changes.new_password !== undefined) {
      await assertNotLocked(cmd, username);
      const current = findUser(username);
      if (!current || !(await verifyPassword(changes.old_password!, current.password_hash))) {
        await checkFailed(cmd, username);
        throw new SvcError('invalid-body', 'body.old_password: does not match the current password');
      }
      hash = await hashPassword(changes.new_password);
    }
    const fields: string[] = [];
    const u = mutate((users) => {
      const row = users.find((x) => x.username === username);
      if (!row) throw new SvcError('not-found', 'your user record no longer exists');
      if (changes.display_name !== undefined) (row.display_name = changes.display_name), fields.push('display_name');
      if (changes.avatar !== undefined) (row.avatar = changes.avatar), fields.push('avatar');
      if (hash !== null) {
        row.password_hash = hash;
        // Every session of this account ends, the one that changed it included (it logs in again).
        row.token_version += 1;
        fields.push('password');
      }
      return row;
    });
    if (fields.length) await updated(cmd, u, fields, username);
    return userInfo(u);
  };

  const totpSetup = async (cmd: Cmd<'totpSetup'>) => {
    const username = self(cmd.data.principal, '2FA');
    const secret = newTotpSecret();
    mutate((users) => {
      const row = users.find((x) => x.username === username);
      if (!row) throw new SvcError('not-found', 'your user record no longer exists');
      if (row.totp_enabled) throw new SvcError('totp-state', '2FA is already enabled; disable it first');
      row.totp_secret = secret;
      row.totp_last_step = null;
      return row;
    });
    const uri = totpUri(secret, username);
    // The panel shows qr_data as an <img>: a PNG data URL an authenticator app can scan.
    return { secret, otpauth_uri: uri, qr_data: await QRCode.toDataURL(uri, { type: 'image/png', errorCorrectionLevel: 'M', margin: 2, scale: 6 }) };
  };

  const totpVerify = async (cmd: Cmd<'totpVerify'>) => {
    const username = self(cmd.data.principal, '2FA');
    const u = mutate((users) => {
      const row = users.find((x) => x.username === username);
      if (!row || !row.totp_secret || row.totp_enabled) throw new SvcError('totp-state', row?.totp_enabled ? '2FA is already enabled' : 'start 2FA setup first (POST /api/auth/2fa/setup)');
      const step = acceptTotp(row.totp_secret, cmd.data.code, now(), row.totp_last_step ?? null);
      if (step === null) throw new SvcError('invalid-totp', 'wrong or already used 2FA code');
      row.totp_last_step = step;
      row.totp_enabled = true;
      return row;
    });
    await updated(cmd, u, ['totp'], username);
    return { status: 'enabled', totp_enabled: true };
  };

  const totpDisable = async (cmd: Cmd<'totpDisable'>) => {
    const username = self(cmd.data.principal, '2FA');
    await assertNotLocked(cmd, username);
    const current = findUser(username);
    // Whether 2FA is on is the caller's own, known state: said before the password is looked at,
    // so no answer below tells a right password from a wrong one.
    if (!current || !current.totp_enabled || !current.totp_secret) throw new SvcError('totp-state', '2FA is not enabled for this account');
    // One answer for a wrong password and a wrong code: neither tells which half was right.
    const wrong = () => new SvcError('invalid-body', 'body: the password or the 2FA code is wrong');
    if (!(await verifyPassword(cmd.data.password, current.password_hash))) {
      await checkFailed(cmd, username);
      throw wrong();
    }
    try {
      consumeTotp(username, cmd.data.code, true);
    } catch (e) {
      if (!(e instanceof SvcError) || e.code !== 'invalid-totp') throw e;
      await checkFailed(cmd, username);
      throw wrong();
    }
    const u = mutate((users) => {
      const row = users.find((x) => x.username === username);
      if (!row) throw new SvcError('not-found', 'your user record no longer exists');
      row.totp_enabled = false;
      row.totp_secret = null;
      row.totp_last_step = null;
      return row;
    });
    await updated(cmd, u, ['totp'], username);
    return { status: 'disabled', totp_enabled: false };
  };

  const ackErrors = async (cmd: Cmd<'ackErrors'>) => {
    const username = self(cmd.data.principal, 'acknowledging errors');
    const ackAt = now() / 1000;
    const u = mutate((users) => {
      const row = users.find((x) => x.username === username);
      if (!row) throw new SvcError('not-found', 'your user record no longer exists');
      row.errors_ack_at = ackAt;
      return row;
    });
    await updated(cmd, u, ['errors_ack_at'], username);
    return { ok: true as const, ack_at: ackAt };
  };

  // ---- users CRUD (admin) -------------------------------------------------------------------

  /**
   * Users decide who may use which agent, so only an admin who may use every agent manages them:
   * an admin limited by allowed_agents could otherwise lift its own limit or take over another admin.
   */
  const assertUnrestricted = (principal: Principal) => {
    const list = principal.allowed_agents;
    if (list.length > 0 && !list.includes('*')) throw new SvcError('forbidden', 'managing users needs an admin with access to every agent (allowed_agents empty or ["*"])');
  };

  /** Ends every refresh family of a user: a deleted, deactivated or reset account keeps no session. */
  const revokeFamilies = (username: string) => {
    const state = loadRefreshTokens(paths);
    let changed = false;
    for (const f of Object.values(state.families)) if (f.username === username && !f.revoked) (f.revoked = true), (changed = true);
    if (changed) saveRefreshTokens(paths, state, nowS(now()));
  };

  const create = async (cmd: Cmd<'create'>) => {
    const { principal, user: body } = cmd.data;
    assertUnrestricted(principal);
    const hash = await hashPassword(body.password);
    const row = mutate((users) => {
      if (users.some((u) => u.username === body.username)) throw new SvcError('user-exists', `body.username: user ${JSON.stringify(body.username)} already exists`);
      const fresh: UserRecord = {
        username: body.username,
        role: body.role,
        active: body.active ?? true,
        allowed_agents: body.allowed_agents ?? [],
        telegram_user_ids: body.telegram_user_ids ?? [],
        // Not 0: a token of an earlier user of the same name must never match the new row.
        token_version: randomInt(1, 2 ** 31),
        errors_ack_at: null,
        display_name: body.display_name ?? '',
        avatar: null,
        password_hash: hash,
        totp_secret: null,
        totp_enabled: false,
        totp_last_step: null,
        created_at: nowS(now()),
      };
      users.push(fresh);
      return fresh;
    });
    await bus.publish({ stream: userStream(row.username), type: USER_EVENTS.created, data: { username: row.username, role: row.role, by: principal.id }, ...causedBy(cmd) });
    return userInfo(row);
  };

  const update = async (cmd: Cmd<'update'>) => {
    const { principal, username, changes } = cmd.data;
    assertUnrestricted(principal);
    const hash = changes.password !== undefined ? await hashPassword(changes.password) : null;
    const fields: string[] = [];
    const row = mutate((users) => {
      const u = users.find((x) => x.username === username);
      if (!u) throw new SvcError('not-found', `user ${JSON.stringify(username)} does not exist`);
      if (changes.role !== undefined && changes.role !== u.role) (u.role = changes.role), fields.push('role');
      if (changes.active !== undefined && changes.active !== u.active) {
        u.active = changes.active;
        // Reactivating must not revive the tokens the account had when it was turned off.
        if (!u.active) u.token_version += 1;
        fields.push('active');
      }
      if (changes.allowed_agents !== undefined) (u.allowed_agents = changes.allowed_agents), fields.push('allowed_agents');
      if (changes.telegram_user_ids !== undefined) (u.telegram_user_ids = changes.telegram_user_ids), fields.push('telegram_user_ids');
      if (changes.display_name !== undefined) (u.display_name = changes.display_name), fields.push('display_name');
      if (changes.totp_enabled === false && u.totp_enabled) {
        u.totp_enabled = false;
        u.totp_secret = null;
        u.totp_last_step = null;
        fields.push('totp');
      }
      if (hash !== null) {
        u.password_hash = hash;
        u.token_version += 1;
        fields.push('password');
      }
      if (activeAdmins(users) === 0) throw new SvcError('last-admin', `${username} is the last active admin: it cannot be demoted or deactivated`);
      return u;
    });
    if (!row.active || hash !== null) revokeFamilies(row.username);
    if (fields.length) await updated(cmd, row, fields, principal.id);
    return userInfo(row);
  };

  const remove = async (cmd: Cmd<'delete'>) => {
    const { principal, username } = cmd.data;
    assertUnrestricted(principal);
    mutate((users) => {
      const i = users.findIndex((x) => x.username === username);
      if (i < 0) throw new SvcError('not-found', `user ${JSON.stringify(username)} does not exist`);
      users.splice(i, 1);
      if (activeAdmins(users) === 0) throw new SvcError('last-admin', `${username} is the last active admin: it cannot be deleted`);
    });
    revokeFamilies(username);
    await bus.publish({ stream: userStream(username), type: USER_EVENTS.deleted, data: { username, by: principal.id }, ...causedBy(cmd) });
    return { username, deleted: true as const };
  };

  const subs = new Subscription();
  const C = USER_COMMANDS;
  subs.add(bus.handle(C.login, 'users', login));
  subs.add(bus.handle(C.loginTwoFactor, 'users', loginTwoFactor));
  subs.add(bus.handle(C.refresh, 'users', refresh));
  subs.add(bus.handle(C.logout, 'users', logout));
  subs.add(bus.handle(C.profile, 'users', profile));
  subs.add(bus.handle(C.totpSetup, 'users', totpSetup));
  subs.add(bus.handle(C.totpVerify, 'users', totpVerify));
  subs.add(bus.handle(C.totpDisable, 'users', totpDisable));
  subs.add(bus.handle(C.ackErrors, 'users', ackErrors));
  subs.add(bus.handle(C.create, 'users', create));
  subs.add(bus.handle(C.update, 'users', update));
  subs.add(bus.handle(C.delete, 'users', remove));
  return subs;
}
