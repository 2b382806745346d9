import * as v from 'valibot';
import { defineCommand } from '../command.js';
import { WORKFLOW_RUN_STATUSES, WORKFLOW_STEP_STATUSES } from '../events/workflow-run.events.js';
import { PrincipalSchema } from '../principal.schema.js';
import { MAX_WORKFLOW_VARIABLES, WORKFLOW_STEP_TYPES, WorkflowIdSchema, WorkflowVariableNameSchema } from '../workflow.schema.js';

/*
 * The workflow engine's commands (actors/workflows/), sent by the internal API's `/workflows/*`
 * routes and by the `/workflow` chat command alike, so both get the same rules and answers.
 */

const ChatId = v.pipe(v.number('must be a whole number'), v.check((n) => Number.isSafeInteger(n), 'must be a whole number (chat id)'));
/** Run ids are UUIDs; the bound only keeps a hostile id out of log lines and replies. */
export const WorkflowRunIdSchema = v.pipe(v.string('must be a run id'), v.regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be a run id (letters, digits, _ and -)'));
/** A run-time override: same bound as a definition's own values. */
export const MAX_VARIABLE_OVERRIDE_CHARS = 100_000;
export const WorkflowVariablesSchema = v.pipe(
  v.custom<Record<string, unknown>>((x) => typeof x === 'object' && x !== null && !Array.isArray(x), 'must be a mapping of names to text'),
  // Before v.record, which silently drops `__proto__` and friends instead of refusing them.
  v.check(
    (r) => Object.keys(r).every((k) => v.is(WorkflowVariableNameSchema, k)),
    (issue) => `holds a name that is not a variable name (${Object.keys(issue.input as object).filter((k) => !v.is(WorkflowVariableNameSchema, k)).map((k) => JSON.stringify(k)).join(', ')}): names start with a letter or _ and hold letters, digits and _ only`,
  ),
  v.record(WorkflowVariableNameSchema, v.pipe(v.string('must be text'), v.maxLength(MAX_VARIABLE_OVERRIDE_CHARS, `must be at most ${MAX_VARIABLE_OVERRIDE_CHARS} characters`))),
  v.check((r) => Object.keys(r).length <= MAX_WORKFLOW_VARIABLES, `must hold at most ${MAX_WORKFLOW_VARIABLES} variables`),
);
/** Where a run talks: the chat it was started from (transport, chat and topic). */
export const WorkflowChatSchema = {
  transport: v.pipe(v.string('must be a transport name'), v.regex(/^[a-z][a-z0-9_-]{0,31}$/, 'must be a transport name (api, admin, telegram, ...)')),
  chat_id: ChatId,
  topic_id: v.optional(v.nullable(ChatId), null),
};

/** Longest step output a status answer carries; the run keeps the whole output. */
export const MAX_STATUS_OUTPUT_CHARS = 4000;
/** Most runs a list answer carries, newest first. */
export const MAX_LISTED_RUNS = 50;

export const WorkflowDefinitionViewSchema = v.object({
  id: v.nullable(v.string()),
  /** File name inside workflows/. */
  file: v.nullable(v.string()),
  name: v.nullable(v.string()),
  description: v.nullable(v.string()),
  step_count: v.number(),
  variables: v.record(v.string(), v.string()),
  /** Why the file is not loaded (file:line:column: field: problem); null for a loaded definition. */
  error: v.nullable(v.string()),
});
export type WorkflowDefinitionView = v.InferOutput<typeof WorkflowDefinitionViewSchema>;

export const WorkflowStepViewSchema = v.object({
  id: v.string(),
  type: v.picklist(WORKFLOW_STEP_TYPES),
  /** The parallel step a branch belongs to. */
  parent: v.nullable(v.string()),
  status: v.picklist(WORKFLOW_STEP_STATUSES),
  attempts: v.number(),
  error: v.nullable(v.string()),
  /** At most MAX_STATUS_OUTPUT_CHARS; `output_truncated` says when there was more. */
  output: v.nullable(v.string()),
  output_truncated: v.boolean(),
});

export const WorkflowRunViewSchema = v.object({
  run_id: v.string(),
  workflow_id: v.string(),
  name: v.string(),
  status: v.picklist(WORKFLOW_RUN_STATUSES),
  transport: v.string(),
  chat_id: v.number(),
  topic_id: v.nullable(v.number()),
  current_step: v.nullable(v.string()),
  error: v.nullable(v.string()),
  started_at: v.string(),
  ended_at: v.nullable(v.string()),
  step_executions: v.number(),
  steps: v.array(WorkflowStepViewSchema),
});
export type WorkflowRunView = v.InferOutput<typeof WorkflowRunViewSchema>;
export const WorkflowRunSummarySchema = v.omit(WorkflowRunViewSchema, ['steps']);
export type WorkflowRunSummary = v.InferOutput<typeof WorkflowRunSummarySchema>;

export const WORKFLOW_COMMANDS = {
  list: defineCommand(
    'workflow.list',
    v.strictObject({ principal: PrincipalSchema }),
    v.object({ enabled: v.boolean(), definitions: v.array(WorkflowDefinitionViewSchema), runs: v.array(WorkflowRunSummarySchema) }),
  ),
  run: defineCommand(
    'workflow.run',
    v.strictObject({ principal: PrincipalSchema, workflow_id: WorkflowIdSchema, ...WorkflowChatSchema, variables: v.optional(WorkflowVariablesSchema, {}) }),
    v.object({ run_id: v.string() }),
    { invalidCode: 'invalid-body' },
  ),
  status: defineCommand('workflow.status', v.strictObject({ principal: PrincipalSchema, run_id: WorkflowRunIdSchema }), WorkflowRunViewSchema, { invalidCode: 'invalid-body' }),
  cancel: defineCommand(
    'workflow.cancel',
    v.strictObject({ principal: PrincipalSchema, run_id: WorkflowRunIdSchema }),
    v.object({ run_id: v.string(), status: v.picklist(WORKFLOW_RUN_STATUSES) }),
    { invalidCode: 'invalid-body' },
  ),
} as const;
