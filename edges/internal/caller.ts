import { createHash, timingSafeEqual } from 'node:crypto';
import { MAIN_AGENT, SvcError, actingUser, type Origin, type Principal, type SubAgentConfig, type UserRecord } from '../../schemas/index.js';

/*
 * Who is calling the internal API (SPEC.md "Inter-agent authentication"), as a Principal: the agent proves itself with its `interagent_token` as a bearer token; the
 * person it acts for comes only from `X-SVC-Caller-User-Id` (the tool script forwards env
 * SVC_CALLER_USER_ID, which the framework set from the authenticated transport).
 */

export { MAIN_AGENT };
export const CALLER_USER_HEADER = 'x-svc-caller-user-id';

export interface CallerDirectory {
  registry(): SubAgentConfig[];
  users(): UserRecord[];
  mainAgentToken(): string | null;
}

export type Warn = (msg: string, fields?: Record<string, unknown>) => void;

export function bearerToken(headers: Record<string, string>): string | null {
  const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(headers.authorization ?? '');
  return m ? m[1]! : null;
}

/** Constant time in the secret's content and length: both sides are hashed to 32 bytes first. */
export function tokensEqual(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given, 'utf8').digest();
  const b = createHash('sha256').update(expected, 'utf8').digest();
  return timingSafeEqual(a, b) && given.length === expected.length;
}

/** The main agent plus every registry entry. */
export function knownAgentNames(dir: Pick<CallerDirectory, 'registry'>): Set<string> {
  return new Set([MAIN_AGENT, ...dir.registry().map((e) => e.name)]);
}

export function requireKnownAgent(dir: Pick<CallerDirectory, 'registry'>, name: string): void {
  if (!knownAgentNames(dir).has(name)) {
    throw new SvcError('unknown-agent', `no agent named "${name}" (known: ${[...knownAgentNames(dir)].join(', ')})`);
  }
}

/** `svc ask` and main-agent calls: the token in `_secrets/main_agent_token.json`. */
export function authenticateMain(dir: Pick<CallerDirectory, 'mainAgentToken'>, headers: Record<string, string>): void {
  const expected = dir.mainAgentToken();
  if (expected === null) throw new SvcError('unauthorized', 'the main agent token is not set up (_secrets/main_agent_token.json is missing)');
  const given = bearerToken(headers);
  if (given === null) throw new SvcError('unauthorized', 'missing "Authorization: Bearer <token>" header (the main agent token)');
  if (!tokensEqual(given, expected)) throw new SvcError('unauthorized', 'wrong token for the main agent');
}

/**
 * Authenticates the calling agent `from` (the main agent or a registry entry). A sub-agent without
 * `interagent_token` is let through (SPEC: legacy token-less mode) with a warning; the answer says
 * so (`tokenless`), because then nothing proves who is calling.
 */
export function authenticateAgent(dir: CallerDirectory, from: string, headers: Record<string, string>, warn: Warn): { tokenless: boolean } {
  if (from === MAIN_AGENT) {
    authenticateMain(dir, headers);
    return { tokenless: false };
  }
  const entry = dir.registry().find((e) => e.name === from);
  if (!entry) throw new SvcError('unknown-caller', `calling agent "${from}" is not in the registry, so its token cannot be checked`);
  const expected = entry.interagent_token;
  if (typeof expected !== 'string' || expected === '') {
    warn(`inter-agent call from "${from}" accepted without a token (legacy mode): set interagent_token for "${from}" in agents.json`, { agent: from });
    return { tokenless: true };
  }
  const given = bearerToken(headers);
  if (given === null) throw new SvcError('unauthorized', `missing "Authorization: Bearer <token>" header (the interagent_token of "${from}")`);
  if (!tokensEqual(given, expected)) throw new SvcError('unauthorized', `wrong interagent_token for "${from}"`);
  return { tokenless: false };
}

/**
 * The agent whose token the request carries, for a request that names no agent: the main agent
 * token, or a registry entry's `interagent_token` (a token-less legacy entry can never match, so it
 * must name itself). Every candidate is compared, in constant time each.
 */
export function agentOfToken(dir: CallerDirectory, headers: Record<string, string>): string {
  const given = bearerToken(headers);
  if (given === null) throw new SvcError('unauthorized', 'missing "Authorization: Bearer <token>" header (the interagent_token of the calling agent)');
  let found: string | null = null;
  const main = dir.mainAgentToken();
  if (main !== null && tokensEqual(given, main)) found = MAIN_AGENT;
  for (const e of dir.registry()) {
    if (typeof e.interagent_token === 'string' && e.interagent_token !== '' && tokensEqual(given, e.interagent_token)) found ??= e.name;
  }
  if (found === null) throw new SvcError('unauthorized', "the bearer token is no agent's interagent_token (name the calling agent with `from`)");
  return found;
}

/** The person the call is made for, from the header only; null when the header is absent (a system call). */
export function callerUser(dir: Pick<CallerDirectory, 'users'>, headers: Record<string, string>): UserRecord | null {
  const raw = headers[CALLER_USER_HEADER];
  if (raw === undefined || raw.trim() === '') return null;
  return actingUser(dir.users(), raw.trim(), 'caller user (X-SVC-Caller-User-Id)');
}

/**
 * An authenticated agent as a Principal. It acts for `user` (role and allowed_agents from the user's
 * record); with no caller header the framework itself is asking (cron, webhooks, workflows): admin,
 * per SPEC. What it may reach is decided by the runtime.
 */
export function agentPrincipal(from: string, user: UserRecord | null, origin: Origin): Principal {
  return {
    kind: 'agent',
    id: from,
    acting_for: user?.username ?? null,
    role: user ? user.role : 'admin',
    allowed_agents: user ? user.allowed_agents : [],
    origin,
  };
}

/** `svc ask`: only the owner of the home can read the main agent token, so they are the service's admin. */
export function ownerPrincipal(): Principal {
  return { kind: 'user', id: null, acting_for: null, role: 'admin', allowed_agents: [], origin: { transport: 'cli', chat_id: null, topic_id: null } };
}
