import { agentAccess } from '../../machines/index.js';
import { AGENT_NAME_PATTERN, MAIN_AGENT, SvcError, type Principal, type SubAgentConfig } from '../../schemas/index.js';

/**
 * The agent a content command acts on, once the principal may use it (SPEC.md "Agent-scoped
 * access") and it exists. Access is decided before existence, so a restricted user learns nothing
 * about agents outside its list.
 */
export function targetAgent(principal: Principal, agent: string, registry: readonly SubAgentConfig[]): string {
  if (agent.length > 64 || !AGENT_NAME_PATTERN.test(agent)) {
    throw new SvcError('invalid-agent-name', `agent ${JSON.stringify(agent.slice(0, 80))} is not a valid agent name (1-64 characters of a-z, 0-9, _ and -)`);
  }
  const access = agentAccess(principal, agent, registry);
  if (!access.allowed) throw new SvcError(access.code, access.message);
  if (agent !== MAIN_AGENT && !registry.some((e) => e.name === agent)) throw new SvcError('unknown-agent', `agent "${agent}" does not exist`);
  return agent;
}
