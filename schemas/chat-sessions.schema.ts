import * as v from 'valibot';
import type { Json } from './event.schema.js';
import { PrincipalSchema } from './principal.schema.js';

/*
 * Commands on chat sessions (SPEC.md "Chat session and messages", WIRE.md §2). The same title rule
 * serves the HTTP bodies and the bus commands, so an edge and the actor can never disagree on it.
 */

export const chatSessionStream = (id: string): string => `chat:${id}`;

export const MAX_CHAT_SESSION_TITLE_CHARS = 200;
export const MAX_CHAT_SESSION_ID_CHARS = 200;
export const MAX_CHAT_AGENT_NAME_CHARS = 64;
/** Used when a session is created without a title; the user renames it later. */
export const DEFAULT_CHAT_SESSION_TITLE = 'New chat';

export const ChatSessionTitleSchema = v.pipe(
  v.string('must be a string'),
  v.trim(),
  v.minLength(1, 'must not be empty or only whitespace'),
  v.maxLength(MAX_CHAT_SESSION_TITLE_CHARS, `must be at most ${MAX_CHAT_SESSION_TITLE_CHARS} characters after trimming`),
);

export const ChatSessionIdSchema = v.pipe(
  v.string('must be a string'),
  v.minLength(1, 'must not be empty'),
  v.maxLength(MAX_CHAT_SESSION_ID_CHARS, `must be at most ${MAX_CHAT_SESSION_ID_CHARS} characters`),
);

export const ChatAgentNameSchema = v.pipe(
  v.string('must be a string'),
  v.regex(/^[a-zA-Z0-9_-]+$/, 'must be an agent name of letters, digits, _ and - only'),
  v.maxLength(MAX_CHAT_AGENT_NAME_CHARS, `must be at most ${MAX_CHAT_AGENT_NAME_CHARS} characters`),
);

// A null title means "none given", like an absent one: the session gets the default title.
// The caller goes last, so a refusal names the field the sender got wrong before a missing principal.
export const CreateChatSessionSchema = v.strictObject({
  agent: ChatAgentNameSchema,
  title: v.optional(v.nullable(ChatSessionTitleSchema)),
  principal: PrincipalSchema,
});
export type CreateChatSession = v.InferInput<typeof CreateChatSessionSchema>;

export const RenameChatSessionSchema = v.strictObject({
  id: ChatSessionIdSchema,
  title: ChatSessionTitleSchema,
  principal: PrincipalSchema,
});
export type RenameChatSession = v.InferInput<typeof RenameChatSessionSchema>;

export const DeleteChatSessionSchema = v.strictObject({ id: ChatSessionIdSchema, principal: PrincipalSchema });
export type DeleteChatSession = v.InferInput<typeof DeleteChatSessionSchema>;

/** HTTP bodies: unknown keys are ignored (clients send extras), the known ones follow the command rules. */
export const CreateChatSessionBodySchema = v.object({
  agent: ChatAgentNameSchema,
  title: v.optional(v.nullable(ChatSessionTitleSchema)),
});
export const RenameChatSessionBodySchema = v.object({ title: ChatSessionTitleSchema });

/**
 * A chat session as the read model holds it: the stored part of WIRE.md §2's session shape.
 * `last_read_message_id` and `unread_count` are per caller and come from elsewhere (chat_reads.json,
 * messages); the override and archive columns are filled by the admin API's events once it exists.
 */
export const ChatSessionSchema = v.object({
  id: v.string(),
  agent: v.string(),
  title: v.string(),
  /** ISO-8601 UTC, from the bus clock. */
  created_at: v.string(),
  updated_at: v.string(),
  provider_override: v.nullable(v.string()),
  model_override: v.nullable(v.string()),
  archived: v.boolean(),
});
export type ChatSession = v.InferOutput<typeof ChatSessionSchema>;

export const DeleteChatSessionResultSchema = v.object({ id: v.string(), deleted: v.literal(true) });
export type DeleteChatSessionResult = v.InferOutput<typeof DeleteChatSessionResultSchema>;

/*
 * The admin API's chat (SPEC.md "Chat session and messages", "Chat read marker"; WIRE.md §2):
 * message history on the session's own stream, per-session provider override, read markers.
 */

export const MAX_CHAT_MESSAGE_ID_CHARS = 128;
/** One message's text: a long agent answer fits, a runaway one does not (events are capped at 4 MiB). */
export const MAX_CHAT_MESSAGE_CHARS = 256 * 1024;
/** Messages in one PUT; a longer history is written in several merges. */
export const MAX_CHAT_MESSAGES_PER_WRITE = 5000;
/** SPEC.md "Limits": message page size. */
export const MAX_CHAT_PAGE = 500;

export const ChatMessageIdSchema = v.pipe(
  v.string('must be a string'),
  v.regex(/^[A-Za-z0-9][A-Za-z0-9._:-]*$/, 'must be letters, digits, ., _, : and - only, starting with a letter or digit'),
  v.maxLength(MAX_CHAT_MESSAGE_ID_CHARS, `must be at most ${MAX_CHAT_MESSAGE_ID_CHARS} characters`),
);

const MAX_JSON_DEPTH = 16;

/** JSON values only, nested at most MAX_JSON_DEPTH deep, so walking one can never exhaust the stack. */
function jsonWithin(x: unknown, depth: number): boolean {
  if (x === null || typeof x === 'string' || typeof x === 'boolean') return true;
  if (typeof x === 'number') return Number.isFinite(x);
  if (depth >= MAX_JSON_DEPTH || typeof x !== 'object') return false;
  const values = Array.isArray(x) ? x : Object.getPrototypeOf(x) === Object.prototype ? Object.values(x) : null;
  return values !== null && values.every((y) => jsonWithin(y, depth + 1));
}

const JsonObjectSchema = v.custom<{ [key: string]: Json }>(
  (x) => typeof x === 'object' && x !== null && !Array.isArray(x) && jsonWithin(x, 0),
  `must be a JSON object nested at most ${MAX_JSON_DEPTH} deep`,
);

/** WIRE.md §2 message. `files` and `meta` are the panel's to shape; they are kept as given (JSON objects). */
export const ChatMessageSchema = v.strictObject({
  id: ChatMessageIdSchema,
  sender: v.picklist(['user', 'agent'], 'must be "user" or "agent"'),
  content: v.pipe(v.string('must be a string'), v.maxLength(MAX_CHAT_MESSAGE_CHARS, `must be at most ${MAX_CHAT_MESSAGE_CHARS} characters`)),
  timestamp: v.pipe(v.string('must be a string'), v.isoTimestamp('must be an ISO-8601 timestamp')),
  files: v.optional(v.pipe(v.array(JsonObjectSchema, 'must be a list of objects'), v.maxLength(100, 'must hold at most 100 files'))),
  kind: v.optional(v.pipe(v.string('must be a string'), v.maxLength(32, 'must be at most 32 characters'))),
  meta: v.optional(JsonObjectSchema),
});
export type ChatMessage = v.InferOutput<typeof ChatMessageSchema>;

export const ChatMessagesSchema = v.pipe(
  v.array(ChatMessageSchema, 'must be a list of messages'),
  v.maxLength(MAX_CHAT_MESSAGES_PER_WRITE, `must hold at most ${MAX_CHAT_MESSAGES_PER_WRITE} messages`),
  v.check((list) => new Set(list.map((m) => m.id)).size === list.length, 'must not repeat a message id'),
);

/** `@<model>` directive's charset (machines/directive.logic.ts), so a stored override always dispatches. */
export const ChatModelSchema = v.pipe(
  v.string('must be a string'),
  v.regex(/^[A-Za-z0-9][A-Za-z0-9._:-]*$/, 'must be a model id (letters, digits, ., _, : and -)'),
  v.maxLength(128, 'must be at most 128 characters'),
);
export const ChatProviderSchema = v.pipe(v.string('must be a string'), v.regex(/^[a-z0-9_-]{1,64}$/, 'must be a provider id (lowercase letters, digits, _ and -)'));

/** A session as one caller sees it in the list: with their own read state. */
export const ChatSessionViewSchema = v.object({
  ...ChatSessionSchema.entries,
  last_read_message_id: v.nullable(v.string()),
  unread_count: v.number(),
});
export type ChatSessionView = v.InferOutput<typeof ChatSessionViewSchema>;

/** `archived_only`: the panel's archive drawer, which lists archived sessions alone. */
export const ListChatSessionsSchema = v.strictObject({ principal: PrincipalSchema, agent: v.optional(ChatAgentNameSchema), archived_only: v.optional(v.boolean()) });
export const ArchiveChatSessionSchema = v.strictObject({ principal: PrincipalSchema, id: ChatSessionIdSchema, archived: v.boolean() });
export const SetChatProviderSchema = v.strictObject({
  principal: PrincipalSchema,
  id: ChatSessionIdSchema,
  provider: v.nullable(ChatProviderSchema),
  model: v.nullable(ChatModelSchema),
});
export const GetChatMessagesSchema = v.strictObject({
  principal: PrincipalSchema,
  id: ChatSessionIdSchema,
  /** Absent: the whole history. */
  limit: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(MAX_CHAT_PAGE))),
  before: v.optional(ChatMessageIdSchema),
});
export const ChatMessagePageSchema = v.object({
  messages: v.array(ChatMessageSchema),
  has_more: v.boolean(),
  total: v.number(),
  last_read_message_id: v.nullable(v.string()),
});
export type ChatMessagePage = v.InferOutput<typeof ChatMessagePageSchema>;

export const WriteChatMessagesSchema = v.strictObject({ principal: PrincipalSchema, id: ChatSessionIdSchema, messages: ChatMessagesSchema, merge: v.boolean() });
export const WriteChatMessagesResultSchema = v.object({ session_id: v.string(), total: v.number() });

export const MarkChatReadSchema = v.strictObject({ principal: PrincipalSchema, id: ChatSessionIdSchema, last_read_message_id: ChatMessageIdSchema });
export const ChatReadStateSchema = v.object({ session_id: v.string(), last_read_message_id: v.nullable(v.string()), unread_count: v.number() });
export type ChatReadState = v.InferOutput<typeof ChatReadStateSchema>;

export const ChatHistorySchema = v.strictObject({ principal: PrincipalSchema, agent: ChatAgentNameSchema });

/**
 * One chat turn, as the admin surfaces (REST send and `/ws/admin`) run it: `turn_begin` checks access,
 * picks the session (the given one, else the agent's most recently updated, else a new one) and
 * records the user's message; the edge asks the agent; `turn_end` records the answer.
 */
export const BeginChatTurnSchema = v.strictObject({
  principal: PrincipalSchema,
  agent: ChatAgentNameSchema,
  text: v.pipe(v.string('must be a string'), v.minLength(1, 'must not be empty'), v.maxLength(MAX_CHAT_MESSAGE_CHARS, `must be at most ${MAX_CHAT_MESSAGE_CHARS} characters`)),
  session_id: v.optional(ChatSessionIdSchema),
  user_msg_id: v.optional(ChatMessageIdSchema),
});
export const ChatTurnSchema = v.object({
  session_id: v.string(),
  /** The runtime's chat for this session: its turns queue and resume together. */
  chat_id: v.number(),
  /** What to send the agent: the text with the session's `@<model>` directive in front when it has an override. */
  text: v.string(),
  user_msg_id: v.string(),
});
export type ChatTurn = v.InferOutput<typeof ChatTurnSchema>;
export const EndChatTurnSchema = v.strictObject({ principal: PrincipalSchema, session_id: ChatSessionIdSchema, message: ChatMessageSchema });

/** Where a `chat_message` envelope (task result, question, inter-agent, background text) is kept. */
export const RecordChatEnvelopeSchema = v.strictObject({ agent: ChatAgentNameSchema, message: ChatMessageSchema });
export const RecordedChatEnvelopeSchema = v.object({ session_id: v.nullable(v.string()) });

/**
 * `chat_reads.json` (SPEC.md "Chat session and messages"): `{user_id: {session_id: marker}}`. The
 * static-token legacy admin has no user id; its markers live under CHAT_READS_LEGACY_KEY, which no
 * username can be (usernames have no spaces).
 */
export const CHAT_READS_LEGACY_KEY = 'legacy admin';
export const ChatReadMarkerSchema = v.object({ last_read_message_id: v.string(), updated_at: v.string() });
export const ChatReadsFileSchema = v.record(v.string(), v.record(v.string(), ChatReadMarkerSchema));
export type ChatReads = v.InferOutput<typeof ChatReadsFileSchema>;
