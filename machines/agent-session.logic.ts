import { SESSION_EVENTS, type AnyEnvelope } from '../schemas/index.js';
import { resetProvider, withSessionId, type ProviderSessions } from './provider-sessions.logic.js';

/** One chat/topic session of one agent, as its `session:` stream says it is. */
export interface SessionState {
  key: string;
  transport: string;
  chat_id: number;
  topic_id: number | null;
  createdAt: number;
  lastActiveAt: number;
  messageCount: number;
  countAtThreshold: number | null;
  providerSessions: ProviderSessions;
}

export function sessionStream(agent: string, key: string): string {
  return `session:${agent}:${key}`;
}

export function newSession(key: string, where: { transport: string; chat_id: number; topic_id: number | null }, now: number): SessionState {
  return { key, ...where, createdAt: now, lastActiveAt: now, messageCount: 0, countAtThreshold: null, providerSessions: {} };
}

/**
 * One fact of a session stream applied to the session: `session.started` opens a fresh session
 * (replacing the old one after /new or an expiry), `session.turn_recorded` advances it,
 * `session.ended` closes it. Unknown
 * events are ignored so new facts can be added without breaking restore.
 */
export function applySessionEvent(s: SessionState | null, e: Pick<AnyEnvelope, 'type'> & { data: object }): SessionState | null {
  const d = e.data as Record<string, unknown>;
  if (e.type === SESSION_EVENTS.started) {
    return newSession(String(d.key), { transport: String(d.transport), chat_id: Number(d.chat_id), topic_id: d.topic_id === null ? null : Number(d.topic_id) }, Number(d.created_at));
  }
  if (e.type === SESSION_EVENTS.ended) return null;
  if (!s || e.type !== SESSION_EVENTS.turn_recorded) return s;
  const provider = d.provider as keyof ProviderSessions;
  let providerSessions = d.session_reset === true ? resetProvider(s.providerSessions, provider) : s.providerSessions;
  if (typeof d.session_id === 'string' && d.session_id) providerSessions = withSessionId(providerSessions, provider, d.session_id);
  return {
    ...s,
    providerSessions,
    messageCount: Number(d.message_count),
    lastActiveAt: Number(d.at_ms),
    countAtThreshold: d.count_at_threshold === null ? null : Number(d.count_at_threshold),
  };
}

/** A whole session stream folded (restore at start-up). */
export function foldSession(events: readonly AnyEnvelope[]): SessionState | null {
  return events.reduce(applySessionEvent, null);
}
