import * as v from 'valibot';
import { TransportHealthSchema } from './chat-transport.js';

/*
 * The dashboard and its activity feed (SPEC.md "Activity event", "Dashboard summary", WIRE.md §2):
 * what the panel reads, and the vocabulary the feed's rules (machines/activity.logic.ts) speak.
 */

/** `Accept-Language`: `ru` is the default, `uk` is served as `ru` (WIRE.md §2). */
export const LANGUAGES = ['ru', 'en'] as const;
export type Language = (typeof LANGUAGES)[number];

/** SPEC.md's types; anything else a source yields gets the localised fallback title. */
export const ACTIVITY_TYPES = ['task_completed', 'task_failed', 'agent_started', 'agent_stopped', 'cron_fired', 'cron_failed', 'webhook_called', 'auth_login'] as const;
export type ActivityType = (typeof ACTIVITY_TYPES)[number];

export const ACTIVITY_SEVERITIES = ['info', 'success', 'warning', 'error'] as const;
export type ActivitySeverity = (typeof ACTIVITY_SEVERITIES)[number];

/** Where an event came from; also the prefix of its id (`tasks:<task_id>`). */
export const ACTIVITY_SOURCES = ['notifications', 'tasks', 'cron', 'audit', 'agents'] as const;
export type ActivitySource = (typeof ACTIVITY_SOURCES)[number];

export const ActivityEventSchema = v.object({
  id: v.string(),
  /** An ActivityType, or a type a newer source yields (shown with the fallback title). */
  type: v.string(),
  title: v.string(),
  subtitle: v.string(),
  agent_name: v.nullable(v.string()),
  /** ISO-8601 UTC. */
  timestamp: v.string(),
  severity: v.picklist(ACTIVITY_SEVERITIES),
  /** Only with `verbose=1`. */
  source: v.optional(v.picklist(ACTIVITY_SOURCES)),
  raw: v.optional(v.unknown()),
});
export type ActivityEvent = v.InferOutput<typeof ActivityEventSchema>;

/** The legacy `/api/activity` feed: raw type and message, unchanged since before 1.3.29. */
export const LegacyActivitySchema = v.object({ type: v.string(), message: v.string() });
export type LegacyActivity = v.InferOutput<typeof LegacyActivitySchema>;

/** Host figures shared by `/api/system/status` and the dashboard's `system` (WIRE.md `*_percent`). */
export const SystemFiguresSchema = v.object({
  cpu_percent: v.number(),
  ram_percent: v.number(),
  disk_percent: v.number(),
  uptime_seconds: v.number(),
  uptime_human: v.string(),
});
export type SystemFigures = v.InferOutput<typeof SystemFiguresSchema>;

export const SystemStatusSchema = v.object({
  ...SystemFiguresSchema.entries,
  instance_name: v.string(),
  version: v.string(),
});
export type SystemStatus = v.InferOutput<typeof SystemStatusSchema>;

export const DashboardCountersSchema = v.object({
  agents_total: v.number(),
  agents_online: v.number(),
  active_tasks: v.number(),
  running_crons: v.number(),
  failed_last_24h: v.number(),
});
export type DashboardCounters = v.InferOutput<typeof DashboardCountersSchema>;

export const DashboardSummarySchema = v.object({
  system: SystemFiguresSchema,
  counters: DashboardCountersSchema,
  recent_activity: v.array(ActivityEventSchema),
  /** Beyond SPEC.md's fields: the chat transports running now and their state, so the panel can say a bot is down and why. */
  transports: v.array(TransportHealthSchema),
});
export type DashboardSummary = v.InferOutput<typeof DashboardSummarySchema>;

export const SUMMARY_ACTIVITY_COUNT = 10;
export const SUMMARY_CACHE_MS = 5_000;
export const DEFAULT_ACTIVITY_LIMIT = 20;
export const MAX_ACTIVITY_LIMIT = 200;
export const MAX_INSTANCE_NAME_CHARS = 100;
export const MAX_ACTIVITY_ID_CHARS = 300;

export const InstanceNameSchema = v.pipe(
  v.string('must be a string'),
  v.trim(),
  v.minLength(1, 'must not be empty or only whitespace'),
  v.maxLength(MAX_INSTANCE_NAME_CHARS, `must be at most ${MAX_INSTANCE_NAME_CHARS} characters`),
  v.check((s) => !/[\u0000-\u001f\u007f]/.test(s), 'must not contain control characters'),
);
export const RenameInstanceBodySchema = v.strictObject({ instance_name: InstanceNameSchema });

/** The one stream of instance-wide settings facts. */
export const SYSTEM_STREAM = 'system';

/**
 * The language to answer in, from an `Accept-Language` header: the first supported tag by
 * preference (`q`), `uk` served as `ru`, and `ru` when nothing supported is named.
 */
export function pickLanguage(header: string | undefined): Language {
  if (!header) return 'ru';
  const tags = header
    .split(',')
    .slice(0, 20)
    .map((part, i) => {
      const [tag = '', ...params] = part.trim().split(';');
      const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
      // A malformed weight is no weight at all: that entry is dropped, not taken as 1.
      return { base: tag.trim().toLowerCase().split('-')[0]!, q: q === undefined ? 1 : /^[0-9.]+$/.test(q.slice(2)) ? Number(q.slice(2)) : NaN, i };
    })
    .filter((t) => Number.isFinite(t.q) && t.q > 0)
    .sort((a, b) => b.q - a.q || a.i - b.i);
  for (const t of tags) {
    if (t.base === 'en') return 'en';
    if (t.base === 'ru' || t.base === 'uk') return 'ru';
  }
  return 'ru';
}
