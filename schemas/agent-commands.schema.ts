import * as v from 'valibot';
import { defineCommand } from './command.js';
import { ERROR_CODES } from './error-codes.js';
import { TURN_KINDS, TURN_STATUSES, TurnFileSchema, TurnUsageSchema } from './events/turn.events.js';
import { PrincipalSchema } from './principal.schema.js';

/**
 * The contract between every surface and the agent runtime (bus/agents.ts implements both sides).
 * `agent.message` is answered as soon as the runtime has queued the message (accepted) or refused
 * it; the turn then streams as transient `turn.*` chunks and ends with one `agent.replied`, all
 * tagged with the message's `request_id`, which is also the correlation id of every fact it causes.
 * Each command carries the caller's Principal: what it may do is decided where the command is handled.
 */

const ChatId = v.pipe(v.number(), v.integer());
const AgentName = v.pipe(v.string(), v.regex(/^[a-zA-Z0-9_-]+$/, 'letters, digits, _ and - only'), v.maxLength(64));

/** Extra CLI arguments by provider, as a one-shot request and the task run it becomes carry them. */
export const TaskCliParametersSchema = v.partial(v.object({ claude: v.array(v.string()), codex: v.array(v.string()), gemini: v.array(v.string()) }));

/**
 * What makes a task's run differ from a chat turn: it has its own session key (`task:<id>`, so the
 * parent chat's lane stays free), works in the task's folder, may override provider and model, and
 * continues the provider session the task's facts stored rather than whatever its session says.
 * The text is taken as the prompt: a task prompt starting with `/` is not a chat command.
 */
export const TaskRunSchema = v.object({
  task_id: v.pipe(v.string(), v.regex(/^[A-Za-z0-9_-]{1,128}$/, 'a task id')),
  folder: v.pipe(v.string(), v.minLength(1)),
  provider: v.nullable(v.picklist(['claude', 'codex', 'gemini'])),
  model: v.nullable(v.string()),
  resume_session_id: v.nullable(v.string()),
  /** A cron or `cron_task` run's own effort; unset: the agent's. */
  reasoning_effort: v.optional(v.nullable(v.string())),
  /**
   * The run's own extra CLI arguments by provider, used instead of (not merged with) the config's
   * `cli_parameters`: the runtime takes the list of the provider the turn runs on (a provider the
   * map leaves out gets none), since only it knows that provider when the run names just a model or
   * neither (the agent's own model then). Unset: the config's.
   */
  cli_parameters: v.optional(TaskCliParametersSchema),
});
export type TaskRun = v.InferOutput<typeof TaskRunSchema>;

/** The session key of a task's runs. */
export function taskSessionKey(taskId: string): string {
  return `task:${taskId}`;
}

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
  /**
   * Only continue the chat's live session and its conversation with the provider the turn runs on:
   * refused with `no-session` (no session, no fact recorded) where the turn would open one, start
   * afresh (expiry, `new_session`) or begin a new provider conversation. For svc's own check-ins
   * (heartbeat), which must never create a session.
   */
  resume_only: v.optional(v.boolean()),
  /** A delegated task's run (kind `task`): see TaskRunSchema. */
  task: v.optional(TaskRunSchema),
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

/**
 * Why svc itself ends one turn (recorded as the turn's abort cause): `stale`, it ran past twice its
 * own time limit (the heartbeat's sweep); `requester-stopped`, what asked for it is stopping.
 * Neither is a user's /stop or svc's shutdown, so such a turn is owed no restart notice.
 */
export const TURN_ABORT_CAUSES = ['stale', 'requester-stopped'] as const;

/**
 * Ends one running turn of one agent, named by its turn id or by the request that started it, and
 * nothing else: not the chat's other topics, not the messages queued behind it (unlike `agent.abort`).
 */
export const AgentTurnAbortSchema = v.pipe(
  v.object({
    agent: AgentName,
    turn_id: v.optional(v.pipe(v.string(), v.minLength(1), v.maxLength(128))),
    request_id: v.optional(v.pipe(v.string(), v.minLength(1), v.maxLength(128))),
    cause: v.picklist(TURN_ABORT_CAUSES),
    principal: PrincipalSchema,
  }),
  v.check((a) => (a.turn_id === undefined) !== (a.request_id === undefined), 'exactly one of turn_id and request_id'),
);
export type AgentTurnAbort = v.InferOutput<typeof AgentTurnAbortSchema>;

export const AgentListSchema = v.object({ principal: PrincipalSchema });
export type AgentList = v.InferOutput<typeof AgentListSchema>;

/** The reply to `agent.message`: queued (its outcome follows as `agent.replied`), or refused with a code. */
export const AdmissionSchema = v.variant('accepted', [
  v.object({ accepted: v.literal(true) }),
  v.object({ accepted: v.literal(false), code: v.picklist(ERROR_CODES), message: v.string() }),
]);
export type Admission = v.InferOutput<typeof AdmissionSchema>;

/**
 * A button a transport that can show buttons renders under the answer (Telegram's inline keyboard,
 * Matrix's reply options, a panel's buttons); pressing it sends `data` back as the chat's next
 * message, so a transport without buttons loses nothing the user could not type. `data` stays within
 * Telegram's 64-byte callback_data.
 */
export const ChatButtonSchema = v.object({
  label: v.pipe(v.string(), v.minLength(1), v.maxLength(64)),
  data: v.pipe(v.string(), v.minLength(1), v.check((s) => Buffer.byteLength(s, 'utf8') <= 64, 'at most 64 bytes of UTF-8')),
});
export type ChatButton = v.InferOutput<typeof ChatButtonSchema>;

/** How a turn ended. A chat command (`/new`, `/model`, ...) ends with status completed and no turn. */
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
  /** Offered by a command's answer (`/tasks`); transports that cannot show buttons ignore them. */
  buttons: v.optional(v.array(ChatButtonSchema)),
  /** The CLI's exit code when it exited non-zero on its own (reason `exit-code`). */
  exit_code: v.optional(v.nullable(v.number())),
});
export type TurnOutcome = v.InferOutput<typeof TurnOutcomeSchema>;

/** The `agent.replied` chunk: how a request ended, or why it could not (`internal-error` for a failure that is not an SvcError). */
export const ReplySchema = v.union([
  v.object({ request_id: v.string(), outcome: TurnOutcomeSchema }),
  v.object({ request_id: v.string(), error: v.object({ code: v.picklist(ERROR_CODES), message: v.string() }) }),
]);
export type Reply = v.InferOutput<typeof ReplySchema>;

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

/**
 * One chat's notices (`session_key`: a direct-API connection asks for its own when it opens), or
 * those of every chat of a transport (`transport`, with the agent: a messenger, always connected,
 * takes them all as it starts).
 */
export const TakeInterruptedSchema = v.pipe(
  v.strictObject({
    session_key: v.optional(v.pipe(v.string(), v.minLength(1), v.maxLength(80))),
    transport: v.optional(v.pipe(v.string(), v.regex(/^[a-z][a-z0-9_-]{0,31}$/))),
    agent: v.optional(v.pipe(v.string(), v.minLength(1), v.maxLength(64))),
  }),
  v.check((q) => (q.session_key === undefined) !== (q.transport === undefined), 'exactly one of session_key and transport'),
);
export type TakeInterrupted = v.InferOutput<typeof TakeInterruptedSchema>;

/** An answer a restart cut off: `text` is what the chat shows in its place (the partial answer and how to retry). */
export const InterruptedNoticeSchema = v.object({ turn_id: v.string(), agent: v.string(), session_key: v.string(), text: v.string() });
export type InterruptedNotice = v.InferOutput<typeof InterruptedNoticeSchema>;

export const SessionListSchema = v.object({ principal: PrincipalSchema });
export type SessionList = v.InferOutput<typeof SessionListSchema>;

/** A live chat session of an agent (`GET /api/sessions`). `id` is `<agent>:<session key>`. */
export const SessionSummarySchema = v.object({
  id: v.string(),
  agent: v.string(),
  key: v.string(),
  transport: v.string(),
  chat_id: v.number(),
  topic_id: v.nullable(v.number()),
  created_at: v.string(),
  last_active: v.string(),
  message_count: v.number(),
  /** Providers with a conversation to resume in this session. */
  providers: v.array(v.string()),
  /** A turn is running or waiting in it. */
  busy: v.boolean(),
});
export type SessionSummary = v.InferOutput<typeof SessionSummarySchema>;

export const SessionEndSchema = v.object({
  id: v.pipe(v.string(), v.minLength(3), v.maxLength(200)),
  principal: PrincipalSchema,
  request_id: v.pipe(v.string(), v.minLength(1), v.maxLength(128)),
});
export type SessionEnd = v.InferOutput<typeof SessionEndSchema>;

export const AGENT_COMMANDS = {
  /** Answered once the message is queued or refused; the turn's chunks and its `agent.replied` follow. */
  message: defineCommand('agent.message', AgentMessageSchema, AdmissionSchema, { invalidCode: 'invalid-body' }),
  abort: defineCommand('agent.abort', AgentAbortSchema, AbortOutcomeSchema, { invalidCode: 'invalid-body' }),
  /** One turn only (see AgentTurnAbortSchema); `killed` is 0 when it is not running (any more). */
  abortTurn: defineCommand('agent.abort_turn', AgentTurnAbortSchema, AbortOutcomeSchema, { invalidCode: 'invalid-body' }),
  list: defineCommand('agent.list', AgentListSchema, v.array(AgentSummarySchema), { invalidCode: 'invalid-body' }),
  /** Hands over (once) the notices of answers a restart cut off in one chat; see InterruptedNotice. */
  takeInterrupted: defineCommand('agent.take_interrupted', TakeInterruptedSchema, v.array(InterruptedNoticeSchema)),
  /** The live sessions of the agents the principal may use. */
  sessions: defineCommand('agent.sessions', SessionListSchema, v.array(SessionSummarySchema), { invalidCode: 'invalid-body' }),
  /** Kills the session's running turn, cancels what waits in it, and ends it (`session.ended`). */
  endSession: defineCommand('agent.session_end', SessionEndSchema, AbortOutcomeSchema, { invalidCode: 'invalid-body' }),
} as const;
