import { MESSENGER_EVENTS, TURN_EVENTS, type AnyEnvelope, type OwedAnswer } from '../schemas/index.js';

/*
 * Answers a messenger owes its chats (issue: a result computed is a result delivered): an update
 * it accepted, whose turn completed, but whose answer never reached the chat because svc died in
 * between. Pure folds over the messenger's stream and the turn facts after the oldest such update;
 * the transport sends what is owed once it is up, and records each as delivered.
 */

interface Pending {
  seq: number;
  request_id: string;
  chat_id: number;
  topic_id: number | null;
  agent: string;
}

const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);
const num = (v: unknown): number | null => (typeof v === 'number' ? v : null);

/** Accepted updates (with a request id) not yet marked delivered, oldest first, from a messenger stream's facts. */
export function pendingAnswers(messengerFacts: Iterable<AnyEnvelope>): Pending[] {
  const pending = new Map<string, Pending>();
  for (const e of messengerFacts) {
    const d = e.data as Record<string, unknown>;
    const id = str(d.request_id);
    if (id === null) continue;
    if (e.type === MESSENGER_EVENTS.update_accepted) {
      const chat = num(d.chat_id);
      if (chat !== null) pending.set(id, { seq: e.seq, request_id: id, chat_id: chat, topic_id: num(d.topic_id), agent: str(d.agent) ?? '' });
    } else if (e.type === MESSENGER_EVENTS.answer_delivered) pending.delete(id);
  }
  return [...pending.values()].sort((a, b) => a.seq - b.seq);
}

/**
 * Of the pending answers, those whose turn completed (`turn.started` names the request, the same
 * stream's `turn.completed` has the text). A turn a restart cut off is not here: its chat is told
 * what had arrived instead (interrupted-turn.logic.ts); nor is one still running.
 */
export function owedAnswers(pending: readonly Pending[], turnFacts: Iterable<AnyEnvelope>): OwedAnswer[] {
  const byRequest = new Map(pending.map((p) => [p.request_id, p]));
  const streamOf = new Map<string, string>();
  const owed: OwedAnswer[] = [];
  for (const e of turnFacts) {
    const d = e.data as Record<string, unknown>;
    if (e.type === TURN_EVENTS.started) {
      const id = str(d.request_id);
      if (id !== null && byRequest.has(id)) streamOf.set(e.stream, id);
    } else if (e.type === TURN_EVENTS.completed) {
      const id = streamOf.get(e.stream);
      const p = id === undefined ? undefined : byRequest.get(id);
      if (!p) continue;
      const text = str(d.text) ?? '';
      if (text.trim() !== '') owed.push({ request_id: p.request_id, chat_id: p.chat_id, topic_id: p.topic_id, agent: p.agent, text });
    }
  }
  return owed;
}
