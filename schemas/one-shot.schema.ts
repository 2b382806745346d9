import * as v from 'valibot';
import { TaskCliParametersSchema } from './agent-commands.schema.js';
import { PrincipalSchema } from './principal.schema.js';

/*
 * One fresh CLI run of a cron job or a `cron_task` webhook, as the one-shot runner takes it. The
 * whole request is in the run's `oneshot.queued` fact, so a run a stop of svc cut while it still
 * waited (its dependency queue, or the start of svc) is started after the restart instead of lost.
 */

const NullableString = v.nullable(v.string());
const Route = v.object({ transport: v.string(), chat_id: v.number(), topic_id: v.nullable(v.number()) });

export const OneShotRequestSchema = v.object({
  /** `cron:<id>` or `webhook:<id>`: what asked for the run. */
  source: v.string(),
  /** The fire (`<job>@<time>`) or webhook call (its request id) the run is for. */
  ref: v.optional(NullableString),
  agent: v.string(),
  name: v.string(),
  prompt: v.string(),
  provider: NullableString,
  model: NullableString,
  reasoning_effort: NullableString,
  /**
   * SPEC.md's `dependency`: runs sharing a key wait for each other in one queue, across cron jobs
   * and webhooks; null runs at once.
   */
  dependency: NullableString,
  principal: PrincipalSchema,
  /** Stamped on every fact of the run. */
  correlation: v.string(),
  /** The run's folder under `workspace/cron_tasks/`; default the source's id. */
  folder: v.optional(v.string()),
  /** Create the folder when it is missing (a webhook's first run); otherwise a missing one fails the run. */
  create_folder: v.optional(v.boolean()),
  /** Task-level CLI arguments by provider; unset: the config's. */
  cli_parameters: v.optional(v.nullable(TaskCliParametersSchema)),
  quiet_start: v.optional(NullableString),
  quiet_end: v.optional(NullableString),
  /** The zone quiet hours are read in; unset: the configured one. */
  timezone: v.optional(NullableString),
  /** The chat the run's turn belongs to; unset: the agent's inter-agent conversation. */
  route: v.optional(v.nullable(Route)),
});
export type OneShotRequest = v.InferOutput<typeof OneShotRequestSchema>;
