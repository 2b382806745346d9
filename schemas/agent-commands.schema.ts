import * as v from 'valibot';
import { PrincipalSchema } from './principal.schema.js';

/**
 * The contract between every surface and the agent runtime (bus/agents.ts implements both sides).
 * `agent.message` is answered as soon as the runtime has queued the message (accepted) or refused
 * it; the turn then streams as transient `turn.*` chunks and ends with one `agent.replied`, all
 * tagged with the message's `request_id`, which is also the correlation id of every fact it causes.
 * Each command carries the caller's Principal: what it may do is decided where the command is handled.
 */

export const TURN_KINDS = ['foreground', 'background', 'task', 'interagent', 'cron'] as const;
export type TurnKind = (typeof TURN_KINDS)[number];

const ChatId = v.pipe(v.number(), v.integer());
const AgentName = v.pipe(v.string(), v.regex(/^[a-zA-Z0-9_-]+$/, 'letters, digits, _ and - only'), v.maxLength(64));

export const AgentMessageSchema = v.object({
  /** Chosen by the caller, unique; every streamed chunk of the turn carries it. */
  request_id: v.pipe(v.string(), v.minLength(1), v.maxLength(128)),
  agent: AgentName,
  /** `api`, `telegram`, `matrix`, `admin`, `internal`, ... */
  transport: v.pipe(v.string(), v.minLength(1), v.maxLength(32)),
  chat_id: ChatId,
  topic_id: v.nullable(ChatId),
  text: v.string(),
  /** Who asks: picks the permission mode, and may be refused the agent (allowed_agents, can_call). */
  principal: PrincipalSchema,
  kind: v.picklist(TURN_KINDS),
  /** Start a fresh provider session before this message. */
  new_session: v.optional(v.boolean()),
});
export type AgentMessage = v.InferOutput<typeof AgentMessageSchema>;

/** What a sender fills in; the contract adds the request id. */
export type AgentAsk = Omit<AgentMessage, 'request_id' | 'principal'>;

export const AgentAbortSchema = v.object({
  chat_id: ChatId,
  /** Limit to one agent; absent aborts the chat's work on every agent the principal may use. */
  agent: v.optional(AgentName),
  principal: PrincipalSchema,
});
export type AgentAbort = v.InferOutput<typeof AgentAbortSchema>;

export const AgentListSchema = v.object({ principal: PrincipalSchema });
export type AgentList = v.InferOutput<typeof AgentListSchema>;

/** The reply to `agent.message`: queued (its outcome follows as `agent.replied`), or refused with a code. */
export type Admission = { accepted: true } | { accepted: false; code: string; message: string };

/** How a turn ended, or why it could not (`internal-error` for a failure that is not an SvcError). */
export type Reply = { request_id: string; outcome: TurnOutcome } | { request_id: string; error: { code: string; message: string } };

export const TURN_STATUSES = ['completed', 'failed', 'timed_out', 'aborted'] as const;
export type TurnStatus = (typeof TURN_STATUSES)[number];

export interface TurnFile {
  path: string;
  name: string;
  is_image: boolean;
}

export interface TurnUsage {
  input_tokens: number;
  output_tokens: number;
  cached_tokens?: number;
}

/** The reply to `agent.message`. A chat command (`/new`, `/model`, ...) answers with status completed and no turn. */
export interface TurnOutcome {
  request_id: string;
  turn_id: string | null;
  agent: string;
  session_key: string;
  status: TurnStatus;
  text: string;
  is_error: boolean;
  stream_fallback: boolean;
  files: TurnFile[];
  provider: string | null;
  model: string | null;
  session_id: string | null;
  usage: TurnUsage | null;
  cost_usd: number | null;
  duration_ms: number | null;
  /** Machine-readable reason when status is not completed (`timeout`, `exit-code`, `spawn-failed`, `aborted`, ...). */
  reason: string | null;
}

export interface AbortOutcome {
  killed: number;
}

export interface AgentSummary {
  name: string;
  provider: string;
  model: string;
  online: boolean;
  is_main: boolean;
}

/** Fields every streamed chunk carries, so an edge can route it without knowing the turn. */
export interface TurnChunkBase {
  request_id: string;
  turn_id: string;
  agent: string;
  session_key: string;
  transport: string;
  chat_id: number;
  topic_id: number | null;
}

export type TurnChunk =
  | { stream: string; type: 'turn.text_delta'; data: TurnChunkBase & { text: string } }
  | { stream: string; type: 'turn.tool_activity'; data: TurnChunkBase & { tool: string } }
  | { stream: string; type: 'turn.system_status'; data: TurnChunkBase & { status: string | null } };

export const TURN_CHUNK_TYPES = ['turn.text_delta', 'turn.tool_activity', 'turn.system_status'] as const;
/** The transient that ends a request's stream: its Reply. */
export const AGENT_REPLIED = 'agent.replied';

export const AGENT_COMMANDS = {
  message: 'agent.message',
  abort: 'agent.abort',
  list: 'agent.list',
  /** Hands over (once) the notices of answers a restart cut off in one chat; see InterruptedNotice. */
  takeInterrupted: 'agent.take_interrupted',
} as const;

export const TakeInterruptedSchema = v.strictObject({
  session_key: v.pipe(v.string(), v.minLength(1), v.maxLength(80)),
});
export type TakeInterrupted = v.InferOutput<typeof TakeInterruptedSchema>;

/** An answer a restart cut off: `text` is what the chat shows in its place (the partial answer and how to retry). */
export interface InterruptedNotice {
  turn_id: string;
  agent: string;
  text: string;
}
