import * as v from 'valibot';
import { typeNames } from './type-names.js';

/*
 * The daemon's own upkeep (SPEC.md CleanupConfig, MemoryConfig, HeartbeatConfig): one summary fact
 * per run, never one per file or per skipped tick, so a busy workspace does not flood the log.
 */

/** Stream of the daily cleanup and memory maintenance runs. */
export const HOUSEKEEPING_STREAM = 'housekeeping';
/** Stream of heartbeat answers and stale-turn sweeps. */
export const HEARTBEAT_STREAM = 'heartbeat';

const Count = v.pipe(v.number(), v.integer(), v.minValue(0));

export const CLEANUP_EVENT_SCHEMAS = {
  /**
   * One daily run over every workspace. `skipped`: entries that changed between the listing and
   * their removal (replaced, touched, turned into a link) and were left alone; `errors` holds at
   * most a few messages, `error_count` all of them.
   */
  'cleanup.ran': v.object({
    workspaces: Count,
    files_removed: Count,
    links_removed: Count,
    dirs_removed: Count,
    bytes_freed: Count,
    skipped: Count,
    error_count: Count,
    errors: v.array(v.string()),
  }),
};
export const CLEANUP_EVENTS = typeNames(CLEANUP_EVENT_SCHEMAS);

export const MEMORY_MAINTENANCE_EVENT_SCHEMAS = {
  /** The daily check: sessions ended for age, modules over the soft line limit (reported, never cut). */
  'memory.maintained': v.object({
    sessions_expired: Count,
    over_limit: v.array(v.object({ agent: v.string(), filename: v.string(), lines: Count })),
    line_limit: Count,
    /** Always Load entries of MAINMEMORY.md naming a module that does not exist. */
    missing: v.array(v.object({ agent: v.string(), filename: v.string() })),
  }),
  /**
   * The monthly memory-review cron record was put into cron_jobs.json. Recorded once: a user who
   * deletes the record does not get it back.
   */
  'memory.review_seeded': v.object({ job_id: v.string(), agent: v.string(), created: v.boolean() }),
};
export const MEMORY_MAINTENANCE_EVENTS = typeNames(MEMORY_MAINTENANCE_EVENT_SCHEMAS);

export const HEARTBEAT_EVENT_SCHEMAS = {
  /** A heartbeat turn ended; `delivered` false: the answer was the ack token and nobody was told. */
  'heartbeat.answered': v.object({
    agent: v.string(),
    transport: v.string(),
    chat_id: v.number(),
    topic_id: v.nullable(v.number()),
    request_id: v.string(),
    delivered: v.boolean(),
  }),
  /**
   * A turn ran past twice its own time limit (`cli_timeout * 2` for a turn bounded by cli_timeout)
   * and that turn alone was aborted. `chat_id` null: its session is no longer live.
   */
  'heartbeat.stale_aborted': v.object({
    agent: v.string(),
    turn_id: v.string(),
    session_key: v.string(),
    chat_id: v.nullable(v.number()),
    running_ms: Count,
    threshold_ms: Count,
    killed: Count,
  }),
};
export const HEARTBEAT_EVENTS = typeNames(HEARTBEAT_EVENT_SCHEMAS);
