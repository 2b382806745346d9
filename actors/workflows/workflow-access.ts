import { unrestricted, workflowSteps } from '../../machines/index.js';
import { SvcError, type Principal, type WorkflowDefinition } from '../../schemas/index.js';

/* Who may see, start and cancel a workflow run: one rule for the commands, the listing and the chat. */

/** Starting and cancelling runs changes things: a viewer may only look. */
export function mayChange(principal: Principal): void {
  if (principal.role === 'viewer') throw new SvcError('forbidden', 'a viewer may list workflows and see runs, not start or cancel them');
}

/**
 * SPEC.md "Agent-scoped access": a caller restricted by `allowed_agents` sees, starts and cancels
 * only workflows whose ask_agent steps all name agents it may use (the agents the run would ask
 * for it); a workflow asking no agent is everyone's.
 */
export function visibleTo(principal: Principal, definition: WorkflowDefinition): boolean {
  if (unrestricted(principal)) return true;
  return [...workflowSteps(definition).values()].every(({ step }) => step.type !== 'ask_agent' || principal.allowed_agents.includes(step.agent));
}

export function mayUse(principal: Principal, definition: WorkflowDefinition): void {
  if (!visibleTo(principal, definition)) throw new SvcError('agent-not-allowed', `workflow ${definition.id} asks agents you may not use`);
}
