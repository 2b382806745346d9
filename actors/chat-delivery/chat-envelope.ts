import type { Bus } from '../../bus/index.js';
import { CHAT_SESSION_COMMANDS, type Json } from '../../schemas/index.js';

/*
 * How something said outside a chat turn is kept in an agent's admin chat: a `chat_message`
 * envelope (in its history, pushed to open panels). Task, cron and inter-agent results, heartbeat
 * answers and `chat.deliver` to the admin chat all go this way.
 */

/** Longer contents are cut: a chat message is for reading, the log keeps the whole result. */
export const MAX_CHAT_ENVELOPE_CHARS = 200_000;


export interface ChatEnvelope {
  agent: string;
  /** Stable per message, so a retried delivery does not show twice. */
  id: string;
  kind: string;
  content: string;
  meta: { [key: string]: Json };
  correlation: string;
  /** Who is saying it, when not the command's sender (`heartbeat`). */
  by?: string;
}

/** The admin chat session that keeps it; rejects when the chat could not keep it (the caller decides whether to retry). */
export async function recordChatEnvelope(bus: Bus, e: ChatEnvelope): Promise<{ session_id: string | null }> {
  return bus.send(
    CHAT_SESSION_COMMANDS.recordEnvelope,
    { agent: e.agent, message: { id: e.id, sender: 'agent', content: e.content.slice(0, MAX_CHAT_ENVELOPE_CHARS), timestamp: new Date(bus.now()).toISOString(), kind: e.kind, meta: e.meta } },
    { correlation: e.correlation, ...(e.by ? { by: e.by } : {}) },
  );
}
