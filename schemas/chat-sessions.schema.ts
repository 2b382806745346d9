import * as v from 'valibot';

/*
 * Commands on chat sessions (SPEC.md "Chat session and messages", WIRE.md §2). The same title rule
 * serves the HTTP bodies and the bus commands, so an edge and the actor can never disagree on it.
 */

export const CHAT_SESSION_COMMANDS = {
  create: 'chat.session_create',
  rename: 'chat.session_rename',
  delete: 'chat.session_delete',
} as const;

export const CHAT_SESSION_EVENTS = {
  created: 'chat.session_created',
  renamed: 'chat.session_renamed',
  deleted: 'chat.session_deleted',
} as const;

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
