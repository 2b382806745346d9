import { emit, enqueueActions, setup } from 'xstate';
import { AGENT_EVENTS, type Fact } from '../schemas/index.js';
import type { SessionState } from './agent-session.logic.js';
import type { SessionCommand } from './session.decider.js';
import { sessionMachine } from './session.machine.js';

export interface AgentInput {
  name: string;
  is_main: boolean;
  provider: string;
  model: string;
  workspace: string;
}

export type AgentEvent =
  | { type: 'stop'; reason: string }
  /** A command for the session under `key`; the session's actor is created on its first one. */
  | { type: 'session'; key: string; command: SessionCommand }
  /**
   * A session as the log holds it: brought back after a restart, or set back after facts it decided
   * could not be recorded (nothing is emitted: its facts exist).
   */
  | { type: 'session.restore'; key: string; state: SessionState | null };

/**
 * An agent's life as the log tells it: online until stopped (registry removal, restart,
 * shutdown), owning one child actor per chat session (a child's id is its session key). Its turns
 * are run by the runtime bound to it in actors/.
 */
export const agentMachine = setup({
  types: {
    input: {} as AgentInput,
    context: {} as AgentInput & { reason: string },
    events: {} as AgentEvent,
    emitted: {} as Fact,
  },
  actors: { session: sessionMachine },
}).createMachine({
  id: 'agent',
  context: ({ input }) => ({ ...input, reason: '' }),
  initial: 'online',
  states: {
    online: {
      entry: emit(({ context: c }) => ({
        type: AGENT_EVENTS.started,
        data: { name: c.name, is_main: c.is_main, provider: c.provider, model: c.model, workspace: c.workspace },
      })),
      on: {
        session: {
          actions: enqueueActions(({ event, enqueue, self }) => {
            if (!self.getSnapshot().children[event.key]) enqueue.spawnChild('session', { id: event.key, input: { state: null } });
            enqueue.sendTo(event.key, event.command);
          }),
        },
        'session.restore': {
          actions: enqueueActions(({ event, enqueue, self }) => {
            if (!self.getSnapshot().children[event.key]) enqueue.spawnChild('session', { id: event.key, input: { state: event.state } });
            else enqueue.sendTo(event.key, { type: 'restore', state: event.state });
          }),
        },
        stop: {
          target: 'offline',
          actions: emit(({ context, event }) => ({ type: AGENT_EVENTS.stopped, data: { name: context.name, reason: event.reason } })),
        },
      },
    },
    offline: { type: 'final' },
  },
});
