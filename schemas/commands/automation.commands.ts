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
  verify: defineCommand('webhook.verify', v.strictObject({ ...P, id: RecordIdSchema, ...VerifyWebhookBodySchema.entries }), v.object({ valid: v.boolean() })),
} as const;
