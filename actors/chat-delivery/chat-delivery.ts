import { randomUUID } from 'node:crypto';
import type { Subscription } from 'rxjs';
import type { Bus } from '../../bus/index.js';
import { CHAT_DELIVERY_CHUNKS, CHAT_DELIVERY_COMMANDS, MAIN_AGENT, type ChatDelivery } from '../../schemas/index.js';
import { recordChatEnvelope } from './chat-envelope.js';

/** Transports whose live connections take a `chat.delivered` chunk (edges/direct relays it). */
const LIVE_TRANSPORTS = new Set(['api']);
/** The admin chat's transport (edges/admin asks with it). */
export const ADMIN_TRANSPORT = 'admin';

/**
 * Serves `chat.deliver`, the one way svc says something in a chat outside a turn. The admin chat
 * keeps it as a `chat_message` of kind `text` in the agent's most recent chat session (what the
 * panel's socket pushes as it is recorded); the direct API has no history, so its open connections
 * of that chat get it live. Other transports answer `delivered: false` until they exist here.
 */
export function startChatDelivery(deps: { bus: Bus }): Subscription {
  const { bus } = deps;
  return bus.handle(CHAT_DELIVERY_COMMANDS.deliver, 'chat-delivery', async (cmd) => {
    const d: ChatDelivery = cmd.data;
    if (d.transport === ADMIN_TRANSPORT) {
      await recordChatEnvelope(bus, { agent: d.agent ?? MAIN_AGENT, id: `delivery-${randomUUID()}`, kind: 'text', content: d.text, meta: { source: d.source }, correlation: cmd.correlation });
      return { delivered: true };
    }
    if (LIVE_TRANSPORTS.has(d.transport)) {
      bus.emitTransient({
        stream: `chat:${d.transport}:${d.chat_id}`,
        type: CHAT_DELIVERY_CHUNKS.delivered,
        data: { transport: d.transport, chat_id: d.chat_id, topic_id: d.topic_id, text: d.text, source: d.source },
      });
      return { delivered: true };
    }
    return { delivered: false };
  });
}
