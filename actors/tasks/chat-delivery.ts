import type { Bus } from '../../bus/index.js';
import { CHAT_SESSION_COMMANDS, type Json } from '../../schemas/index.js';

/*
 * How a background result reaches a person: a `chat_message` envelope in the agent's admin chat
 * (kept in its history and pushed to open panels). Task results and cron results both go this way.
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
}

/** Rejects when the chat could not keep it (the caller decides whether to retry). */
export async function recordChatEnvelope(bus: Bus, e: ChatEnvelope): Promise<void> {
  await bus.send(
    CHAT_SESSION_COMMANDS.recordEnvelope,
    { agent: e.agent, message: { id: e.id, sender: 'agent', content: e.content.slice(0, MAX_CHAT_ENVELOPE_CHARS), timestamp: new Date(bus.now()).toISOString(), kind: e.kind, meta: e.meta } },
    { correlation: e.correlation },
  );
}
