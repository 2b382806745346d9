import * as v from 'valibot';
import {
  CreateCronJobBodySchema,
  CreateWebhookBodySchema,
  RecordIdSchema,
  UpdateCronJobBodySchema,
  UpdateWebhookBodySchema,
  VerifyWebhookBodySchema,
} from '../automation.schema.js';
import { defineCommand } from '../command.js';
import { PrincipalSchema } from '../principal.schema.js';

/* Cron jobs and webhooks CRUD (SPEC.md "Admin REST: cron jobs", "Admin REST: webhooks"). */

const P = { principal: PrincipalSchema };
const ById = v.strictObject({ ...P, id: RecordIdSchema });
/** A record as the panel sees it (WIRE.md §2): the stored fields plus derived ones, secrets masked. */
const View = v.looseObject({ id: v.string(), agent: v.string() });
const Deleted = v.object({ id: v.string(), deleted: v.literal(true) });

const WebhookTriggerSchema = v.strictObject({
  id: v.pipe(v.string(), v.minLength(1), v.maxLength(256)),
  request_id: v.pipe(v.string(), v.minLength(1), v.maxLength(128)),
  /** The client's address, as the rate limit counted it. */
  client: v.pipe(v.string(), v.maxLength(128)),
  /** Lower-case names, as received. */
  headers: v.record(v.string(), v.string()),
  /** The raw body, base64: signatures are over its exact bytes. */
  body: v.string(),
  payload: v.record(v.string(), v.unknown()),
});

/** How many past runs `GET /api/cron/{id}/runs` and `GET /api/webhooks/{id}/runs` give at most. */
export const MAX_RUN_HISTORY = 200;
export const DEFAULT_RUN_HISTORY = 20;
const Runs = v.strictObject({ ...P, id: RecordIdSchema, limit: v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(MAX_RUN_HISTORY)) });
const nullableText = v.nullable(v.string());

/**
 * One fire of a cron job as its `cron:<id>` facts tell it: `status` is `running` until its
 * `cron.run_finished` (or the `skipped:*` of a fire that ran no CLI); `result` is cut short.
 */
export const CronRunSchema = v.object({
  fire_id: v.string(),
  trigger: v.string(),
  scheduled_at: v.string(),
  fired_at: v.string(),
  finished_at: nullableText,
  status: v.string(),
  duration_ms: v.nullable(v.number()),
  result: nullableText,
  delivered: v.boolean(),
});
export type CronRun = v.InferOutput<typeof CronRunSchema>;

/**
 * One accepted call of a webhook as its `webhook:<id>` facts tell it: `status` is `running` until
 * its dispatch settled, then the turn's or run's status, or `failed` with `error`.
 */
export const WebhookRunSchema = v.object({
  request_id: v.string(),
  triggered_at: v.string(),
  finished_at: nullableText,
  client: v.string(),
  body_bytes: v.number(),
  keys: v.array(v.string()),
  status: v.string(),
  error: nullableText,
  result: nullableText,
});
export type WebhookRun = v.InferOutput<typeof WebhookRunSchema>;

export const CRON_COMMANDS = {
  list: defineCommand('cron.list', v.strictObject(P), v.array(View)),
  create: defineCommand('cron.create', v.strictObject({ ...P, job: CreateCronJobBodySchema }), View),
  update: defineCommand('cron.update', v.strictObject({ ...P, id: RecordIdSchema, changes: UpdateCronJobBodySchema }), View),
  delete: defineCommand('cron.delete', ById, Deleted),
  run: defineCommand('cron.run_job', ById, v.object({ started: v.boolean() })),
  /** The job's latest runs, newest first. */
  runs: defineCommand('cron.runs', Runs, v.array(CronRunSchema)),
} as const;

export const WEBHOOK_COMMANDS = {
  list: defineCommand('webhook.list', v.strictObject(P), v.array(View)),
  create: defineCommand('webhook.create', v.strictObject({ ...P, hook: CreateWebhookBodySchema }), View),
  update: defineCommand('webhook.update', v.strictObject({ ...P, id: RecordIdSchema, changes: UpdateWebhookBodySchema }), View),
  delete: defineCommand('webhook.delete', ById, Deleted),
  /**
   * A call to `/hooks/<id>` that passed the edge's checks (rate, content type, size, JSON object):
   * the handler refuses an unknown hook (`not-found`), a disabled one (`webhook-disabled`) or failed
   * auth (`unauthorized`), else records the call and starts its dispatch. No principal: who calls is
   * what the handler decides. In-process only, never logged: headers and body may hold credentials.
   */
  trigger: defineCommand('webhook.trigger', WebhookTriggerSchema, v.object({ accepted: v.literal(true), hook_id: v.string() })),
  /** The hook's latest accepted calls, newest first. */
  runs: defineCommand('webhook.runs', Runs, v.array(WebhookRunSchema)),
  verify: defineCommand('webhook.verify', v.strictObject({ ...P, id: RecordIdSchema, ...VerifyWebhookBodySchema.entries }), v.object({ valid: v.boolean() })),
} as const;
