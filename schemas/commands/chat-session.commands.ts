import {
  ChatSessionSchema,
  CreateChatSessionSchema,
  DeleteChatSessionResultSchema,
  DeleteChatSessionSchema,
  RenameChatSessionSchema,
} from '../chat-sessions.schema.js';
import { defineCommand } from '../command.js';

export const CHAT_SESSION_COMMANDS = {
  create: defineCommand('chat.session_create', CreateChatSessionSchema, ChatSessionSchema),
  rename: defineCommand('chat.session_rename', RenameChatSessionSchema, ChatSessionSchema),
  delete: defineCommand('chat.session_delete', DeleteChatSessionSchema, DeleteChatSessionResultSchema),
} as const;
