import * as v from 'valibot';
import { WORKFLOW_COMMANDS, WorkflowIdSchema, WorkflowRunIdSchema, WorkflowVariablesSchema, type Principal } from '../../schemas/index.js';
import { json, withBody, type Route } from '../http/index.js';
import { adminAuth } from './admin-auth.js';
import type { AdminDeps } from './admin-deps.js';
import { pathParam } from './query-params.js';

/*
 * Workflows in the panel: the workflow engine's own commands (actors/workflows/), as the internal
 * API and the `/workflow` chat command send them, with the panel user's principal. A run started
 * here talks to the admin chat: transport `admin`, chat 0 (no chat session of the panel has that
 * id), so its notify and wait_for_reply messages land in the main agent's latest admin chat; a
 * wait_for_reply run started here is therefore answered by cancelling it, not by a reply.
 * 503 `no-handler` while the engine is not running (start-up).
 */
export const RunWorkflowBodySchema = v.strictObject({ variables: v.optional(WorkflowVariablesSchema, {}) });
/** The admin chat as a run's chat (see above). */
export const PANEL_WORKFLOW_CHAT = { transport: 'admin', chat_id: 0, topic_id: null } as const;

export function workflowsRoutes(deps: AdminDeps): Route[] {
  const { bus } = deps;
  return [
    {
      method: 'GET',
      pattern: '/api/workflows',
      auth: adminAuth('workflows.read'),
      summary: 'Workflow definitions (with the load errors of broken files) and recent runs',
      handler: async (_req, principal) => json(200, await bus.send(WORKFLOW_COMMANDS.list, { principal })),
    },
    {
      method: 'GET',
      pattern: '/api/workflows/runs/:run_id',
      auth: adminAuth('workflows.read'),
      summary: 'A workflow run with its steps',
      handler: async (req, principal) => json(200, await bus.send(WORKFLOW_COMMANDS.status, { principal, run_id: pathParam(req, 'run_id', WorkflowRunIdSchema) })),
    },
    {
      method: 'POST',
      pattern: '/api/workflows/:id/run',
      auth: adminAuth('workflows.run'),
      summary: 'Start a run of a workflow',
      maxBodyBytes: 2 * 1024 * 1024,
      ...withBody(RunWorkflowBodySchema, async ({ variables }, req, principal: Principal) => {
        const workflow_id = pathParam(req, 'id', WorkflowIdSchema);
        const r = await bus.send(WORKFLOW_COMMANDS.run, { principal: { ...principal, origin: PANEL_WORKFLOW_CHAT }, workflow_id, ...PANEL_WORKFLOW_CHAT, variables });
        return json(202, r);
      }),
    },
    {
      method: 'POST',
      pattern: '/api/workflows/runs/:run_id/cancel',
      auth: adminAuth('workflows.cancel'),
      summary: 'Cancel a running or waiting workflow run',
      handler: async (req, principal) => json(200, await bus.send(WORKFLOW_COMMANDS.cancel, { principal, run_id: pathParam(req, 'run_id', WorkflowRunIdSchema) })),
    },
  ];
}
