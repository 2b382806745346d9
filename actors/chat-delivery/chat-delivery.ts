import { randomUUID } from 'node:crypto';
import type { Subscription } from 'rxjs';
import { TransportRegistry, type Bus } from '../../bus/index.js';
import { deliveryRoute } from '../../machines/index.js';
import { CHAT_DELIVERY_CHUNKS, CHAT_DELIVERY_COMMANDS, CHAT_DELIVERY_EVENTS, MAIN_AGENT, chatDeliveryStream, describeError, type ChatDelivery, type ChatTransport } from '../../schemas/index.js';
import { recordChatEnvelope } from './chat-envelope.js';

/** The admin chat's transport (edges/admin asks with it). */
export const ADMIN_TRANSPORT = 'admin';

/**
 * The agent's admin chat as a transport: a message becomes a `chat_message` of kind `text` in the
 * agent's most recent chat session (what the panel's socket pushes as it is recorded). It is always
 * there, which is why every other transport's undeliverable messages come here.
 */
export function adminChatTransport(bus: Bus): ChatTransport {
  return {
    name: ADMIN_TRANSPORT,
    health: () => ({ name: ADMIN_TRANSPORT, state: 'running', detail: 'the admin panel chat, kept in the event log' }),
    reaches: () => true,
    deliver: async (m) => {
      await recordChatEnvelope(bus, { agent: m.agent, id: m.id ?? `delivery-${randomUUID()}`, kind: 'text', content: m.text, meta: { source: m.source }, correlation: m.correlation });
    },
  };
}

/**
 * Serves `chat.deliver`, the one way svc says something in a chat outside a turn: the chat's own
 * transport takes it when that transport is running and can reach the chat now. Otherwise — a messenger not
 * running, a direct-API chat with no connection open (it keeps no history), a send that failed —
 * the message goes to the agent's admin chat, and a `chat.delivery_rerouted` fact records where it
 * went and why: nothing svc computed for a person is dropped.
 */
export function startChatDelivery(deps: { bus: Bus; transports?: TransportRegistry }): Subscription {
  const { bus } = deps;
  const transports = deps.transports ?? new TransportRegistry();
  const admin = transports.get(ADMIN_TRANSPORT) ?? adminChatTransport(bus);
  return bus.handle(CHAT_DELIVERY_COMMANDS.deliver, 'chat-delivery', async (cmd) => {
    const d: ChatDelivery = cmd.data;
    const agent = d.agent ?? MAIN_AGENT;
    const message = { chat_id: d.chat_id, topic_id: d.topic_id, text: d.text, source: d.source, agent, correlation: cmd.correlation, ...(d.id !== undefined ? { id: d.id } : {}) };
    if (d.transport === ADMIN_TRANSPORT) {
      await admin.deliver(message);
      return { delivered: true, to: ADMIN_TRANSPORT };
    }
    // A sub-agent's own bot says its messages; one without a bot has them said by the shared one.
    const target = transports.get(d.transport, agent);
    const route = deliveryRoute(d.transport, target?.health() ?? null, target?.reaches(d) ?? false);
    let reason: string;
    if (route.kind === 'admin-chat') reason = route.reason;
    else {
      try {
        // `origin` comes only from a registered transport's health.
        await target!.deliver(message);
        bus.emitTransient({
          stream: `chat:${d.transport}:${d.chat_id}`,
          type: CHAT_DELIVERY_CHUNKS.delivered,
          data: { transport: d.transport, chat_id: d.chat_id, topic_id: d.topic_id, text: d.text, source: d.source },
        });
        return { delivered: true, to: d.transport };
      } catch (e) {
        reason = `sending it through ${d.transport} failed: ${describeError(e)}`;
      }
    }
    const origin = { transport: d.transport, chat_id: d.chat_id, topic_id: d.topic_id };
    const { session_id } = await recordChatEnvelope(bus, {
      agent,
      id: d.id ?? `delivery-${randomUUID()}`,
      kind: 'text',
      content: d.text,
      meta: { source: d.source, rerouted_from: origin, reason },
      correlation: cmd.correlation,
      by: 'chat-delivery',
    });
    await bus.publish({
      stream: chatDeliveryStream(d.transport, d.chat_id),
      type: CHAT_DELIVERY_EVENTS.delivery_rerouted,
      data: { ...origin, agent, source: d.source, to: ADMIN_TRANSPORT, reason, session_id },
      correlation: cmd.correlation,
      by: 'chat-delivery',
    });
    bus.emitLog('info', `${d.source}: ${reason}, so ${d.transport} chat ${d.chat_id} was not told; the message went to ${agent}'s admin chat (session ${session_id})`, {
      source: d.source,
      transport: d.transport,
      chat_id: d.chat_id,
    });
    return { delivered: true, to: ADMIN_TRANSPORT };
  });
}
