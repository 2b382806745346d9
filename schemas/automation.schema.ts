import * as v from 'valibot';
import { REASONING_EFFORTS } from './config.schema.js';

/*
 * Cron job and webhook records (SPEC.md "Cron job and webhook records", WIRE.md §2), as stored in
 * `cron_jobs.json` and `webhooks.json` and as the admin API takes them. Stored records are loose
 * objects: the scheduler and webhook server of a later issue add their own fields (last run,
 * counters), and a rewrite from the admin API must keep them.
 */

export const MAX_RECORD_ID_CHARS = 64;
const MAX_TEXT = 200;
const MAX_DESCRIPTION = 20_000;

/** Ids name files and URL segments (`/hooks/<id>`): nothing that could traverse or need escaping. */
export const RecordIdSchema = v.pipe(
  v.string('must be a string'),
  v.regex(/^[A-Za-z0-9_-]+$/, 'must be letters, digits, _ and - only'),
  v.maxLength(MAX_RECORD_ID_CHARS, `must be at most ${MAX_RECORD_ID_CHARS} characters`),
);

/**
 * A `cron_task` webhook's runs work in `workspace/cron_tasks/webhook_<hook id>/`, a cron job's in
 * `cron_tasks/<job id>/`: a job id with this prefix would share a hook's folder and memory file.
 */
export const WEBHOOK_TASK_FOLDER_PREFIX = 'webhook_';
export const webhookTaskFolder = (hookId: string): string => `${WEBHOOK_TASK_FOLDER_PREFIX}${hookId}`;

/** Refused in any case, since the folder may live on a case-insensitive file system. */
export const CronJobIdSchema = v.pipe(
  RecordIdSchema,
  v.check((id) => !id.toLowerCase().startsWith(WEBHOOK_TASK_FOLDER_PREFIX), `must not start with ${WEBHOOK_TASK_FOLDER_PREFIX} (webhook runs use those folders)`),
);

const AgentName = v.pipe(
  v.string('must be a string'),
  v.regex(/^[a-zA-Z0-9_-]+$/, 'must be an agent name of letters, digits, _ and - only'),
  v.maxLength(64, 'must be at most 64 characters'),
);
const Title = v.pipe(v.string('must be a string'), v.trim(), v.minLength(1, 'must not be empty'), v.maxLength(MAX_TEXT, `must be at most ${MAX_TEXT} characters`));
const Description = v.pipe(v.string('must be a string'), v.maxLength(MAX_DESCRIPTION, `must be at most ${MAX_DESCRIPTION} characters`));
const ShortText = v.pipe(v.string('must be a string'), v.maxLength(MAX_TEXT, `must be at most ${MAX_TEXT} characters`));
const Clock = v.pipe(v.string('must be a string'), v.regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'must be HH:MM (24-hour)'));

function isTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}
const TimeZone = v.pipe(v.string('must be a string'), v.maxLength(64), v.check(isTimeZone, 'must be an IANA time zone such as Europe/Moscow'));

export const CRON_NICKNAMES: ReadonlySet<string> = new Set(['@yearly', '@annually', '@monthly', '@weekly', '@daily', '@midnight', '@hourly']);
/** A standard cron expression has exactly these fields (issue 14: "standard 5-field expressions"). */
export const CRON_FIELDS = ['minute', 'hour', 'day of month', 'month', 'day of week'] as const;
/**
 * The shape of a cron expression: exactly 5 fields (minute hour day-of-month month day-of-week) or
 * a nickname. A seconds field (6) or a years field (7) is not standard cron and is refused, so a
 * job cannot fire every second. Whether each field's values are in range is croner's to check
 * (machines/cron.logic, DESIGN.md §9).
 */
export function looksLikeCron(expr: string): boolean {
  const s = expr.trim();
  if (CRON_NICKNAMES.has(s.toLowerCase())) return true;
  const fields = s.split(/\s+/);
  return fields.length === CRON_FIELDS.length && fields.every((f) => /^[0-9A-Za-z*,/?#LW-]+$/.test(f));
}
const Schedule = v.pipe(
  v.string('must be a string'),
  v.trim(),
  v.maxLength(MAX_TEXT),
  v.check(looksLikeCron, 'must be a cron expression of 5 fields, minute hour day-of-month month day-of-week (e.g. "0 9 * * 1-5"), or @hourly/@daily/...; a seconds field is not accepted'),
);

/** SPEC.md CLIParametersConfig, task-level (not merged with the global one). */
const CliParameters = v.strictObject({
  claude: v.optional(v.array(ShortText)),
  codex: v.optional(v.array(ShortText)),
  gemini: v.optional(v.array(ShortText)),
});

const nullable = <S extends v.GenericSchema>(s: S) => v.optional(v.nullable(s));

/** The execution fields cron jobs and webhooks share (SPEC.md "Common"). */
const executionFields = {
  description: v.optional(Description),
  enabled: v.optional(v.boolean('must be true or false')),
  provider: nullable(ShortText),
  model: nullable(ShortText),
  reasoning_effort: nullable(v.picklist(REASONING_EFFORTS, `must be one of ${REASONING_EFFORTS.join(', ')}`)),
  cli_parameters: nullable(CliParameters),
  quiet_start: nullable(Clock),
  quiet_end: nullable(Clock),
  dependency: nullable(ShortText),
};

/**
 * Where a cron job's result goes: the agent's chat on that transport (the admin chat when unset),
 * and whether a successful run stays quiet (a failure is always told).
 */
const cronDeliveryFields = {
  transport: nullable(v.pipe(v.string('must be a string'), v.regex(/^[a-z][a-z0-9_-]{0,31}$/, 'must be a transport name such as telegram'))),
  chat_id: nullable(v.pipe(v.number('must be a number'), v.integer('must be a whole number'), v.safeInteger('must be a safe integer'))),
  topic_id: nullable(v.pipe(v.number('must be a number'), v.integer('must be a whole number'), v.safeInteger('must be a safe integer'))),
  silent_on_success: v.optional(v.boolean('must be true or false')),
};

/** `POST /api/cron` (WIRE.md: `{id?, title, schedule, agent, description, enabled}` plus SPEC's fields). */
export const CreateCronJobBodySchema = v.strictObject({
  id: v.optional(CronJobIdSchema),
  title: Title,
  name: v.optional(Title),
  schedule: Schedule,
  agent: AgentName,
  timezone: nullable(TimeZone),
  ...executionFields,
  ...cronDeliveryFields,
});
export type CreateCronJobBody = v.InferOutput<typeof CreateCronJobBodySchema>;

/** `PUT /api/cron/{id}`: any of the create fields but the id. */
export const UpdateCronJobBodySchema = v.strictObject({
  title: v.optional(Title),
  name: v.optional(Title),
  schedule: v.optional(Schedule),
  agent: v.optional(AgentName),
  timezone: nullable(TimeZone),
  ...executionFields,
  ...cronDeliveryFields,
});
export type UpdateCronJobBody = v.InferOutput<typeof UpdateCronJobBodySchema>;

export const WEBHOOK_MODES = ['wake', 'cron_task'] as const;
export const MASKED_SECRET = '***';
const Secret = v.pipe(v.string('must be a string'), v.minLength(8, 'must be at least 8 characters'), v.maxLength(256, 'must be at most 256 characters'));

/*
 * How an inbound call proves it comes from the sender (WIRE.md §4). `bearer`: `Authorization:
 * Bearer <the hook's secret, else webhooks.token>`. `hmac`: a keyed digest of the raw body with the
 * hook's secret, carried in a header; `signature` says which header and how to read it. The three
 * presets are the real senders' schemes; any field set beside a preset overrides it.
 */
export const WEBHOOK_AUTH_MODES = ['bearer', 'hmac'] as const;
export const WEBHOOK_SIGNATURE_PRESETS = ['github', 'stripe', 'slack'] as const;
export const HMAC_ALGORITHMS = ['sha256', 'sha1', 'sha512'] as const;
export const SIGNATURE_ENCODINGS = ['hex', 'base64'] as const;
/** Timestamped schemes refuse a timestamp further than this from now unless the hook says otherwise. */
export const DEFAULT_SIGNATURE_MAX_AGE_SECONDS = 300;
/** Where the timestamp goes in a signed-payload template: `{timestamp}.` (Stripe), `v0:{timestamp}:` (Slack). */
export const SIGNED_PAYLOAD_TIMESTAMP = '{timestamp}';

const HeaderName = v.pipe(v.string('must be a string'), v.regex(/^[A-Za-z0-9-]{1,64}$/, 'must be an HTTP header name (letters, digits and -, at most 64)'));
const ShortToken = v.pipe(v.string('must be a string'), v.maxLength(32, 'must be at most 32 characters'));

export const WebhookSignatureSchema = v.strictObject({
  preset: v.optional(v.picklist(WEBHOOK_SIGNATURE_PRESETS, `must be one of ${WEBHOOK_SIGNATURE_PRESETS.join(', ')}`)),
  /** The header carrying the signature (`X-Hub-Signature-256`). */
  header: v.optional(HeaderName),
  algorithm: v.optional(v.picklist(HMAC_ALGORITHMS, `must be one of ${HMAC_ALGORITHMS.join(', ')}`)),
  encoding: v.optional(v.picklist(SIGNATURE_ENCODINGS, `must be one of ${SIGNATURE_ENCODINGS.join(', ')}`)),
  /** Written before the digest and stripped before comparing (`sha256=`, `v0=`). */
  prefix: v.optional(ShortToken),
  /** The header is a `k=v,k=v` list (Stripe's `t=...,v1=...`): the key whose values are signatures. */
  signature_key: v.optional(ShortToken),
  /** In such a list, the key holding the signing time (Stripe's `t`). */
  timestamp_key: v.optional(ShortToken),
  /** A header holding the signing time (Slack's `X-Slack-Request-Timestamp`). */
  timestamp_header: v.optional(HeaderName),
  /** What is signed before the raw body, `{timestamp}` standing for the signing time. */
  signed_payload: v.optional(v.pipe(v.string('must be a string'), v.maxLength(64, 'must be at most 64 characters'))),
  /** Replay window of timestamped schemes, in seconds either side of now. */
  max_age_seconds: v.optional(v.pipe(v.number('must be a number'), v.integer('must be a whole number'), v.minValue(1, 'must be at least 1'), v.maxValue(86_400, 'must be at most 86400'))),
});
export type WebhookSignature = v.InferOutput<typeof WebhookSignatureSchema>;

const ChatNumber = v.pipe(v.number('must be a number'), v.integer('must be a whole number'), v.safeInteger('must be a safe integer'));

const webhookFields = {
  name: v.optional(Title),
  title: v.optional(Title),
  mode: v.optional(v.picklist(WEBHOOK_MODES, `must be one of ${WEBHOOK_MODES.join(', ')}`)),
  prompt_template: v.optional(Description),
  auth: v.optional(v.picklist(WEBHOOK_AUTH_MODES, `must be one of ${WEBHOOK_AUTH_MODES.join(', ')}`)),
  signature: nullable(WebhookSignatureSchema),
  /** `wake`'s target chat; unset: the agent's main chat (the primary messenger's first allowed user). */
  transport: nullable(v.pipe(v.string('must be a string'), v.regex(/^[a-z][a-z0-9_-]{0,31}$/, 'must be a transport name such as telegram'))),
  chat_id: nullable(ChatNumber),
  topic_id: nullable(ChatNumber),
  ...executionFields,
};

/** Where the webhook server takes a hook's calls: `/hooks/<id>`, or a full URL ending with it. */
const HOOK_PATH = /\/hooks\/([^/?#]+)$/;
const HookUrl = v.pipe(v.string('must be a string'), v.maxLength(2048, 'must be at most 2048 characters'));

/**
 * `POST /api/webhooks`. Without a secret one is generated and shown once, in the reply. WIRE.md §2's
 * panel sends `{id, name, url, method, agent, description}`: `url` and `method` are not stored (the
 * listing derives them), so they are only checked to agree with what the hook will be: `url` ends
 * with `/hooks/<id>` (without an `id`, the id is taken from it), `method` is POST.
 */
export const CreateWebhookBodySchema = v.pipe(
  v.strictObject({
    id: v.optional(RecordIdSchema),
    agent: AgentName,
    secret: v.optional(Secret),
    url: v.optional(HookUrl),
    method: v.optional(v.literal('POST', 'must be POST (the webhook server takes calls by POST only)')),
    ...webhookFields,
  }),
  v.forward(
    v.check((b) => {
      if (b.url === undefined) return true;
      const m = HOOK_PATH.exec(b.url);
      return m !== null && (b.id === undefined ? v.is(RecordIdSchema, m[1]) : m[1] === b.id);
    }, 'must be /hooks/<id> (or a URL ending with it), naming the hook\'s id'),
    ['url'],
  ),
  v.transform(({ url, method: _method, ...hook }) => (hook.id === undefined && url !== undefined ? { ...hook, id: HOOK_PATH.exec(url)![1]! } : hook)),
);
export type CreateWebhookBody = v.InferOutput<typeof CreateWebhookBodySchema>;

/** The hook id a `/hooks/<id>` URL names, or null when it names none. */
export function hookIdInUrl(url: string): string | null {
  const m = HOOK_PATH.exec(url);
  return m !== null && v.is(RecordIdSchema, m[1]) ? m[1]! : null;
}

/**
 * `PUT /api/webhooks/{id}`; a secret of `***` (the masked value a form sends back) keeps the old one,
 * and `""` (the panel's "Clear secret") removes the hook's own: bearer calls then need the global
 * `webhooks.token`, and an hmac hook refuses every call until it has a secret again (fail closed).
 * The panel's edit form sends the whole record back, `url` and `method` included: neither is stored
 * (the listing derives them), so they are only checked, like on create: `method` is POST, and `url`
 * names this hook (the automation actor compares it with the path's id, which a schema cannot see).
 */
export const UpdateWebhookBodySchema = v.pipe(
  v.strictObject({
    agent: v.optional(AgentName),
    secret: v.optional(v.union([v.literal(MASKED_SECRET), v.literal(''), Secret], 'must be the new secret (8 to 256 characters), "***" to keep it or "" to remove it')),
    url: v.optional(v.pipe(HookUrl, v.check((u) => hookIdInUrl(u) !== null, 'must be /hooks/<id> (or a URL ending with it), naming the hook\'s id'))),
    method: v.optional(v.literal('POST', 'must be POST (the webhook server takes calls by POST only)')),
    ...webhookFields,
  }),
  v.transform(({ method: _method, ...changes }) => changes),
);
export type UpdateWebhookBody = v.InferOutput<typeof UpdateWebhookBodySchema>;

export const MAX_VERIFY_PAYLOAD_CHARS = 256 * 1024;
/** `POST /api/webhooks/{id}/verify`: does `signature` sign `payload` with the hook's secret? */
export const VerifyWebhookBodySchema = v.strictObject({
  payload: v.pipe(v.string('must be a string'), v.maxLength(MAX_VERIFY_PAYLOAD_CHARS, `must be at most ${MAX_VERIFY_PAYLOAD_CHARS} characters`)),
  /** Hex or base64 HMAC-SHA256, optionally prefixed `sha256=`. */
  signature: v.pipe(v.string('must be a string'), v.minLength(1, 'must not be empty'), v.maxLength(200, 'must be at most 200 characters')),
});

/** What the files hold: every field the admin API writes, and whatever else a later writer added. */
export const CronJobRecordSchema = v.looseObject({
  id: RecordIdSchema,
  title: v.string(),
  name: v.optional(v.string()),
  schedule: v.string(),
  agent: v.string(),
  enabled: v.optional(v.boolean(), true),
  description: v.optional(v.string(), ''),
});
export type CronJobRecord = v.InferOutput<typeof CronJobRecordSchema>;

export const WebhookRecordSchema = v.looseObject({
  id: RecordIdSchema,
  agent: v.string(),
  name: v.optional(v.string()),
  title: v.optional(v.string()),
  enabled: v.optional(v.boolean(), true),
  description: v.optional(v.string(), ''),
  secret: v.optional(v.nullable(v.string()), null),
});
export type WebhookRecord = v.InferOutput<typeof WebhookRecordSchema>;

/**
 * What the webhook server reads of a stored record to decide a call: the fields the admin API
 * writes, parsed again because webhooks.json may be edited by hand (a bad value refuses calls to
 * that hook, never the whole file).
 */
export const WebhookTriggerSettingsSchema = v.object({
  id: RecordIdSchema,
  agent: AgentName,
  name: v.optional(v.string()),
  enabled: v.optional(v.boolean(), true),
  /**
   * As strong as the admin API demands: a short one by hand, or a listing's masked `***` copied back
   * (an import of an export, a ductor `token` field), would let a guessable credential in.
   */
  secret: v.optional(v.nullable(Secret), null),
  mode: v.optional(v.picklist(WEBHOOK_MODES), 'wake'),
  prompt_template: v.optional(v.nullable(v.string()), null),
  auth: v.optional(v.picklist(WEBHOOK_AUTH_MODES), 'bearer'),
  signature: v.optional(v.nullable(WebhookSignatureSchema), null),
  transport: v.optional(v.nullable(v.string()), null),
  chat_id: v.optional(v.nullable(ChatNumber), null),
  topic_id: v.optional(v.nullable(ChatNumber), null),
  provider: v.optional(v.nullable(v.string()), null),
  model: v.optional(v.nullable(v.string()), null),
  reasoning_effort: v.optional(v.nullable(v.string()), null),
  dependency: v.optional(v.nullable(v.string()), null),
  cli_parameters: v.optional(v.nullable(CliParameters), null),
  quiet_start: v.optional(v.nullable(Clock), null),
  quiet_end: v.optional(v.nullable(Clock), null),
});
export type WebhookTriggerSettings = v.InferOutput<typeof WebhookTriggerSettingsSchema>;

/**
 * What the scheduler reads of a stored job to run it, parsed again because cron_jobs.json may be
 * edited by hand: a job whose fields are wrong is not run (and says why), the others are.
 */
export const CronJobSettingsSchema = v.object({
  /** A job stored before such ids were refused is not run either: its runs would read a hook's memory. */
  id: CronJobIdSchema,
  agent: AgentName,
  title: v.string(),
  schedule: v.string(),
  enabled: v.optional(v.boolean(), true),
  description: v.optional(v.string(), ''),
  timezone: v.optional(v.nullable(v.string()), null),
  provider: v.optional(v.nullable(v.string()), null),
  model: v.optional(v.nullable(v.string()), null),
  reasoning_effort: v.optional(v.nullable(v.string()), null),
  cli_parameters: v.optional(v.nullable(CliParameters), null),
  quiet_start: v.optional(v.nullable(Clock), null),
  quiet_end: v.optional(v.nullable(Clock), null),
  dependency: v.optional(v.nullable(v.string()), null),
  transport: v.optional(v.nullable(v.string()), null),
  chat_id: v.optional(v.nullable(ChatNumber), null),
  topic_id: v.optional(v.nullable(ChatNumber), null),
  silent_on_success: v.optional(v.boolean(), false),
});
export type CronJobSettings = v.InferOutput<typeof CronJobSettingsSchema>;
export type CronCliParameters = v.InferOutput<typeof CliParameters>;

/** The run statuses a cron job or `cron_task` run ends with (the two `skipped:*` never start a CLI). */
export const CRON_RUN_STATUS = {
  success: 'success',
  folderMissing: 'error:folder_missing',
  timeout: 'error:timeout',
  interrupted: 'error:interrupted',
  quietHours: 'skipped:quiet_hours',
  missed: 'skipped:missed',
} as const;
export const cliNotFoundStatus = (provider: string): string => `error:cli_not_found_${provider}`;
export const exitStatus = (rc: number | string): string => `error:exit_${rc}`;

const uniqueIds = <T extends { id: string }>(list: T[]): boolean => new Set(list.map((r) => r.id)).size === list.length;
/** `cron_jobs.json`: a top-level array with unique ids (`{jobs: [...]}` is read too). */
export const CronJobsFileSchema = v.pipe(
  v.union([v.array(CronJobRecordSchema), v.pipe(v.looseObject({ jobs: v.array(CronJobRecordSchema) }), v.transform((o) => o.jobs))]),
  v.check((l) => uniqueIds(l), 'ids must be unique'),
);
/**
 * A hook as ductor writes it (`~/.ductor/webhooks.json`: `auth_mode`, `token`, `hmac_secret`,
 * `hmac_header`, `hmac_algorithm`, `hmac_encoding`, `hmac_sig_prefix`, quiet hours as whole hours,
 * no `agent`), read as the svc record it means, so a user's existing hooks keep working; svc's own
 * field wins where both are set, and ductor's fields stay in the record. Its `*_regex` fields
 * (signature extraction by regular expression) have no svc equivalent: they are kept, and the
 * webhook server refuses such a hook with a line saying so (machines/webhook.logic.ts).
 */
export function fromDuctorHook(raw: unknown): unknown {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return raw;
  const h = raw as Record<string, unknown>;
  const text = (x: unknown) => (typeof x === 'string' && x !== '' ? x : undefined);
  const hour = (x: unknown) => (typeof x === 'number' && Number.isInteger(x) && x >= 0 && x <= 23 ? `${String(x).padStart(2, '0')}:00` : x);
  const hmac = h.auth_mode === 'hmac';
  const out: Record<string, unknown> = { ...h };
  out.agent ??= 'main';
  if (out.auth === undefined && (h.auth_mode === 'hmac' || h.auth_mode === 'bearer')) out.auth = h.auth_mode;
  if (out.secret === undefined || out.secret === null) {
    const secret = hmac ? text(h.hmac_secret) : text(h.token);
    if (secret !== undefined) out.secret = secret;
  }
  if (out.signature === undefined && hmac && text(h.hmac_header)) {
    out.signature = Object.fromEntries(
      Object.entries({ header: text(h.hmac_header), algorithm: text(h.hmac_algorithm), encoding: text(h.hmac_encoding), prefix: typeof h.hmac_sig_prefix === 'string' ? h.hmac_sig_prefix : undefined }).filter(
        ([, x]) => x !== undefined,
      ),
    );
  }
  out.quiet_start = hour(h.quiet_start);
  out.quiet_end = hour(h.quiet_end);
  if (out.quiet_start === undefined) delete out.quiet_start;
  if (out.quiet_end === undefined) delete out.quiet_end;
  return out;
}

const StoredWebhook = v.pipe(v.unknown(), v.transform(fromDuctorHook), WebhookRecordSchema);

/**
 * `webhooks.json`: a top-level array with unique ids; `{webhooks: [...]}` and ductor's
 * `{hooks: [...]}` are read too (and written back as the array).
 */
export const WebhooksFileSchema = v.pipe(
  v.union([
    v.array(StoredWebhook),
    v.pipe(v.looseObject({ webhooks: v.array(StoredWebhook) }), v.transform((o) => o.webhooks)),
    v.pipe(v.looseObject({ hooks: v.array(StoredWebhook) }), v.transform((o) => o.hooks)),
  ]),
  v.check((l) => uniqueIds(l), 'ids must be unique'),
);
