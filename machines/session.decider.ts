import { SESSION_EVENTS, type ErrorCode, type Fact } from '../schemas/index.js';
import { applySessionEvent, type SessionState } from './agent-session.logic.js';
import { shouldExpire, type ExpiryRules } from './session-expiry.logic.js';
import { ageWarningDue, nextCountAtThreshold } from './session-reminders.logic.js';

/*
 * The rules of one chat session of one agent, as a decider: what a command makes happen is decided
 * from the session's state alone (decide), and the state is only ever advanced by those facts
 * (evolve), so a restart folds the `session:` stream back into the same state.
 */

export type SessionFact = Fact<(typeof SESSION_EVENTS)[keyof typeof SESSION_EVENTS]>;

interface Where {
  agent: string;
  key: string;
  transport: string;
  chat_id: number;
  topic_id: number | null;
}

export type SessionCommand =
  /** `/new` or `/reset`: always a fresh session. */
  | { type: 'reset'; where: Where; reason: 'new' | 'reset'; now: number }
  /**
   * A turn is about to run: open a session if there is none, one was asked for, or this one expired.
   * `resumeOnly` refuses (`no-session`) each of those instead: the turn may only continue a live session.
   */
  | { type: 'begin-turn'; where: Where; freshAsked: boolean; rules: ExpiryRules; now: number; resumeOnly?: boolean }
  /** A turn ended: count it and remember the provider's session id (or that the provider dropped it). */
  | { type: 'record-turn'; turn_id: string; provider: string; session_id: string | null; session_reset: boolean; warningHours: number; now: number }
  /** Ended by an operator: nothing is resumed, and the next message starts afresh. */
  | { type: 'end'; reason: string; now: number };

export type SessionDecision = { ok: true; facts: SessionFact[] } | { ok: false; code: ErrorCode; message: string };

const started = (w: Where, now: number, reason: string): SessionFact => ({
  type: SESSION_EVENTS.started,
  data: { agent: w.agent, key: w.key, transport: w.transport, chat_id: w.chat_id, topic_id: w.topic_id, created_at: now, reason },
});

export function decideSession(command: SessionCommand, state: SessionState | null): SessionDecision {
  switch (command.type) {
    case 'reset':
      return { ok: true, facts: [started(command.where, command.now, command.reason)] };
    case 'begin-turn': {
      if (command.resumeOnly) {
        const refuse = (why: string): SessionDecision => ({ ok: false, code: 'no-session', message: `resume-only turn in ${command.where.key}: ${why}; a new session is not started for it` });
        if (!state) return refuse('there is no session');
        if (command.freshAsked) return refuse('a fresh session was asked for');
        const expired = shouldExpire(state, command.now, command.rules);
        return expired ? refuse(`the session has expired (${expired})`) : { ok: true, facts: [] };
      }
      if (!state) return { ok: true, facts: [started(command.where, command.now, 'first')] };
      if (command.freshAsked) return { ok: true, facts: [started(command.where, command.now, 'new')] };
      const expired = shouldExpire(state, command.now, command.rules);
      return { ok: true, facts: expired ? [started(command.where, command.now, expired)] : [] };
    }
    case 'end':
      if (!state) return { ok: false, code: 'not-found', message: 'no such session' };
      return { ok: true, facts: [{ type: SESSION_EVENTS.ended, data: { reason: command.reason, at_ms: command.now } }] };
    case 'record-turn': {
      if (!state) return { ok: false, code: 'no-session', message: `turn ${command.turn_id} ended in a session that never started` };
      const aged = { createdAt: state.createdAt, messageCount: state.messageCount + 1, countAtThreshold: state.countAtThreshold };
      return {
        ok: true,
        facts: [
          {
            type: SESSION_EVENTS.turn_recorded,
            data: {
              turn_id: command.turn_id,
              provider: command.provider,
              session_id: command.session_id,
              session_reset: command.session_reset,
              message_count: aged.messageCount,
              count_at_threshold: nextCountAtThreshold(aged, command.now, command.warningHours),
              at_ms: command.now,
              warning_hours: command.warningHours,
            },
          },
        ],
      };
    }
  }
}

export function evolveSession(state: SessionState | null, fact: SessionFact): SessionState | null {
  return applySessionEvent(state, fact);
}

/** Whether the answer to the turn about to be recorded carries the "this session is old" notice. */
export function ageWarningOnRecord(state: SessionState, now: number, warningHours: number): boolean {
  return ageWarningDue({ createdAt: state.createdAt, messageCount: state.messageCount + 1, countAtThreshold: state.countAtThreshold }, now, warningHours);
}
