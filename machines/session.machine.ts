import { assign, enqueueActions, setup } from 'xstate';
import type { ErrorCode } from '../schemas/index.js';
import type { SessionState } from './agent-session.logic.js';
import { decideSession, evolveSession, type SessionCommand, type SessionFact } from './session.decider.js';

export interface SessionMachineInput {
  /** The session as its stream folds (a restart), or null for a chat that has none yet. */
  state: SessionState | null;
}

export interface SessionContext {
  state: SessionState | null;
  /** Why the last command was refused; null when it was decided. Read by the sender right after `send`. */
  refused: { code: ErrorCode; message: string } | null;
}

/**
 * One chat session of one agent as an actor: the session decider run on each command, its facts
 * emitted (the host records them on the session's stream) and folded into the context. A child of
 * its agent's actor; a restart brings it back from its stream with the state it had.
 */
export const sessionMachine = setup({
  types: {
    input: {} as SessionMachineInput,
    context: {} as SessionContext,
    events: {} as SessionCommand | { type: 'restore'; state: SessionState | null },
    emitted: {} as SessionFact,
  },
  actions: {
    decide: enqueueActions(({ context, event, enqueue }) => {
      if (event.type === 'restore') return;
      const decision = decideSession(event, context.state);
      if (!decision.ok) {
        enqueue.assign({ refused: { code: decision.code, message: decision.message } });
        return;
      }
      let state = context.state;
      for (const fact of decision.facts) {
        enqueue.emit(fact);
        state = evolveSession(state, fact);
      }
      enqueue.assign({ state, refused: null });
    }),
  },
}).createMachine({
  id: 'session',
  context: ({ input }) => ({ state: input.state, refused: null }),
  initial: 'open',
  states: {
    open: {
      on: {
        reset: { actions: 'decide' },
        'begin-turn': { actions: 'decide' },
        'record-turn': { actions: 'decide' },
        end: { actions: 'decide' },
        // Back to what the stream holds, when facts it decided could not be recorded (nothing is emitted).
        restore: { actions: assign(({ event }) => ({ state: event.state, refused: null })) },
      },
    },
  },
});
