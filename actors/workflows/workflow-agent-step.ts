import { createHash } from 'node:crypto';
import { agentsOf, type Bus } from '../../bus/index.js';
import { resolveProviderForModel, workflowSteps, type DueEffect, type WorkflowRunState } from '../../machines/index.js';
import { SvcError, type Principal } from '../../schemas/index.js';

/*
 * How a run's ask_agent step reaches an agent (the rules are in workflow-engine.ts's header): in a
 * chat of the run's own, on transport `workflow`, with the rights of whoever started the run.
 */

/** Transport of the agent requests a run makes. */
export const WORKFLOW_TRANSPORT = 'workflow';

/** A chat id of the run's own for its agent requests (48 bits of a hash, never 0: chat 0 is the inter-agent chat). */
export function workflowChatId(key: string): number {
  return Number.parseInt(createHash('sha256').update(`workflow:${key}`).digest('hex').slice(0, 12), 16) + 1;
}

/**
 * An ask_agent attempt through the agent contract; resolves with the answer, rejects with why not.
 * `onAbort` receives how to end the request; `waitingOn` marks the wait for the answer as someone else's.
 */
export async function askAgentStep(
  bus: Bus,
  state: WorkflowRunState,
  effect: DueEffect,
  onAbort: (abort: () => void) => void,
  waitingOn: <T>(p: Promise<T>) => Promise<T>,
): Promise<string> {
  const step = workflowSteps(state.definition).get(effect.step)!.step;
  if (step.type !== 'ask_agent') throw new SvcError('internal-error', `step ${effect.step} is not ask_agent`);
  const chatId = workflowChatId(effect.parent === null ? state.run_id : `${state.run_id}:${effect.step}`);
  const principal: Principal = { ...state.principal, origin: { transport: WORKFLOW_TRANSPORT, chat_id: chatId, topic_id: null } };
  const agents = agentsOf(bus);
  if (step.provider !== undefined) {
    const provider = step.model !== undefined ? resolveProviderForModel(step.model) : (await agents.list(principal)).find((a) => a.name === step.agent)?.provider;
    if (provider !== undefined && provider !== step.provider) {
      throw new SvcError('invalid-provider', step.model !== undefined
        ? `model ${step.model} is served by ${provider}, not ${step.provider}`
        : `agent ${step.agent} runs on ${provider}; name a ${step.provider} model (model:) to use ${step.provider}`);
    }
  }
  const asked = agents.ask(
    { agent: step.agent, transport: WORKFLOW_TRANSPORT, chat_id: chatId, topic_id: null, text: step.model !== undefined ? `@${step.model} ${effect.text}` : effect.text, kind: 'workflow', new_session: step.new_session },
    principal,
  );
  onAbort(() => void agents.abort(chatId, principal, step.agent).catch(() => undefined));
  const admission = await asked.accepted;
  if (!admission.accepted) throw new SvcError(admission.code, `agent ${step.agent} refused the request: ${admission.message}`);
  const outcome = await waitingOn(asked.outcome);
  if (outcome.status === 'completed' && !outcome.is_error) return outcome.text;
  const detail = outcome.text.trim() ? `: ${outcome.text.trim().slice(0, 500)}` : '';
  throw new SvcError('internal-error', `agent ${step.agent} ${outcome.status.replace('_', ' ')}${outcome.reason ? ` (${outcome.reason})` : ''}${detail}`);
}
