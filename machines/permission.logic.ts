import { MAIN_AGENT, ROLES, type AgentConfig, type PermissionMode, type Principal, type Role, type SubAgentConfig, type UserRecord } from '../schemas/index.js';

/*
 * CLI permission mode by role (SPEC.md "CLI permission mode by role") and agent-scoped access. Every
 * surface turns its caller into a Principal whose role comes from the rows below (roleForSource);
 * the runtime then picks the mode from that role and decides access (agentAccess) where it handles
 * the command. Pure: user records and the registry arrive as arguments.
 */

/** Cron jobs, webhooks and background observers act for the owner of the service. */
export const SYSTEM_ROLE: Role = 'admin';

const ROLE_SET = new Set<string>(ROLES);

/** A role claim or field from outside (JWT, request body) as a Role; anything else is no role. */
export function asRole(value: unknown): Role | null {
  return typeof value === 'string' && ROLE_SET.has(value) ? (value as Role) : null;
}

/**
 * A role with an entry in `permission_mode_by_role` gets that mode; anything else gets
 * `permission_mode`. So `{}` is the legacy behaviour: everyone runs in `permission_mode`.
 */
export function resolvePermissionMode(
  config: Pick<AgentConfig, 'permission_mode' | 'permission_mode_by_role'>,
  role: Role | null,
): PermissionMode {
  const byRole = config.permission_mode_by_role as Partial<Record<string, PermissionMode>>;
  // hasOwn, not `in`: a role can never be "constructor" here, but the map came from a JSON file.
  if (role !== null && ROLE_SET.has(role) && Object.hasOwn(byRole, role)) {
    const mode = byRole[role];
    if (mode !== undefined) return mode;
  }
  return config.permission_mode;
}

/** Lower is less privileged; used to settle a sender id claimed by several records. */
const PRIVILEGE: Record<Role, number> = { viewer: 0, operator: 1, admin: 2 };

/** The less privileged of two roles: work done later for a caller gets no more than either allows. */
export function leastPrivileged(a: Role, b: Role): Role {
  return PRIVILEGE[a] <= PRIVILEGE[b] ? a : b;
}

type UserForRole = Pick<UserRecord, 'username' | 'role' | 'active' | 'telegram_user_ids'>;

/** Messenger sender ids arrive as numbers, or as digit strings from some transports. */
function senderNumber(senderId: number | string): number | null {
  if (typeof senderId === 'number') return Number.isSafeInteger(senderId) ? senderId : null;
  if (!/^-?\d{1,16}$/.test(senderId.trim())) return null;
  const n = Number(senderId.trim());
  return Number.isSafeInteger(n) ? n : null;
}

/**
 * The role of a messenger sender: the active record listing the id in `telegram_user_ids`. When a
 * hand-edited file gives one id to several active users, the least privileged role wins, so a
 * mistake never grants more than one of the records meant to.
 */
export function roleForMessengerSender(users: readonly UserForRole[], senderId: number | string): Role | null {
  const id = senderNumber(senderId);
  if (id === null) return null;
  let best: Role | null = null;
  for (const user of users) {
    if (!user.active || !user.telegram_user_ids.includes(id)) continue;
    const role = asRole(user.role);
    if (role !== null && (best === null || PRIVILEGE[role] < PRIVILEGE[best])) best = role;
  }
  return best;
}

/** The role of an inter-agent caller named by `SVC_CALLER_USER_ID` (a username); unknown or inactive: none. */
export function roleForCaller(users: readonly UserForRole[], callerUserId: string | undefined | null): Role | null {
  if (typeof callerUserId !== 'string' || callerUserId === '') return null;
  const user = users.find((u) => u.username === callerUserId);
  return user && user.active ? asRole(user.role) : null;
}

/** A surface's credential, as far as the role of the Principal it builds is concerned. */
export type PermissionSource =
  /** REST or admin WebSocket: the access token's `role` claim (a string from outside, checked here). */
  | { kind: 'token'; role: string | null }
  /** Chat messenger: the sender's numeric id. */
  | { kind: 'messenger'; senderId: number | string }
  /** Inter-agent calls: `SVC_CALLER_USER_ID`, or `user_role` set by the framework for system-originated calls. */
  | { kind: 'interagent'; callerUserId?: string | null; userRole?: string | null }
  /** Cron, webhooks, background observers. */
  | { kind: 'system' }
  | { kind: 'none' };

/** The role a source speaks for; null means "no role", which resolves to `permission_mode`. */
export function roleForSource(users: readonly UserForRole[], source: PermissionSource): Role | null {
  switch (source.kind) {
    case 'token':
      return asRole(source.role);
    case 'messenger':
      return roleForMessengerSender(users, source.senderId);
    case 'interagent':
      // A named caller decides alone: a call made for a person never borrows the framework's
      // `user_role`, and an unknown or disabled caller falls back to `permission_mode`, not to admin.
      if (typeof source.callerUserId === 'string' && source.callerUserId !== '') return roleForCaller(users, source.callerUserId);
      return asRole(source.userRole);
    case 'system':
      return SYSTEM_ROLE;
    case 'none':
      return null;
  }
}

/**
 * The permission mode for a CLI turn, for every row of SPEC's role-sources table. Every row's
 * fallback is `permission_mode`. Note the messenger row: a sender with no matching active record gets
 * `permission_mode` like any other unknown caller; SPEC adds that such a CLI "starts in `default` mode
 * and prompts cannot be answered", which describes what happens when `permission_mode` itself is
 * `default` (a chat cannot answer the CLI's prompts), not a different fallback. We implement the
 * table's fallback.
 */
export function permissionModeFor(
  config: Pick<AgentConfig, 'permission_mode' | 'permission_mode_by_role'>,
  users: readonly UserForRole[],
  source: PermissionSource,
): PermissionMode {
  return resolvePermissionMode(config, roleForSource(users, source));
}

/** The permission mode of a turn asked for by `principal` (its role, settled when it authenticated). */
export function permissionModeForPrincipal(config: Pick<AgentConfig, 'permission_mode' | 'permission_mode_by_role'>, principal: Principal): PermissionMode {
  return resolvePermissionMode(config, principal.role);
}

/** SVC_CALLER_USER_ID: the person a request is made for, when one is known. */
export function callerUserOf(p: Principal): string | null {
  return p.kind === 'user' ? p.id : p.acting_for;
}

/** SPEC.md "Agent-scoped access": an empty list or one holding `*` means every agent. */
function listAllows(list: readonly string[], agentName: string): boolean {
  return list.length === 0 || list.includes('*') || list.includes(agentName);
}

/** Whether a user may use an agent. A disabled user may use none. */
export function agentAllowed(user: Pick<UserRecord, 'active' | 'allowed_agents'>, agentName: string): boolean {
  return user.active && listAllows(user.allowed_agents, agentName);
}


/** Why a principal may not use an agent, or a note to log when it may only by a legacy allowance. */
export type AgentAccess = { allowed: true; warning: string | null } | { allowed: false; code: 'agent-not-allowed' | 'call-not-allowed' | 'unknown-caller'; message: string };

/**
 * Whether `principal` may send `target` a message (SPEC.md "Agent-scoped access" and "Inter-agent
 * authentication"): the person's allowed_agents, then, for an agent calling, its can_call list.
 * `registry` is the registry as last validated.
 */
export function agentAccess(principal: Principal, target: string, registry: readonly Pick<SubAgentConfig, 'name' | 'can_call'>[]): AgentAccess {
  if (!listAllows(principal.allowed_agents, target)) {
    const who = principal.kind === 'agent' ? principal.acting_for : principal.id;
    return {
      allowed: false,
      code: 'agent-not-allowed',
      message: `user "${who ?? '(token)'}" may not use agent "${target}" (allowed_agents: ${principal.allowed_agents.join(', ')})`,
    };
  }
  // The main agent has no registry entry and no can_call list: it may call every agent.
  if (principal.kind !== 'agent' || principal.id === MAIN_AGENT) return { allowed: true, warning: null };
  const from = principal.id ?? '';
  const entry = registry.find((e) => e.name === from);
  if (!entry) return { allowed: false, code: 'unknown-caller', message: `calling agent "${from}" is not in the registry` };
  const canCall = entry.can_call;
  if (canCall === undefined || canCall === null) {
    return { allowed: true, warning: `agent "${from}" has no can_call list; allowing its call to "${target}" (legacy mode): set can_call for "${from}" in agents.json` };
  }
  if (!canCall.includes(target) && !canCall.includes('*')) {
    return { allowed: false, code: 'call-not-allowed', message: `agent "${from}" may not call "${target}" (can_call: ${canCall.length ? canCall.join(', ') : 'empty'})` };
  }
  return { allowed: true, warning: null };
}

/** Which of `names` the principal may see and use: an agent never lists itself, and a legacy agent (no can_call) sees all. */
export function visibleAgents(principal: Principal, names: readonly string[], registry: readonly Pick<SubAgentConfig, 'name' | 'can_call'>[]): string[] {
  return names.filter((name) => !(principal.kind === 'agent' && name === principal.id) && agentAccess(principal, name, registry).allowed);
}
