import * as v from 'valibot';

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
export const CreateChatSessionSchema = v.strictObject({
  agent: ChatAgentNameSchema,
  title: v.optional(v.nullable(ChatSessionTitleSchema)),
});
export type CreateChatSession = v.InferInput<typeof CreateChatSessionSchema>;

export const RenameChatSessionSchema = v.strictObject({
  id: ChatSessionIdSchema,
  title: ChatSessionTitleSchema,
});
export type RenameChatSession = v.InferInput<typeof RenameChatSessionSchema>;

export const DeleteChatSessionSchema = v.strictObject({ id: ChatSessionIdSchema });
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
