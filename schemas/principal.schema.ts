import * as v from 'valibot';
import { ROLES } from './config.schema.js';
import { SvcError } from './error.js';
import type { UserRecord } from './users.schema.js';

/*
 * Who is asking, as every command carries it (DESIGN.md §2). Edges only authenticate — API token,
 * JWT, messenger id, interagent token — and turn the caller into a Principal; what the principal may
 * do (role permissions, allowed_agents, can_call, permission mode by role) is decided where the
 * command is handled, never in an edge.
 */

const Name = v.pipe(v.string(), v.minLength(1), v.maxLength(128));
const ChatId = v.pipe(v.number(), v.integer());

/** Where the request entered: the transport and, for chat surfaces, the chat and topic. */
export const OriginSchema = v.strictObject({
  /** `api`, `admin`, `internal`, `telegram`, `matrix`, `cron`, `webhook`, `task`, `workflow`, ... */
  transport: v.pipe(v.string(), v.minLength(1), v.maxLength(32)),
  chat_id: v.nullable(ChatId),
  topic_id: v.nullable(ChatId),
});
export type Origin = v.InferOutput<typeof OriginSchema>;

export const PRINCIPAL_KINDS = ['user', 'agent', 'system'] as const;

export const PrincipalSchema = v.strictObject({
  /**
   * `user`: a person (a user record, or the bearer of a shared token when `id` is null);
   * `agent`: an agent calling through the internal API; `system`: svc itself (cron, webhooks, recovery).
   */
  kind: v.picklist(PRINCIPAL_KINDS),
  /** Username, agent name or subsystem name; null for a shared-token bearer with no user record. */
  id: v.nullable(Name),
  /** For an agent: the user it acts for (`SVC_CALLER_USER_ID`), when one is known. */
  acting_for: v.nullable(Name),
  /** Null: no role is known, so role-based choices fall back to their defaults. */
  role: v.nullable(v.picklist(ROLES)),
  /** Agents this principal may use; empty or `['*']` is every agent. */
  allowed_agents: v.array(Name),
  origin: OriginSchema,
});
export type Principal = v.InferOutput<typeof PrincipalSchema>;

/** svc itself (cron, webhooks, heartbeat, tasks, maintenance); SPEC.md: system-initiated calls run with the admin role. */
export function systemPrincipal(id: string | null, origin: Origin): Principal {
  return { kind: 'system', id, acting_for: null, role: 'admin', allowed_agents: [], origin };
}

/**
 * The agents a principal is limited to (SPEC.md "Agent-scoped access"), or null when it may use
 * every agent (an empty list or one holding `*`).
 */
export function agentLimit(principal: Pick<Principal, 'allowed_agents'>): readonly string[] | null {
  const list = principal.allowed_agents;
  return list.length === 0 || list.includes('*') ? null : list;
}

/**
 * The one rule for an agent acting for a person, wherever the person is named (the internal API's
 * `X-SVC-Caller-User-Id`, a task created for someone, an async reply's wake turn): only a user who
 * has a record and is active can be acted for. A user removed or disabled since is refused with
 * `unknown-user`, never run as someone less (a stand-in role with no `allowed_agents` would reach
 * every agent). `named` says where the name came from, for the message.
 */
export function actingUser(users: readonly UserRecord[], name: string, named: string): UserRecord {
  const user = users.find((u) => u.username === name);
  if (!user) throw new SvcError('unknown-user', `${named} "${name}" has no user record`);
  if (!user.active) throw new SvcError('unknown-user', `${named} "${name}" is disabled`);
  return user;
}
