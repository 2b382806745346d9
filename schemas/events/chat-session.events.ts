import * as v from 'valibot';
import { typeNames } from './type-names.js';

/** Stream `chat:<id>`: one chat session of the direct API (WIRE.md §2). */
export const CHAT_SESSION_EVENT_SCHEMAS = {
  'chat.session_created': v.object({ id: v.string(), agent: v.string(), title: v.string(), created_at: v.string(), updated_at: v.string() }),
  'chat.session_renamed': v.object({ id: v.string(), title: v.string(), updated_at: v.string() }),
  'chat.session_deleted': v.object({ id: v.string() }),
};
export const CHAT_SESSION_EVENTS = typeNames(CHAT_SESSION_EVENT_SCHEMAS);
