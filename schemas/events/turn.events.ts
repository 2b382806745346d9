import * as v from 'valibot';
import { typeNames } from './type-names.js';

/*
 * Stream `turn:<id>`: one CLI turn, from the request to its end. Written by the turn machine and,
 * after a restart, by turn recovery (which ends turns the previous run left open).
 */

export const TURN_KINDS = ['foreground', 'background', 'task', 'interagent', 'cron', 'workflow'] as const;
export type TurnKind = (typeof TURN_KINDS)[number];

export const TURN_STATUSES = ['completed', 'failed', 'timed_out', 'aborted'] as const;
export type TurnStatus = (typeof TURN_STATUSES)[number];

export const TurnFileSchema = v.object({ path: v.string(), name: v.string(), is_image: v.boolean() });
export type TurnFile = v.InferOutput<typeof TurnFileSchema>;

export const TurnUsageSchema = v.object({ input_tokens: v.number(), output_tokens: v.number(), cached_tokens: v.optional(v.number()) });
export type TurnUsage = v.InferOutput<typeof TurnUsageSchema>;

/** `turn.failed {reason}` of a turn a restart of svc cut off. */
export const INTERRUPTED_REASON = 'daemon-restarted';
/** `turn.aborted {cause}` of a turn svc itself ended because it was stopping. */
export const SHUTDOWN_ABORT = 'shutdown';

const Ended = { text: v.string(), session_id: v.nullable(v.string()), stream_fallback: v.boolean() };

export const TURN_EVENT_SCHEMAS = {
  'turn.started': v.object({
    agent: v.string(),
    session_key: v.string(),
    request_id: v.string(),
    kind: v.picklist(TURN_KINDS),
    /** The user's message as sent, so `/retry` can ask it again after a restart cut the answer. */
    prompt: v.string(),
    provider: v.string(),
    model: v.nullable(v.string()),
    resumed: v.boolean(),
    timeout_ms: v.number(),
  }),
  /** The CLI's process group; start time and boot id recognise it after the pid is reused. */
  'turn.spawned': v.object({ pid: v.number(), start_time: v.nullable(v.number()), boot_id: v.nullable(v.string()), attempt: v.number(), streaming: v.boolean() }),
  /** A checkpoint of the text streamed so far, so a restart can show the partial answer. */
  'turn.progressed': v.object({ text: v.string() }),
  'turn.extended': v.object({ extensions: v.number() }),
  /** The CLI was killed by a signal; the turn retries once on a fresh provider session. */
  'turn.recovering': v.object({ provider: v.string(), signal: v.string() }),
  /** Streaming produced nothing; the turn retries without streaming. */
  'turn.fallback': v.object({ reason: v.string() }),
  'turn.completed': v.object({
    ...Ended,
    files: v.array(TurnFileSchema),
    usage: v.nullable(TurnUsageSchema),
    cost_usd: v.nullable(v.number()),
    duration_ms: v.nullable(v.number()),
  }),
  /** The turn machine's failure, or (with `session_key`, `pid`, `ended_processes`) a turn a restart cut off. */
  'turn.failed': v.object({
    ...Ended,
    reason: v.string(),
    error: v.string(),
    session_key: v.optional(v.string()),
    pid: v.optional(v.nullable(v.number())),
    ended_processes: v.optional(v.number()),
  }),
  'turn.timed_out': v.object({ ...Ended, reason: v.string() }),
  /** `cause` is the abort's reason (`user`, `shutdown`, ...), so a restart can tell a stop of svc from a /stop. */
  'turn.aborted': v.object({ ...Ended, reason: v.string(), cause: v.nullable(v.string()) }),
  /** The chat was shown the notice of an answer a restart cut off. */
  'turn.notice_delivered': v.object({ session_key: v.string() }),
  /** The user asked the cut-off question again with `/retry`. */
  'turn.retried': v.object({ request_id: v.string() }),
};
export const TURN_EVENTS = typeNames(TURN_EVENT_SCHEMAS);

/** Fields every streamed chunk carries, so an edge can route it without knowing the turn. */
export const TurnChunkBaseSchema = v.object({
  request_id: v.string(),
  turn_id: v.string(),
  agent: v.string(),
  session_key: v.string(),
  transport: v.string(),
  chat_id: v.number(),
  topic_id: v.nullable(v.number()),
});
export type TurnChunkBase = v.InferOutput<typeof TurnChunkBaseSchema>;

/** Transient chunks of a running turn on `turn:<id>`: live listeners only, never persisted. */
export const TURN_CHUNK_SCHEMAS = {
  'turn.text_delta': v.object({ ...TurnChunkBaseSchema.entries, text: v.string() }),
  'turn.tool_activity': v.object({ ...TurnChunkBaseSchema.entries, tool: v.string() }),
  'turn.system_status': v.object({ ...TurnChunkBaseSchema.entries, status: v.nullable(v.string()) }),
};
export const TURN_CHUNKS = typeNames(TURN_CHUNK_SCHEMAS);

type TurnChunkType = keyof typeof TURN_CHUNK_SCHEMAS;
/** A streamed chunk of a turn, as the runtime emits it. */
export type TurnChunk = { [K in TurnChunkType]: { stream: string; type: K; data: v.InferOutput<(typeof TURN_CHUNK_SCHEMAS)[K]> } }[TurnChunkType];
