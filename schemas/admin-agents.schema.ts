import * as v from 'valibot';
import { AbsolutePathSchema, PROVIDERS } from './config.schema.js';
import { PrincipalSchema } from './principal.schema.js';

/*
 * The admin API's agent resources (SPEC.md "Admin REST: agents", "Agent metrics", "Provider listing",
 * the logs rows of "Admin REST: system"; field names from WIRE.md §2) and the commands' payloads that
 * carry them to where `allowed_agents` is decided.
 */

const AgentName = v.pipe(v.string(), v.minLength(1), v.maxLength(128));

export const AGENT_STATUSES = ['online', 'busy', 'offline'] as const;

/** WIRE.md §2 agent. `status`: `busy` while a turn runs, `online` when started, else `offline`. */
export const AdminAgentSchema = v.object({
  name: v.string(),
  display_name: v.string(),
  provider: v.string(),
  model: v.string(),
  online: v.boolean(),
  status: v.picklist(AGENT_STATUSES),
  /** Sessions of the agent with a turn within its idle timeout (every session ever, when that is 0). */
  active_sessions: v.number(),
  /** ISO-8601 of the agent's last turn, null before its first. */
  last_active: v.nullable(v.string()),
  description: v.string(),
  has_avatar: v.boolean(),
  additional_directories: v.array(v.string()),
});
export type AdminAgent = v.InferOutput<typeof AdminAgentSchema>;

/** At most this many extra directories per agent: each is an add-dir root on every CLI turn. */
export const MAX_ADDITIONAL_DIRECTORIES = 64;
export const MAX_DIRECTORY_PATH_CHARS = 4096;

/** `PUT /api/agents/{name}`: exactly `{additional_directories}`; anything else is refused. */
export const UpdateAgentBodySchema = v.strictObject({
  additional_directories: v.pipe(
    v.array(v.pipe(AbsolutePathSchema, v.maxLength(MAX_DIRECTORY_PATH_CHARS), v.check((p) => !p.includes('\0'), 'no NUL character'))),
    v.maxLength(MAX_ADDITIONAL_DIRECTORIES),
  ),
});

export const METRICS_PERIODS = ['24h', '7d'] as const;
export type MetricsPeriod = (typeof METRICS_PERIODS)[number];
export const MetricsPeriodSchema = v.picklist(METRICS_PERIODS);

/** WIRE.md §2 metrics. `success_rate` is a percentage (0..100) of the period's finished turns that completed. */
export const AgentMetricsSchema = v.object({
  total_executions: v.number(),
  avg_duration_seconds: v.number(),
  error_count: v.number(),
  success_rate: v.number(),
  last_active: v.nullable(v.string()),
  tokens_used: v.number(),
  period: MetricsPeriodSchema,
});
export type AgentMetrics = v.InferOutput<typeof AgentMetricsSchema>;

/** One bucket of WIRE.md §2 history: `timestamp` is the bucket's start (ISO-8601), `avg_duration` seconds. */
export const MetricsBucketSchema = v.object({ timestamp: v.string(), executions: v.number(), errors: v.number(), avg_duration: v.number() });
export type MetricsBucket = v.InferOutput<typeof MetricsBucketSchema>;

export const DEFAULT_LOG_LINES = 100;
export const MAX_LOG_LINES = 2000;

/** WIRE.md §2 logs: `{agent, lines[]}`; the poll adds `timestamp`, the cursor to send back as `after`. */
export const LogLinesSchema = v.object({ agent: v.string(), lines: v.array(v.string()) });
export const LogPollSchema = v.object({ agent: v.string(), lines: v.array(v.string()), timestamp: v.number() });
export type LogLines = v.InferOutput<typeof LogLinesSchema>;
export type LogPoll = v.InferOutput<typeof LogPollSchema>;

/** SPEC.md "Provider listing". */
export const ProviderListingSchema = v.object({
  providers: v.array(v.object({ name: v.picklist(PROVIDERS), authenticated: v.boolean(), models: v.array(v.string()), default_model: v.string() })),
  agent_default_model: v.string(),
  agent_default_provider: v.picklist(PROVIDERS),
});
export type ProviderListingReply = v.InferOutput<typeof ProviderListingSchema>;

/** The avatar formats an upload may be; SVG is never one (a script vector served without a token). */
export const AVATAR_IMAGE_TYPES = ['png', 'jpeg', 'gif', 'webp'] as const;
/** An avatar is a small picture; the panel scales it down anyway. */
export const MAX_AVATAR_BYTES = 2 * 1024 * 1024;

const WithPrincipal = { principal: PrincipalSchema };
const Named = { ...WithPrincipal, name: AgentName };

export const AgentListQuerySchema = v.strictObject(WithPrincipal);
export const AgentQuerySchema = v.strictObject(Named);
export const AgentUpdateSchema = v.strictObject({ ...Named, additional_directories: UpdateAgentBodySchema.entries.additional_directories });
export const AvatarSetSchema = v.strictObject({
  ...Named,
  /** The image, base64: commands stay JSON-safe (DESIGN.md §10, a bus that may leave the process). */
  data_base64: v.pipe(v.string(), v.maxLength(Math.ceil(MAX_AVATAR_BYTES / 3) * 4 + 4)),
});
export const AvatarRemovedSchema = v.object({ name: v.string(), removed: v.boolean() });
export const MetricsQuerySchema = v.strictObject({ ...Named, period: MetricsPeriodSchema });
export const LogsQuerySchema = v.strictObject({ ...WithPrincipal, agent: AgentName, lines: v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(MAX_LOG_LINES)) });
export const LogsPollQuerySchema = v.strictObject({ ...WithPrincipal, agent: AgentName, after: v.pipe(v.number(), v.minValue(0), v.finite()) });
