import * as v from 'valibot';
import { defineCommand } from './command.js';
import { TURN_KINDS, TURN_STATUSES, TurnFileSchema, TurnUsageSchema } from './events/turn.events.js';

/**
 * The contract between edges and the agent runtime. Edges send `agent.message` / `agent.abort` /
 * `agent.list` on the bus; the runtime streams the turn as transient `turn.*` chunks tagged with
 * the caller's `request_id`, and replies to `agent.message` once the turn has finished.
 */

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

/** The reply to `agent.message`. A chat command (`/new`, `/model`, ...) answers with status completed and no turn. */
export const TurnOutcomeSchema = v.object({
  request_id: v.string(),
  turn_id: v.nullable(v.string()),
  agent: v.string(),
  session_key: v.string(),
  status: v.picklist(TURN_STATUSES),
  text: v.string(),
  is_error: v.boolean(),
  stream_fallback: v.boolean(),
  files: v.array(TurnFileSchema),
  provider: v.nullable(v.string()),
  model: v.nullable(v.string()),
  session_id: v.nullable(v.string()),
  usage: v.nullable(TurnUsageSchema),
  cost_usd: v.nullable(v.number()),
  duration_ms: v.nullable(v.number()),
  /** Machine-readable reason when status is not completed (`timeout`, `exit-code`, `spawn-failed`, `aborted`, ...). */
  reason: v.nullable(v.string()),
});
export type TurnOutcome = v.InferOutput<typeof TurnOutcomeSchema>;

export const AbortOutcomeSchema = v.object({ killed: v.number() });
export type AbortOutcome = v.InferOutput<typeof AbortOutcomeSchema>;

export const AgentSummarySchema = v.object({
  name: v.string(),
  provider: v.string(),
  model: v.string(),
  online: v.boolean(),
  is_main: v.boolean(),
});
export type AgentSummary = v.InferOutput<typeof AgentSummarySchema>;

export const TakeInterruptedSchema = v.strictObject({
  session_key: v.pipe(v.string(), v.minLength(1), v.maxLength(80)),
});
export type TakeInterrupted = v.InferOutput<typeof TakeInterruptedSchema>;

/** An answer a restart cut off: `text` is what the chat shows in its place (the partial answer and how to retry). */
export const InterruptedNoticeSchema = v.object({ turn_id: v.string(), agent: v.string(), text: v.string() });
export type InterruptedNotice = v.InferOutput<typeof InterruptedNoticeSchema>;

export const AGENT_COMMANDS = {
  /** Answered once the turn has finished; its chunks stream meanwhile, tagged with the request id. */
  message: defineCommand('agent.message', AgentMessageSchema, TurnOutcomeSchema, { invalidCode: 'invalid-body' }),
  abort: defineCommand('agent.abort', AgentAbortSchema, AbortOutcomeSchema, { invalidCode: 'invalid-body' }),
  list: defineCommand('agent.list', v.object({}), v.array(AgentSummarySchema)),
  /** Hands over (once) the notices of answers a restart cut off in one chat; see InterruptedNotice. */
  takeInterrupted: defineCommand('agent.take_interrupted', TakeInterruptedSchema, v.array(InterruptedNoticeSchema)),
} as const;
