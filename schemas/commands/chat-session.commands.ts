import * as v from 'valibot';
import {
  ArchiveChatSessionSchema,
  BeginChatTurnSchema,
  ChatHistorySchema,
  ChatMessagePageSchema,
  ChatMessageSchema,
  ChatReadStateSchema,
  ChatSessionSchema,
  ChatSessionViewSchema,
  ChatTurnSchema,
  CreateChatSessionSchema,
  DeleteChatSessionResultSchema,
  DeleteChatSessionSchema,
  EndChatTurnSchema,
  GetChatMessagesSchema,
  ListChatSessionsSchema,
  MarkChatReadSchema,
  RecordChatEnvelopeSchema,
  RecordedChatEnvelopeSchema,
  RenameChatSessionSchema,
  SetChatProviderSchema,
  WriteChatMessagesResultSchema,
  WriteChatMessagesSchema,
} from '../chat-sessions.schema.js';
import { defineCommand } from '../command.js';

/** Every command but the envelope's carries the caller: the chat-sessions actor decides `allowed_agents`. */
export const CHAT_SESSION_COMMANDS = {
  create: defineCommand('chat.session_create', CreateChatSessionSchema, ChatSessionSchema),
  rename: defineCommand('chat.session_rename', RenameChatSessionSchema, ChatSessionSchema),
  delete: defineCommand('chat.session_delete', DeleteChatSessionSchema, DeleteChatSessionResultSchema),
  list: defineCommand('chat.session_list', ListChatSessionsSchema, v.array(ChatSessionViewSchema)),
  archive: defineCommand('chat.session_archive', ArchiveChatSessionSchema, ChatSessionSchema),
  setProvider: defineCommand('chat.session_set_provider', SetChatProviderSchema, ChatSessionSchema),
  messages: defineCommand('chat.messages_get', GetChatMessagesSchema, ChatMessagePageSchema),
  writeMessages: defineCommand('chat.messages_write', WriteChatMessagesSchema, WriteChatMessagesResultSchema),
  markRead: defineCommand('chat.read_mark', MarkChatReadSchema, ChatReadStateSchema),
  history: defineCommand('chat.history', ChatHistorySchema, v.array(ChatMessageSchema)),
  beginTurn: defineCommand('chat.turn_begin', BeginChatTurnSchema, ChatTurnSchema),
  endTurn: defineCommand('chat.turn_end', EndChatTurnSchema, WriteChatMessagesResultSchema),
  /** System-side (task results, inter-agent replies): no caller to check. */
  recordEnvelope: defineCommand('chat.envelope_record', RecordChatEnvelopeSchema, RecordedChatEnvelopeSchema),
} as const;
