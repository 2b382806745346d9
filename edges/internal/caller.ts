import { createHash, timingSafeEqual } from 'node:crypto';
import { MAIN_AGENT, SvcError, type SubAgentConfig, type UserRecord } from '../../schemas/index.js';

/*
 * Who is calling the internal API and whether they may reach the recipient (SPEC.md "Inter-agent
 * authentication"): the agent proves itself with its `interagent_token` as a bearer token; the
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
 * Authenticates the calling agent `from`. Returns its registry entry, or null for the main agent.
 * A sub-agent without `interagent_token` is let through (SPEC: legacy token-less mode) with a warning.
 */
export function authenticateAgent(dir: CallerDirectory, from: string, headers: Record<string, string>, warn: Warn): SubAgentConfig | null {
  if (from === MAIN_AGENT) {
    authenticateMain(dir, headers);
    return null;
  }
  const entry = dir.registry().find((e) => e.name === from);
  if (!entry) throw new SvcError('unknown-caller', `calling agent "${from}" is not in the registry, so its token cannot be checked`);
  const expected = entry.interagent_token;
  if (typeof expected !== 'string' || expected === '') {
    warn(`inter-agent call from "${from}" accepted without a token (legacy mode): set interagent_token for "${from}" in agents.json`, { agent: from });
    return entry;
  }
  const given = bearerToken(headers);
  if (given === null) throw new SvcError('unauthorized', `missing "Authorization: Bearer <token>" header (the interagent_token of "${from}")`);
  if (!tokensEqual(given, expected)) throw new SvcError('unauthorized', `wrong interagent_token for "${from}"`);
  return entry;
}

/** A second copy of machines' agentAllowed, until authorization moves where commands are handled: empty list or `*` is every agent. */
function userMayUse(user: Pick<UserRecord, 'active' | 'allowed_agents'>, agent: string): boolean {
  if (!user.active) return false;
  const list = user.allowed_agents;
  return list.length === 0 || list.includes('*') || list.includes(agent);
}

/** The person the call is made for, from the header only; null when the header is absent (a system call). */
export function callerUser(dir: Pick<CallerDirectory, 'users'>, headers: Record<string, string>): UserRecord | null {
  const raw = headers[CALLER_USER_HEADER];
  if (raw === undefined || raw.trim() === '') return null;
  const name = raw.trim();
  const user = dir.users().find((u) => u.username === name);
  if (!user) throw new SvcError('unknown-user', `caller user "${name}" (X-SVC-Caller-User-Id) has no user record`);
  if (!user.active) throw new SvcError('unknown-user', `caller user "${name}" (X-SVC-Caller-User-Id) is disabled`);
  return user;
}

/** Whether `from` (acting for `user`) may reach `to`: the user's allowed_agents, then the agent's can_call. */
export function authoriseCall(opts: { from: string; entry: SubAgentConfig | null; to: string; user: UserRecord | null }, warn: Warn): void {
  const { from, entry, to, user } = opts;
  if (user && !userMayUse(user, to)) {
    throw new SvcError('agent-not-allowed', `user "${user.username}" may not use agent "${to}" (allowed_agents: ${user.allowed_agents.join(', ')})`);
  }
  if (!entry) return; // the main agent has no can_call list: it may call every agent
  const canCall = entry.can_call;
  if (canCall === undefined || canCall === null) {
    warn(`agent "${from}" has no can_call list; allowing its call to "${to}" (legacy mode): set can_call for "${from}" in agents.json`, { agent: from, to });
    return;
  }
  if (!canCall.includes(to) && !canCall.includes('*')) {
    throw new SvcError('call-not-allowed', `agent "${from}" may not call "${to}" (can_call: ${canCall.length ? canCall.join(', ') : 'empty'})`);
  }
}

/** Which of `names` the caller may see: the user's allowed_agents and, when present, the agent's can_call. */
export function visibleAgents(names: readonly string[], opts: { from: string; entry: SubAgentConfig | null; user: UserRecord | null }): Set<string> {
  const out = new Set<string>();
  for (const name of names) {
    if (name === opts.from) continue;
    if (opts.user && !userMayUse(opts.user, name)) continue;
    const canCall = opts.entry?.can_call;
    if (canCall && !canCall.includes(name) && !canCall.includes('*')) continue;
    out.add(name);
  }
  return out;
}
