import * as v from 'valibot';
import type { Json } from '../event.schema.js';
import { typeNames } from './type-names.js';

/*
 * Stream `chat:<id>`: one chat session (WIRE.md §2) and its message history. Messages travel as
 * JSON objects already checked against ChatMessageSchema where they came in; the projection keeps
 * them as given.
 */
const Message = v.custom<{ id: string; sender: string; content: string; timestamp: string; [key: string]: Json }>(
  (m) => typeof m === 'object' && m !== null && typeof (m as { id?: unknown }).id === 'string' && typeof (m as { sender?: unknown }).sender === 'string',
  'must be a chat message',
);

export const CHAT_SESSION_EVENT_SCHEMAS = {
  'chat.session_created': v.object({ id: v.string(), agent: v.string(), title: v.string(), created_at: v.string(), updated_at: v.string() }),
  'chat.session_renamed': v.object({ id: v.string(), title: v.string(), updated_at: v.string() }),
  /** The session and its whole history. */
  'chat.session_deleted': v.object({ id: v.string() }),
  'chat.session_archived': v.object({ id: v.string(), archived: v.boolean(), updated_at: v.string() }),
  /** Both null: the override was removed. */
  'chat.session_provider_set': v.object({ id: v.string(), provider: v.nullable(v.string()), model: v.nullable(v.string()), updated_at: v.string() }),
  /** PUT without merge: the history is exactly these messages now. */
  'chat.messages_replaced': v.object({ id: v.string(), messages: v.array(Message), updated_at: v.string() }),
  /**
   * Upserted by id: a known id is updated where it stands, a new one appended, in the order given.
   * `agent` is set on deliveries that did not come from a chat turn (task results, inter-agent
   * replies), so live sockets can show them without looking the session up.
   */
  'chat.messages_merged': v.object({ id: v.string(), messages: v.array(Message), updated_at: v.string(), agent: v.optional(v.string()) }),
  /**
   * A user's read marker moved forward (the marker itself lives in chat_reads.json); `user` is the
   * marker's owner key there. Recorded so the owner's live sockets learn of it.
   */
  'chat.read_advanced': v.object({ id: v.string(), user: v.string(), last_read_message_id: v.string(), unread_count: v.number(), updated_at: v.string() }),
};
export const CHAT_SESSION_EVENTS = typeNames(CHAT_SESSION_EVENT_SCHEMAS);
