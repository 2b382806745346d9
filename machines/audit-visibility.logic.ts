import type { AuditEntry, Principal } from '../schemas/index.js';
import { unrestricted } from './activity.logic.js';

/*
 * Which audit entries an admin restricted by `allowed_agents` reads (SPEC.md "Agent-scoped
 * access"; SPEC is silent on the audit log itself). An entry is about an agent when the route it
 * records names one in its path (`/api/agents/:name…`, `/api/agents/:agent/skills…`,
 * `/api/chat/:agentId`): then its `target` starts with that name. Entries about no agent (users,
 * global settings, webhooks, cron, sign-ins) are shown to unrestricted admins only: they are not
 * provably about the caller's agents and may tell of actions on others (the activity feed hides
 * them from restricted callers for the same reason). A caller always sees its own actions.
 */

const AGENT_ROUTES = /^[A-Z]+ \/api\/(agents\/:(name|agent)|chat\/:agentId)(\/|$)/;

/** The agent an audit entry is about, or null when its route names none. */
export function auditEntryAgent(entry: Pick<AuditEntry, 'action' | 'target'>): string | null {
  if (entry.target === null || !AGENT_ROUTES.test(entry.action)) return null;
  return entry.target.split('/')[0] || null;
}

export function auditVisibleTo(principal: Pick<Principal, 'kind' | 'id' | 'allowed_agents'>, entry: AuditEntry): boolean {
  if (unrestricted(principal)) return true;
  if (principal.kind === 'user' && principal.id !== null && entry.actor === principal.id) return true;
  const agent = auditEntryAgent(entry);
  return agent !== null && principal.allowed_agents.includes(agent);
}
