import { leastPrivileged } from '../../machines/index.js';
import { MAIN_AGENT, actingUser, type Principal, type Role, type SubAgentConfig, type UserRecord } from '../../schemas/index.js';

/** Where work started by an agent reports back: a transport's chat (and topic). */
export interface ChatPlace {
  transport: string;
  chat_id: number;
  topic_id: number | null;
}

export interface ActingDirectory {
  users: () => readonly UserRecord[];
  registry: () => readonly SubAgentConfig[];
}

/**
 * The agent, acting for the person it acted for when it asked, with no more than the role that
 * call was authenticated with (`callerRole`) nor the role that person has now. Work started by a
 * call runs with the rights of whoever made it: a token-less legacy caller was a viewer, so its
 * task, its result's wake turn and an async reply's wake turn are too. A person removed or disabled
 * since cannot be acted for at all (`actingUser`, the rule the internal API applies to its caller
 * header): this throws `unknown-user`. Facts older than `caller_role` lack it: then a call without a
 * person was the framework's (admin), unless the agent is a token-less registry entry, whose calls
 * proved nothing.
 */
export function actingPrincipal(d: ActingDirectory, agent: string, callerUser: string | null, callerRole: Role | null | undefined, origin: ChatPlace, named: string): Principal {
  const recorded = callerRole === undefined ? (tokenless(d.registry(), agent) ? 'viewer' : 'admin') : callerRole;
  if (callerUser === null) return { kind: 'agent', id: agent, acting_for: null, role: recorded, allowed_agents: [], origin };
  const user = actingUser(d.users(), callerUser, named);
  return { kind: 'agent', id: agent, acting_for: callerUser, role: recorded === null ? user.role : leastPrivileged(recorded, user.role), allowed_agents: user.allowed_agents, origin };
}

/** A sub-agent whose registry entry has no `interagent_token` (or no entry at all): nothing proves who made its calls. */
function tokenless(registry: readonly SubAgentConfig[], agent: string): boolean {
  if (agent === MAIN_AGENT) return false;
  const token = registry.find((r) => r.name === agent)?.interagent_token;
  return typeof token !== 'string' || token === '';
}
