import * as v from 'valibot';
import type { Json } from '../event.schema.js';
import { PrincipalSchema } from '../principal.schema.js';
import { WorkflowDefinitionSchema, WorkflowIdSchema } from '../workflow.schema.js';
import { typeNames } from './type-names.js';

/*
 * Stream `run:<id>`: one workflow run (SPEC.md "Workflow run"), written by its run machine. The
 * facts carry everything a restart needs to rebuild the run: `workflow.run_started` holds the
 * definition as it was when the run began (a later edit of the file never changes a run in flight),
 * and every step fact names the step and the attempt it is about. Times are epoch ms from the
 * engine's clock (`at_ms`), so folding the stream never reads a clock.
 */

/** WIRE.md §3. `pending` is never stored: a run is recorded when it starts. */
export const WORKFLOW_RUN_STATUSES = ['pending', 'running', 'waiting', 'completed', 'failed', 'cancelled'] as const;
export type WorkflowRunStatus = (typeof WORKFLOW_RUN_STATUSES)[number];
export const WORKFLOW_STEP_STATUSES = ['pending', 'running', 'completed', 'failed', 'skipped', 'waiting'] as const;
export type WorkflowStepStatus = (typeof WORKFLOW_STEP_STATUSES)[number];

/** Why a step attempt failed: machine-readable, the text is in `error`. */
export const WORKFLOW_STEP_FAILURES = ['error', 'timeout', 'interrupted', 'cancelled'] as const;

/** A definition as a run keeps it: the loader's output, id and name settled. */
export const RunDefinitionSchema = v.object({ ...WorkflowDefinitionSchema.entries, id: WorkflowIdSchema, name: v.string() });

/**
 * `n` numbers the run's step executions (1, 2, ...): it names one execution of one step, so an
 * answer that arrives for an earlier visit of a step (a goto loop, a retry) is told apart.
 */
const Step = { step: v.string(), n: v.number() };
const At = { at_ms: v.number() };

/**
 * What the run machine was told from outside (SPEC.md is silent; replay needs it): an attempt's
 * outcome the engine reports, a reply taken from the chat, a cancel, the resume after a restart.
 * Timers are not here: the machine arms them itself, so replay re-derives their firing.
 */
export const WorkflowRunInputSchema = v.variant('type', [
  v.object({ type: v.literal('step.done'), ...Step, output: v.string() }),
  v.object({ type: v.literal('step.failed'), ...Step, error: v.string(), reason: v.picklist(['error', 'interrupted']) }),
  v.object({ type: v.literal('reply'), text: v.string() }),
  v.object({ type: v.literal('cancel'), by: v.nullable(v.string()) }),
  v.object({ type: v.literal('resume') }),
]);
export type WorkflowRunRecordedInput = v.InferOutput<typeof WorkflowRunInputSchema>;

export const WORKFLOW_RUN_EVENT_SCHEMAS = {
  /**
   * The run was handed `input` at `at_ms`, written before the facts it causes (only when it causes
   * some, or is a resume): `svc events replay --check` re-drives the run from these and compares the rest.
   */
  'workflow.input_received': v.object({ input: WorkflowRunInputSchema, ...At }),
  'workflow.run_started': v.object({
    run_id: v.string(),
    workflow_id: v.string(),
    /** A RunDefinitionSchema value as JSON (optional fields absent, never undefined). */
    definition: v.custom<Json>((x) => typeof x === 'object' && x !== null && !Array.isArray(x), 'must be a workflow definition'),
    /** Defaults merged with the overrides the run was started with. */
    variables: v.record(v.string(), v.string()),
    /** The chat the run talks to (notify, wait_for_reply) and listens on. */
    transport: v.string(),
    chat_id: v.number(),
    topic_id: v.nullable(v.number()),
    /** Who started it: its asks run with this principal's rights. */
    principal: PrincipalSchema,
    max_step_executions: v.number(),
    /** `workflow.default_step_timeout` when the run started (seconds). */
    default_step_timeout: v.number(),
    ...At,
  }),
  /**
   * A step attempt began. `text` is its prompt or message with references filled in (null for
   * condition and parallel); `parent` is the parallel step a branch belongs to; `deadline_ms` the
   * moment the attempt times out, when it has a timeout.
   */
  'workflow.step_started': v.object({ ...Step, attempt: v.number(), parent: v.nullable(v.string()), text: v.nullable(v.string()), deadline_ms: v.nullable(v.number()), ...At }),
  /** `output` is what `$steps.<id>.output` reads from now on. */
  'workflow.step_completed': v.object({ ...Step, output: v.string(), ...At }),
  'workflow.step_failed': v.object({ ...Step, reason: v.picklist(WORKFLOW_STEP_FAILURES), error: v.string(), ...At }),
  /** on_error retry: attempt `attempt` of the step runs at `due_ms`. */
  'workflow.step_retry_scheduled': v.object({ step: v.string(), attempt: v.number(), due_ms: v.number(), ...At }),
  /** on_error skip, or a branch stopped because its parallel block failed. */
  'workflow.step_skipped': v.object({ ...Step, reason: v.string(), ...At }),
  'workflow.run_completed': v.object({ ...At }),
  'workflow.run_failed': v.object({ step: v.nullable(v.string()), error: v.string(), ...At }),
  'workflow.run_cancelled': v.object({ by: v.nullable(v.string()), ...At }),
};
export const WORKFLOW_RUN_EVENTS = typeNames(WORKFLOW_RUN_EVENT_SCHEMAS);
export const workflowRunStream = (runId: string): string => `run:${runId}`;

/**
 * Stream `workflows`: the definitions in workflows/ were (re)loaded, at start or after a file was
 * added, edited or deleted. `errors` are the load errors as the user reads them (file:line:col).
 */
export const WORKFLOW_DEFINITION_EVENT_SCHEMAS = {
  'workflow.definitions_loaded': v.object({ ids: v.array(v.string()), errors: v.array(v.string()) }),
};
export const WORKFLOW_DEFINITION_EVENTS = typeNames(WORKFLOW_DEFINITION_EVENT_SCHEMAS);
export const WORKFLOW_DEFINITIONS_STREAM = 'workflows';
