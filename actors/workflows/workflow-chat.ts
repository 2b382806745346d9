import type { Bus } from '../../bus/index.js';
import {
  WORKFLOW_COMMAND_USAGE,
  formatWorkflowList,
  formatWorkflowRun,
  formatWorkflowRuns,
  parseWorkflowCommand,
} from '../../machines/index.js';
import { SvcError, WORKFLOW_COMMANDS, describeError, type AgentMessage } from '../../schemas/index.js';

/**
 * The `/workflow` chat command's answer: parsed once (workflow-command.logic.ts), carried out by the
 * engine's bus commands with the sender's principal, and told as text. A run started here talks to
 * this chat (transport, chat and topic of the message). Refusals are answers, not errors.
 */
export async function answerWorkflowCommand(bus: Bus, msg: AgentMessage, arg: string | undefined): Promise<{ text: string; ok: boolean }> {
  const cmd = parseWorkflowCommand(arg);
  const { principal } = msg;
  try {
    switch (cmd.op) {
      case 'usage':
        return { text: `${cmd.error ? `${cmd.error}.\n` : ''}${WORKFLOW_COMMAND_USAGE}`, ok: cmd.error === null };
      case 'list': {
        const r = await bus.send(WORKFLOW_COMMANDS.list, { principal });
        return { text: formatWorkflowList(r.enabled, r.definitions), ok: true };
      }
      case 'runs': {
        const r = await bus.send(WORKFLOW_COMMANDS.list, { principal });
        return { text: formatWorkflowRuns(r.runs), ok: true };
      }
      case 'run': {
        const r = await bus.send(WORKFLOW_COMMANDS.run, {
          principal,
          workflow_id: cmd.workflow_id,
          transport: msg.transport,
          chat_id: msg.chat_id,
          topic_id: msg.topic_id,
          variables: cmd.variables,
        });
        return { text: `Started workflow ${cmd.workflow_id}: run ${r.run_id}. See it with /workflow status ${r.run_id}.`, ok: true };
      }
      case 'status':
        return { text: formatWorkflowRun(await bus.send(WORKFLOW_COMMANDS.status, { principal, run_id: cmd.run_id })), ok: true };
      case 'cancel': {
        const r = await bus.send(WORKFLOW_COMMANDS.cancel, { principal, run_id: cmd.run_id });
        return { text: `Run ${r.run_id}: ${r.status}.`, ok: true };
      }
    }
  } catch (e) {
    if (e instanceof SvcError && e.code === 'no-handler') return { text: 'Workflows are not available: the workflow engine is not running.', ok: false };
    if (e instanceof SvcError && e.code !== 'internal-error') return { text: e.message, ok: false };
    bus.emitLog('error', `/workflow failed: ${describeError(e)}`);
    return { text: 'The workflow command failed; see the log.', ok: false };
  }
}
