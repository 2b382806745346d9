import * as v from 'valibot';
import { OneShotRequestSchema } from '../one-shot.schema.js';
import { typeNames } from './type-names.js';

/*
 * Streams `cron:<id>` and `webhook:<id>`: the records in cron_jobs.json and webhooks.json changed
 * through the admin API, and each accepted webhook call with how its dispatch ended. Never carries
 * a webhook secret, a header or the raw body: a call is summed up by its size and top-level keys,
 * plus the fenced prompt svc made of it — what the agent's `turn.started` holds a moment later, kept
 * from the 202 on so a restart before the agent was asked still asks it (nothing accepted is lost).
 */
const Change = { id: v.string(), agent: v.string(), by: v.nullable(v.string()) };
export const AUTOMATION_EVENT_SCHEMAS = {
  'cron.job_created': v.object(Change),
  'cron.job_updated': v.object({ ...Change, fields: v.array(v.string()) }),
  'cron.job_deleted': v.object(Change),
  'webhook.created': v.object(Change),
  'webhook.updated': v.object({ ...Change, fields: v.array(v.string()) }),
  'webhook.deleted': v.object(Change),
  /** A call passed every check and was answered 202; `request_id` correlates its dispatch. */
  'webhook.triggered': v.object({
    id: v.string(),
    agent: v.string(),
    mode: v.string(),
    request_id: v.string(),
    client: v.string(),
    body_bytes: v.number(),
    /** The payload's first top-level keys, each cut short. */
    keys: v.array(v.string()),
    /** The prompt the call becomes (template rendered, fenced); absent in facts written before it was kept. */
    prompt: v.optional(v.string()),
  }),
  /** `name` (both): the hook's name when the call settled, so its notification names it; absent in older facts. */
  /** The dispatch ran: the wake turn ended (`status` is the turn's), or the one-shot run started. */
  'webhook.completed': v.object({ id: v.string(), agent: v.string(), mode: v.string(), request_id: v.string(), status: v.string(), turn_id: v.nullable(v.string()), task_id: v.nullable(v.string()), name: v.optional(v.string()) }),
  /** The dispatch could not run or its turn failed; `reason` is machine-readable (`agent-refused`, `turn-failed`, `no-runner`, ...). */
  'webhook.failed': v.object({ id: v.string(), agent: v.string(), mode: v.string(), request_id: v.string(), reason: v.string(), error: v.string(), name: v.optional(v.string()) }),
  /**
   * A `cron_task` call's one-shot run ended (its `webhook.completed` only said it started): how, and
   * what it answered (cut at MAX_CRON_RESULT_CHARS), which also went to the agent's admin chat.
   */
  'webhook.run_ended': v.object({ id: v.string(), agent: v.string(), request_id: v.string(), run_id: v.string(), status: v.string(), result: v.string(), name: v.optional(v.string()) }),
  /**
   * A scheduled (or manual) fire of a cron job: `fire_id` is `<job id>@<scheduled ISO time>`, so a
   * fire already in the log is never run again, whoever restarts. `trigger` says why it fired.
   */
  'cron.fired': v.object({ id: v.string(), agent: v.string(), fire_id: v.string(), scheduled_at: v.string(), trigger: v.picklist(['schedule', 'missed', 'manual']) }),
  /** A fire that ran no CLI (`skipped:missed`, `skipped:quiet_hours`). */
  'cron.fire_skipped': v.object({ id: v.string(), agent: v.string(), fire_id: v.string(), scheduled_at: v.string(), status: v.string() }),
  /**
   * How a fire's run ended; `result` is kept here (cut at MAX_CRON_RESULT_CHARS) so a delivery
   * that fails can be retried from the log, also after a restart.
   */
  'cron.run_finished': v.object({
    id: v.string(),
    agent: v.string(),
    fire_id: v.string(),
    run_id: v.nullable(v.string()),
    status: v.string(),
    duration_ms: v.nullable(v.number()),
    result: v.string(),
    /** False when there is nothing to tell (silent_on_success). */
    deliver: v.boolean(),
    /** The job's title when it ran, so its notification names it; absent in older facts. */
    name: v.optional(v.string()),
  }),
  /** The result reached the job's chat, on this attempt. */
  /**
   * `to`: the transport that got it (`admin`: the agent's admin chat, also when the job's own
   * transport was not running and the result went there instead; `chat.delivery_rerouted` says why).
   * Absent in older facts.
   */
  'cron.delivered': v.object({ id: v.string(), fire_id: v.string(), attempt: v.number(), to: v.optional(v.string()) }),
  /** An attempt to deliver failed; `retry_at` null: no more attempts (the result stays in the log and on the record). */
  'cron.delivery_failed': v.object({ id: v.string(), fire_id: v.string(), attempt: v.number(), error: v.string(), retry_at: v.nullable(v.string()) }),
};
export const AUTOMATION_EVENTS = typeNames(AUTOMATION_EVENT_SCHEMAS);
export const MAX_CRON_RESULT_CHARS = 100_000;

/*
 * Stream `oneshot:<run id>`: one fresh CLI run of a cron job or a `cron_task` webhook, queued behind
 * its dependency key when it has one. A run with no `finished` was cut by a stop of svc: one that had
 * `started` is recorded finished `error:interrupted` at the next start (it is never run twice); one
 * still waiting is started then, from the request its `queued` fact holds.
 */
export const ONESHOT_EVENT_SCHEMAS = {
  'oneshot.queued': v.object({
    run_id: v.string(),
    source: v.string(),
    agent: v.string(),
    folder: v.string(),
    dependency: v.nullable(v.string()),
    provider: v.nullable(v.string()),
    model: v.nullable(v.string()),
    /** The whole request; absent in facts written before runs were restarted. */
    request: v.optional(OneShotRequestSchema),
  }),
  'oneshot.started': v.object({ run_id: v.string() }),
  'oneshot.finished': v.object({ run_id: v.string(), status: v.string(), duration_ms: v.nullable(v.number()), turn_id: v.nullable(v.string()) }),
};
export const ONESHOT_EVENTS = typeNames(ONESHOT_EVENT_SCHEMAS);
export const oneShotStream = (id: string): string => `oneshot:${id}`;
export const cronJobStream = (id: string): string => `cron:${id}`;
export const webhookStream = (id: string): string => `webhook:${id}`;
