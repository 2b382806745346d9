import { assign, emit, setup } from 'xstate';
import { TURN_EVENTS, type AnyEnvelope, type Fact } from '../schemas/index.js';
import { TURN_TRACE_TYPES, traceTurns } from './interrupted-turn.logic.js';

/** A turn a restart cut off, as long as it still owes its chat the notice or one `/retry`. */
export interface InterruptedTurnContext {
  agent: string;
  sessionKey: string;
  prompt: string;
  /** What had streamed before the cut (its last checkpoint). */
  text: string;
  noticeDelivered: boolean;
  retried: boolean;
}

type InterruptedTurnEvent =
  | { type: 'notice.take'; session_key: string }
  | { type: 'retry.take'; request_id: string }
  /** A newer turn of the same chat was cut: only the last one may be asked again. Not a fact of this turn. */
  | { type: 'retry.superseded' };

/**
 * One per interrupted turn, on the turn's stream. Each hand-over is a fact (`turn.notice_delivered`,
 * `turn.retried`), so after another restart `restoreInterruptedTurn` brings back exactly what is
 * still owed; once nothing is, the actor ends and the host lets it go.
 */
export const interruptedTurnMachine = setup({
  types: {
    context: {} as InterruptedTurnContext,
    input: {} as InterruptedTurnContext,
    events: {} as InterruptedTurnEvent,
    emitted: {} as Fact,
  },
  guards: {
    settled: ({ context }) => context.noticeDelivered && context.retried,
  },
}).createMachine({
  id: 'interrupted-turn',
  initial: 'owing',
  context: ({ input }) => input,
  states: {
    owing: {
      always: { guard: 'settled', target: 'settled' },
      on: {
        'notice.take': {
          guard: ({ context }) => !context.noticeDelivered,
          actions: [assign({ noticeDelivered: true }), emit(({ event }) => ({ type: TURN_EVENTS.notice_delivered, data: { session_key: event.session_key } }))],
        },
        'retry.take': {
          guard: ({ context }) => !context.retried,
          actions: [assign({ retried: true }), emit(({ event }) => ({ type: TURN_EVENTS.retried, data: { request_id: event.request_id } }))],
        },
        'retry.superseded': { actions: assign({ retried: true }) },
      },
    },
    settled: { type: 'final' },
  },
});

/** What an interrupted turn's stream reads for a restore: the recovery scan's types. */
export const INTERRUPTED_TURN_RESTORE_TYPES = TURN_TRACE_TYPES;

/**
 * Folds one turn stream into the state its actor resumes in, or null when the turn is not
 * interrupted or owes nothing more. The cross-chat rule (a newer cut turn supersedes an older one's
 * /retry) needs every stream and is applied by whoever restores the set.
 */
export function restoreInterruptedTurn(events: readonly AnyEnvelope[]): { value: 'owing'; context: InterruptedTurnContext } | null {
  const t = traceTurns(events).owing[0];
  if (!t || t.prompt === null || !t.interrupted) return null;
  return {
    value: 'owing',
    context: { agent: t.agent, sessionKey: t.sessionKey, prompt: t.prompt, text: t.interrupted.text, noticeDelivered: t.noticeDelivered, retried: t.retried },
  };
}
