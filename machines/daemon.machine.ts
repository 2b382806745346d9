import { assign, emit, enqueueActions, setup } from 'xstate';
import type { PreviousRun } from './daemon.logic.js';
import { DAEMON_EVENTS, type Fact, type Listener } from '../schemas/index.js';

export interface DaemonInput {
  pid: number;
  version: string;
  home: string;
  node: string;
  previous: PreviousRun | null;
}

type DaemonEvent = { type: 'ready'; subsystems: string[]; listeners?: Listener[] } | { type: 'stop'; reason: string } | { type: 'stopped' };

/**
 * The daemon's own life: starting → running → stopping → stopped. Its facts open and close every
 * run in the log, which is how the next start knows whether the last one ended cleanly.
 */
export const daemonMachine = setup({
  types: {
    input: {} as DaemonInput,
    context: {} as DaemonInput & { reason: string },
    events: {} as DaemonEvent,
    emitted: {} as Fact,
  },
  actions: {
    rememberReason: assign({ reason: ({ event }) => (event.type === 'stop' ? event.reason : 'unknown') }),
  },
}).createMachine({
  id: 'daemon',
  initial: 'starting',
  context: ({ input }) => ({ ...input, reason: 'unknown' }),
  states: {
    starting: {
      entry: enqueueActions(({ context, enqueue }) => {
        enqueue.emit({
          type: DAEMON_EVENTS.started,
          data: { pid: context.pid, version: context.version, home: context.home, node: context.node },
        });
        if (context.previous && !context.previous.clean) {
          enqueue.emit({
            type: DAEMON_EVENTS.recovered,
            data: { previous_pid: context.previous.pid, previous_started_at: context.previous.started_at },
          });
        }
      }),
      on: {
        ready: {
          target: 'running',
          actions: emit(({ event }) => ({ type: DAEMON_EVENTS.ready, data: { subsystems: event.subsystems, ...(event.listeners ? { listeners: event.listeners } : {}) } })),
        },
        stop: { target: 'stopping', actions: 'rememberReason' },
      },
    },
    running: {
      on: { stop: { target: 'stopping', actions: 'rememberReason' } },
    },
    stopping: {
      entry: emit(({ context }) => ({ type: DAEMON_EVENTS.stopping, data: { reason: context.reason } })),
      on: { stopped: 'stopped' },
    },
    stopped: {
      type: 'final',
      entry: emit(({ context }) => ({ type: DAEMON_EVENTS.stopped, data: { reason: context.reason } })),
    },
  },
});
