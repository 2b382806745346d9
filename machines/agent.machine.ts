import { emit, setup } from 'xstate';
import { AGENT_EVENTS, type Fact } from '../schemas/index.js';

export interface AgentInput {
  name: string;
  is_main: boolean;
  provider: string;
  model: string;
  workspace: string;
}

/**
 * An agent's life as the log tells it: online until stopped (registry removal, restart,
 * shutdown). Its chats and turns are run by the runtime bound to it in actors/.
 */
export const agentMachine = setup({
  types: {
    input: {} as AgentInput,
    context: {} as AgentInput & { reason: string },
    events: {} as { type: 'stop'; reason: string },
    emitted: {} as Fact,
  },
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
        stop: {
          target: 'offline',
          actions: emit(({ context, event }) => ({ type: AGENT_EVENTS.stopped, data: { name: context.name, reason: event.reason } })),
        },
      },
    },
    offline: { type: 'final' },
  },
});
