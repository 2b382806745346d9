import { agentsOf, type Bus } from '../../bus/index.js';
import { AGENT_COMMANDS, CHAT_DELIVERY_COMMANDS, describeError, systemPrincipal, type Principal } from '../../schemas/index.js';
import type { ChatPlace } from './acting-principal.js';
import { recordChatEnvelope } from './chat-envelope.js';

/** The chat of work whose parent has no chat to be found: the inter-agent conversation, as `/interagent/send` uses. */
export const NO_CHAT: ChatPlace = { transport: 'internal', chat_id: 0, topic_id: null };

const SYSTEM = systemPrincipal(null, { transport: 'internal', chat_id: null, topic_id: null });

/** What `deliverToParent` takes: who hears it, where, as whom, and the envelope kept in the admin chat. */
export interface ParentDelivery {
  agent: string;
  where: ChatPlace;
  /** Who the wake turn runs as; a thrown refusal (the person it acted for is gone) keeps the envelope only. */
  principal: () => Principal;
  correlation: string;
  envelope: { kind: 'task_result' | 'task_question' | 'interagent'; id: string; content: string; meta: Record<string, string | number | boolean | null> };
  turnText: string;
}

/**
 * The one way a background result reaches the agent that asked for it (a task's parent, an async
 * inter-agent caller): a `chat_message` envelope in its admin chat, a turn in the chat it names so
 * the agent itself knows, and that turn's reply said where the work came from.
 */
export function deliverToParent(bus: Bus, p: ParentDelivery): void {
  const envelope = (kind: string, content: string, id: string) =>
    recordChatEnvelope(bus, { agent: p.agent, id, kind, content, meta: p.envelope.meta, correlation: p.correlation }).catch((e: unknown) =>
      bus.emitLog('warn', `${p.correlation}: ${kind} not kept in the chat: ${describeError(e)}`),
    );
  void envelope(p.envelope.kind, p.envelope.content, p.envelope.id);
  let principal: Principal;
  try {
    principal = p.principal();
  } catch (e) {
    bus.emitLog('warn', `${p.correlation}: ${p.agent} was not woken with it: ${describeError(e)}`);
    return;
  }
  const asked = agentsOf(bus).ask({ agent: p.agent, ...p.where, text: p.turnText, kind: 'background' }, principal);
  asked.outcome.then(
    (o) => (o.text.trim() ? sayInChat(bus, p, o.text, envelope) : undefined),
    (e: unknown) => bus.emitLog('warn', `${p.correlation}: ${p.agent} was not told: ${describeError(e)}`),
  );
}

/**
 * The parent's reply, said where the work came from: a messenger or direct-API chat through
 * `chat.deliver` (the admin chat when that chat cannot be reached now); the admin chat, and work
 * with no chat of its own, keep it as a `text` envelope beside the result.
 */
function sayInChat(bus: Bus, p: ParentDelivery, text: string, envelope: (kind: string, content: string, id: string) => Promise<unknown>): Promise<unknown> {
  if (p.where.transport === 'admin' || p.where.transport === NO_CHAT.transport) return envelope('text', text, `${p.envelope.id}-reply`);
  return bus
    .send(CHAT_DELIVERY_COMMANDS.deliver, { ...p.where, text, agent: p.agent, source: p.correlation.slice(0, 128), id: `${p.envelope.id}-reply` }, { correlation: p.correlation })
    .catch((e: unknown) => bus.emitLog('warn', `${p.correlation}: the reply of ${p.agent} was not said in its chat: ${describeError(e)}`));
}

/** The chat work reports to: the one given, else the agent's most recently active chat, else its inter-agent conversation. */
export async function parentChat(bus: Bus, sub: { from: string; chat_id: number | null; topic_id: number | null; transport: string | null }): Promise<ChatPlace> {
  const sessions = (await bus.send(AGENT_COMMANDS.sessions, { principal: SYSTEM }).catch(() => []))
    .filter((x) => x.agent === sub.from && !x.key.startsWith('task:'))
    .sort((a, b) => b.last_active.localeCompare(a.last_active));
  if (sub.chat_id === null) {
    const latest = sessions[0];
    return latest ? { transport: latest.transport, chat_id: latest.chat_id, topic_id: latest.topic_id } : NO_CHAT;
  }
  const same = sessions.find((x) => x.chat_id === sub.chat_id && (sub.transport === null || x.transport === sub.transport));
  return { transport: sub.transport ?? same?.transport ?? NO_CHAT.transport, chat_id: sub.chat_id, topic_id: sub.topic_id };
}
