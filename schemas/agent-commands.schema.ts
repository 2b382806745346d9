import * as v from 'valibot';

/**
 * The contract between edges and the agent runtime. Edges send `agent.message` / `agent.abort` /
 * `agent.list` on the bus; the runtime streams the turn as transient `turn.*` chunks tagged with
 * the caller's `request_id`, and replies to `agent.message` once the turn has finished.
 */

export const TURN_KINDS = ['foreground', 'background', 'task', 'interagent', 'cron'] as const;
export type TurnKind = (typeof TURN_KINDS)[number];

/** Who is asking, for the permission mode (SPEC.md "CLI permission mode by role"). */
export const PermissionSourceSchema = v.variant('kind', [
  v.object({ kind: v.literal('token'), role: v.nullable(v.string()) }),
  v.object({ kind: v.literal('messenger'), senderId: v.union([v.number(), v.string()]) }),
  v.object({ kind: v.literal('interagent'), callerUserId: v.optional(v.string()), userRole: v.optional(v.string()) }),
  v.object({ kind: v.literal('system') }),
  v.object({ kind: v.literal('none') }),
]);

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
  source: PermissionSourceSchema,
  kind: v.picklist(TURN_KINDS),
  /** Start a fresh provider session before this message. */
  new_session: v.optional(v.boolean()),
  /** Set as SVC_CALLER_USER_ID for the CLI (inter-agent identity). */
  caller_user_id: v.optional(v.string()),
});
export type AgentMessage = v.InferOutput<typeof AgentMessageSchema>;

export const AgentAbortSchema = v.object({
  chat_id: ChatId,
  /** Limit to one agent; absent aborts the chat's work on every agent. */
  agent: v.optional(AgentName),
});
export type AgentAbort = v.InferOutput<typeof AgentAbortSchema>;

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
  | { type: 'turn.text_delta'; data: TurnChunkBase & { text: string } }
  | { type: 'turn.tool_activity'; data: TurnChunkBase & { tool: string } }
  | { type: 'turn.system_status'; data: TurnChunkBase & { status: string | null } };

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
