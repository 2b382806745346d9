import * as v from 'valibot';
import { CreateCronJobBodySchema, CreateWebhookBodySchema, CronJobIdSchema, RecordIdSchema } from './automation.schema.js';
import { ROLES } from './config.schema.js';
import { USERNAME_MAX_LENGTH } from './users.schema.js';

/*
 * Export and import (SPEC.md `/api/export`, `/api/import`; WIRE.md §2). An export carries no
 * password hash, TOTP secret or webhook secret, so an import never brings one: imported users
 * cannot log in until an admin sets a password, imported webhooks verify nothing until given a secret.
 */

export const MAX_IMPORT_ITEMS = 1000;

/** Fields an export adds that describe state, not configuration: dropped on import. */
export const DERIVED_RECORD_FIELDS = ['status', 'next_run', 'url', 'method', 'last_run_at', 'last_triggered', 'execution_count', 'avg_duration', 'trigger_count', 'created_at', 'updated_at'] as const;

const derived = Object.fromEntries(DERIVED_RECORD_FIELDS.map((k) => [k, v.optional(v.unknown())])) as Record<(typeof DERIVED_RECORD_FIELDS)[number], v.OptionalSchema<v.UnknownSchema, undefined>>;

export const ImportCronJobSchema = v.strictObject({
  ...CreateCronJobBodySchema.entries,
  ...derived,
  id: CronJobIdSchema,
  // The seeded memory-review job carries its prompt beside the description (machines/housekeeping.logic),
  // so an export holds it; kept as it came, the scheduler reads the description.
  prompt: v.optional(v.pipe(v.string('must be a string'), v.maxLength(100_000, 'must be at most 100000 characters'))),
});
export const ImportWebhookSchema = v.strictObject({
  ...CreateWebhookBodySchema.entries,
  ...derived,
  id: RecordIdSchema,
  // An export masks it; a masked or empty secret imports as none.
  secret: v.optional(v.nullable(v.string())),
});

export const ImportUserSchema = v.strictObject({
  username: v.pipe(
    v.string('must be a string'),
    v.check((s) => s.trim() === s && s !== '' && s.length <= USERNAME_MAX_LENGTH && !/[\s\u0000-\u001f/\\]/.test(s), `must be a name of at most ${USERNAME_MAX_LENGTH} characters without spaces, slashes or control characters`),
  ),
  role: v.picklist(ROLES, `must be one of ${ROLES.join(', ')}`),
  display_name: v.optional(v.pipe(v.string('must be a string'), v.maxLength(200))),
  allowed_agents: v.optional(v.array(v.pipe(v.string('must be a string'), v.regex(/^(\*|[a-zA-Z0-9_-]{1,64})$/, 'must be an agent name or *')))),
  telegram_user_ids: v.optional(v.array(v.pipe(v.number('must be a number'), v.safeInteger('must be a whole number')))),
  active: v.optional(v.boolean('must be true or false')),
  // What an export shows of state the import does not take over.
  created_at: v.optional(v.unknown()),
  totp_enabled: v.optional(v.unknown()),
  avatar: v.optional(v.unknown()),
});

const list = <S extends v.GenericSchema>(s: S) => v.optional(v.pipe(v.array(s), v.maxLength(MAX_IMPORT_ITEMS, `must hold at most ${MAX_IMPORT_ITEMS} entries`)), () => []);

export const ImportBodySchema = v.strictObject({
  version: v.optional(v.string()),
  exported_at: v.optional(v.string()),
  cron_jobs: list(ImportCronJobSchema),
  webhooks: list(ImportWebhookSchema),
  users: list(ImportUserSchema),
});
export type ImportBody = v.InferOutput<typeof ImportBodySchema>;

export const ImportResultSchema = v.object({ cron_jobs_added: v.number(), webhooks_added: v.number(), users_added: v.number(), skipped: v.number() });
export type ImportResult = v.InferOutput<typeof ImportResultSchema>;

export const ExportSchema = v.object({
  version: v.string(),
  exported_at: v.string(),
  cron_jobs: v.array(v.looseObject({ id: v.string() })),
  webhooks: v.array(v.looseObject({ id: v.string() })),
  users: v.array(v.looseObject({ username: v.string() })),
});
export type Export = v.InferOutput<typeof ExportSchema>;
