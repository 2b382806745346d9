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

export const CRON_COMMANDS = {
  list: defineCommand('cron.list', v.strictObject(P), v.array(View)),
  create: defineCommand('cron.create', v.strictObject({ ...P, job: CreateCronJobBodySchema }), View),
  update: defineCommand('cron.update', v.strictObject({ ...P, id: RecordIdSchema, changes: UpdateCronJobBodySchema }), View),
  delete: defineCommand('cron.delete', ById, Deleted),
  run: defineCommand('cron.run_job', ById, v.object({ started: v.boolean() })),
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
  verify: defineCommand('webhook.verify', v.strictObject({ ...P, id: RecordIdSchema, ...VerifyWebhookBodySchema.entries }), v.object({ valid: v.boolean() })),
} as const;
