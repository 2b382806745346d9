import { INTERRUPTED_REASON, SHUTDOWN_ABORT, TURN_EVENTS, type AnyEnvelope } from '../schemas/index.js';
import type { RecordedGroup } from './orphan-group.logic.js';

/*
 * Turns a restart cut short — by a crash, or by svc stopping while they ran — as the log tells them: which turns were still open (and which
 * process groups they ran), what they had streamed, and which interrupted turns still owe their
 * chat a notice or a `/retry`. Pure folds over envelopes; actors/recovery/turn-recovery.ts does the I/O.
 */

// Declared with the turn events; the runtime and recovery still import them from here.
export { INTERRUPTED_REASON, SHUTDOWN_ABORT };

export const TURN_TERMINAL_TYPES: readonly string[] = [TURN_EVENTS.completed, TURN_EVENTS.failed, TURN_EVENTS.timed_out, TURN_EVENTS.aborted];
/** What a recovery scan reads of every turn stream; checkpoints are read per open turn only. */
export const TURN_TRACE_TYPES: readonly string[] = [TURN_EVENTS.started, TURN_EVENTS.spawned, ...TURN_TERMINAL_TYPES, TURN_EVENTS.notice_delivered, TURN_EVENTS.retried];

export interface TurnTrace {
  stream: string;
  agent: string;
  sessionKey: string;
  /** Null for turns an older svc recorded: they get no notice and cannot be retried. */
  prompt: string | null;
  /** Every attempt's group, in order. */
  groups: RecordedGroup[];
  /** Set by `turn.failed {reason: daemon-restarted}` (a crash) or `turn.aborted {cause: shutdown}` (a stop). */
  interrupted: { text: string; seq: number } | null;
  noticeDelivered: boolean;
  retried: boolean;
}

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isSafeInteger(v) ? v : null);
const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);

/**
 * Folds every turn's facts (in log order) into the turns still open and the interrupted ones that
 * still owe something. Finished turns are dropped as soon as they end, so memory follows the
 * turns that matter, not the log's length.
 */
export function traceTurns(events: Iterable<AnyEnvelope>): { open: TurnTrace[]; owing: TurnTrace[] } {
  const turns = new Map<string, TurnTrace>();
  for (const e of events) {
    const d = e.data as Record<string, unknown>;
    if (e.type === TURN_EVENTS.started) {
      turns.set(e.stream, {
        stream: e.stream,
        agent: str(d.agent) ?? '',
        sessionKey: str(d.session_key) ?? '',
        prompt: str(d.prompt),
        groups: [],
        interrupted: null,
        noticeDelivered: false,
        retried: false,
      });
      continue;
    }
    const t = turns.get(e.stream);
    if (!t) continue;
    if (e.type === TURN_EVENTS.spawned && !t.interrupted) {
      const pgid = num(d.pid);
      if (pgid !== null && pgid > 0) t.groups.push({ pgid, startTime: num(d.start_time), bootId: str(d.boot_id) });
    } else if (TURN_TERMINAL_TYPES.includes(e.type)) {
      const cut = (e.type === TURN_EVENTS.failed && d.reason === INTERRUPTED_REASON) || (e.type === TURN_EVENTS.aborted && d.cause === SHUTDOWN_ABORT);
      if (cut && !t.interrupted && t.prompt !== null) {
        // /retry asks the chat's last cut-off question only: a newer one retires the older ones' retry.
        for (const o of turns.values()) if (o.interrupted && o.agent === t.agent && o.sessionKey === t.sessionKey) o.retried = true;
        t.interrupted = { text: str(d.text) ?? '', seq: e.seq };
      } else if (!t.interrupted) turns.delete(e.stream);
    } else if (e.type === TURN_EVENTS.notice_delivered) t.noticeDelivered = true;
    else if (e.type === TURN_EVENTS.retried) t.retried = true;
    if (t.interrupted && t.noticeDelivered && t.retried) turns.delete(e.stream);
  }
  for (const [stream, t] of turns) if (t.interrupted && t.noticeDelivered && t.retried) turns.delete(stream);
  const all = [...turns.values()];
  return { open: all.filter((t) => !t.interrupted), owing: all.filter((t) => t.interrupted) };
}

/**
 * The text an open turn had checkpointed (`turn.progressed`), for its current attempt: a recovery
 * or fallback retry starts its answer over, as the turn machine does.
 */
export function partialText(events: Iterable<AnyEnvelope>): string {
  let text = '';
  for (const e of events) {
    if (e.type === TURN_EVENTS.progressed) text += str((e.data as Record<string, unknown>).text) ?? '';
    else if (e.type === TURN_EVENTS.recovering || e.type === TURN_EVENTS.fallback) text = '';
  }
  return text;
}

/** How much of the cut answer a notification quotes. */
export const NOTICE_QUOTE_CHARS = 280;

export const RETRY_HINT = 'send /retry to ask again';

/** What the chat reads in place of the answer: the part that arrived, and why it stops. */
export function interruptedReplyText(partial: string): string {
  const note = `[This answer was cut off by a restart of svc; ${RETRY_HINT}.]`;
  return partial.trim() ? `${partial}\n\n${note}` : `[Your message got no answer: svc restarted while working on it; ${RETRY_HINT}.]`;
}

export function interruptedNotification(t: { sessionKey: string; agent: string }, partial: string): { title: string; body: string } {
  const text = partial.trim();
  const quoted = text ? text.slice(0, NOTICE_QUOTE_CHARS) + (text.length > NOTICE_QUOTE_CHARS ? '…' : '') : '(nothing had arrived yet)';
  return {
    title: 'Answer interrupted by a restart',
    body: `The answer of agent ${t.agent} in chat ${t.sessionKey} was cut off when svc stopped. It began:\n${quoted}\n\nIn that chat, ${RETRY_HINT}.`,
  };
}
