import * as v from 'valibot';
import { WorkflowChatSchema, WorkflowIdSchema, WorkflowRunIdSchema, WorkflowVariablesSchema } from '../../schemas/index.js';

/** Every request body (and query) the internal API accepts; anything else is a 400 naming the field. */

/** Bytes of UTF-8, not characters: the cap protects the CLI's argv/stdin, which count bytes. */
export const MAX_MESSAGE_BYTES = 256 * 1024;
/** Whole-body cap of every route (before parsing). */
export const MAX_INTERNAL_BODY_BYTES = 1024 * 1024;

const AgentName = v.pipe(
  v.string(),
  v.regex(/^[A-Za-z0-9_-]{1,64}$/, 'an agent name (1-64 characters of letters, digits, _ and -)'),
);

const Message = (what: string) =>
  v.pipe(
    v.string(),
    v.check((s) => s.trim() !== '', `a non-empty ${what}`),
    v.check((s) => Buffer.byteLength(s, 'utf8') <= MAX_MESSAGE_BYTES, `a ${what} of at most ${MAX_MESSAGE_BYTES} bytes (256 KiB) of UTF-8`),
  );

const ChatId = v.pipe(v.number(), v.check((n) => Number.isSafeInteger(n), 'a whole number (chat id)'));

/** `POST /interagent/send` and `/interagent/send_async`. */
export const InteragentSendBody = v.object({
  from: AgentName,
  to: AgentName,
  message: Message('message'),
  new_session: v.optional(v.boolean(), false),
  /** Absent or null: chat 0, the inter-agent conversation of the recipient (no messenger chat). */
  chat_id: v.optional(v.nullable(ChatId), null),
  topic_id: v.optional(v.nullable(ChatId), null),
});
export type InteragentSend = v.InferOutput<typeof InteragentSendBody>;

/**
 * `POST /interagent/send_async` adds where its result goes: `reply_to` names a chat of the caller
 * (`transport` absent: the caller's session in that chat says, as for tasks), absent the chat the
 * call names, else the caller's latest chat; `silent` records the result without delivering it.
 */
export const InteragentSendAsyncBody = v.object({
  ...InteragentSendBody.entries,
  reply_to: v.optional(
    v.nullable(
      v.strictObject({
        transport: v.optional(v.nullable(v.pipe(v.string(), v.regex(/^[a-z][a-z0-9_-]{0,31}$/, 'a transport name (lower-case letters, digits, _ and -)'))), null),
        chat_id: ChatId,
        topic_id: v.optional(v.nullable(ChatId), null),
      }),
    ),
    null,
  ),
  silent: v.optional(v.boolean(), false),
});

/** `GET /interagent/agents?from=<agent>`; absent `from` means the main agent. */
export const InteragentAgentsQuery = v.object({
  from: v.optional(AgentName),
});

/** `POST /ask` (the `svc ask` command). */
export const AskBody = v.object({
  /** Absent: the main agent. */
  agent: v.optional(AgentName),
  text: Message('text'),
  chat_id: v.optional(v.nullable(ChatId), null),
  /** Start a fresh provider session first (sent as `new_session`, not as a `/new` message). */
  new: v.optional(v.boolean(), false),
});
export type Ask = v.InferOutput<typeof AskBody>;

/**
 * Who an agent says it is: `from` of the body, or of the query on a GET; absent, the token says.
 * Read before the rest of the request, so the right token can be checked first.
 */
export const CallerClaimBody = v.object({ from: v.optional(v.nullable(AgentName)) });
export const CallerClaimQuery = InteragentAgentsQuery;

/**
 * `/workflows/*` (WIRE.md §3). Strict: a misspelt field (`variabels`) is refused, not ignored. `from`
 * names the calling agent for its token like every internal call, and may be left out (WIRE's
 * bodies have none): then the agent is the one whose token it is.
 */
const From = { from: v.optional(AgentName) };
export const WorkflowRunBody = v.strictObject({ ...From, workflow_id: WorkflowIdSchema, ...WorkflowChatSchema, variables: v.optional(WorkflowVariablesSchema, {}) });
export const WorkflowCancelBody = v.strictObject({ ...From, run_id: WorkflowRunIdSchema });
export const WorkflowStatusQuery = v.strictObject({ ...From, run_id: WorkflowRunIdSchema });
export const WorkflowListQuery = v.strictObject({ ...From });
