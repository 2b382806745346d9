import { randomUUID } from 'node:crypto';
import type { Subscription } from 'rxjs';
import type { Bus } from '../../bus/index.js';
import { deliveryRoute } from '../../machines/index.js';
import { CHAT_DELIVERY_CHUNKS, CHAT_DELIVERY_COMMANDS, CHAT_DELIVERY_EVENTS, MAIN_AGENT, chatDeliveryStream, type ChatDelivery } from '../../schemas/index.js';
import { recordChatEnvelope } from './chat-envelope.js';

/** Transports whose live connections take a `chat.delivered` chunk (edges/direct relays it). */
const LIVE_TRANSPORTS = new Set(['api']);
/** The admin chat's transport (edges/admin asks with it). */
export const ADMIN_TRANSPORT = 'admin';

/**
 * Whether a chat can be told now. Today only the direct API delivers (no messenger transport,
 * Telegram or Matrix, is built), and it has no history: a chat with no connection open would get
 * nothing, so the composition root answers from the direct API's open connections. The registry
 * that starts messengers answers for them once they exist; a chat it says cannot be told has the
 * message put in the agent's admin chat instead.
 */
export interface TransportRegistry {
  reaches(transport: string, chatId: number, topicId: number | null): boolean;
}

/** Every chat of a live transport counts as reachable (a stand-alone stand with no direct API to ask). */
export const DEFAULT_TRANSPORTS: TransportRegistry = { reaches: (t) => LIVE_TRANSPORTS.has(t) };

/**
 * Serves `chat.deliver`, the one way svc says something in a chat outside a turn. The admin chat
 * keeps it as a `chat_message` of kind `text` in the agent's most recent chat session (what the
 * panel's socket pushes as it is recorded); the direct API has no history, so its open connections
 * of that chat get it live. A chat whose transport is not running (every messenger, until one is
 * built) gets nothing, so the message goes to the agent's admin chat, and a `chat.delivery_rerouted`
 * fact records where it went and why: nothing svc computed for a person is dropped.
 */
export function startChatDelivery(deps: { bus: Bus; transports?: TransportRegistry }): Subscription {
  const { bus } = deps;
  const transports = deps.transports ?? DEFAULT_TRANSPORTS;
  return bus.handle(CHAT_DELIVERY_COMMANDS.deliver, 'chat-delivery', async (cmd) => {
    const d: ChatDelivery = cmd.data;
    const agent = d.agent ?? MAIN_AGENT;
    if (d.transport === ADMIN_TRANSPORT) {
      await recordChatEnvelope(bus, { agent, id: `delivery-${randomUUID()}`, kind: 'text', content: d.text, meta: { source: d.source }, correlation: cmd.correlation });
      return { delivered: true, to: ADMIN_TRANSPORT };
    }
    const route = deliveryRoute(d.transport, LIVE_TRANSPORTS.has(d.transport), LIVE_TRANSPORTS.has(d.transport) && transports.reaches(d.transport, d.chat_id, d.topic_id));
    if (route.kind === 'origin') {
      bus.emitTransient({
        stream: `chat:${d.transport}:${d.chat_id}`,
        type: CHAT_DELIVERY_CHUNKS.delivered,
        data: { transport: d.transport, chat_id: d.chat_id, topic_id: d.topic_id, text: d.text, source: d.source },
      });
      return { delivered: true, to: d.transport };
    }
    const origin = { transport: d.transport, chat_id: d.chat_id, topic_id: d.topic_id };
    const { session_id } = await recordChatEnvelope(bus, {
      agent,
      id: `delivery-${randomUUID()}`,
      kind: 'text',
      content: d.text,
      meta: { source: d.source, rerouted_from: origin, reason: route.reason },
      correlation: cmd.correlation,
      by: 'chat-delivery',
    });
    await bus.publish({
      stream: chatDeliveryStream(d.transport, d.chat_id),
      type: CHAT_DELIVERY_EVENTS.delivery_rerouted,
      data: { ...origin, agent, source: d.source, to: ADMIN_TRANSPORT, reason: route.reason, session_id },
      ...(cmd.correlation !== undefined ? { correlation: cmd.correlation } : {}),
      by: 'chat-delivery',
    });
    bus.emitLog('info', `${d.source}: ${route.reason}, so ${d.transport} chat ${d.chat_id} was not told; the message went to ${agent}'s admin chat (session ${session_id})`, {
      source: d.source,
      transport: d.transport,
      chat_id: d.chat_id,
    });
    return { delivered: true, to: ADMIN_TRANSPORT };
  });
}
