import { assign, enqueueActions, setup } from 'xstate';

/*
 * The one-shot runner's dependency queues, pure: runs that share a `dependency` key start one at a
 * time in the order they were queued, whoever asked; runs without one start at once. The machine
 * decides when each run starts (`start`, emitted); the driver (actors/automation/one-shot-runner.ts)
 * runs it and tells the machine when it `finished`. Its inputs are the runs' own facts
 * (`oneshot.queued` holds the key, `oneshot.finished` the end), so the same facts in the same order
 * start the same runs in the same order.
 */

export type OneShotQueueEvent =
  | { type: 'queued'; run_id: string; dependency: string | null }
  | { type: 'finished'; run_id: string };

export type OneShotQueueEmitted = { type: 'start'; run_id: string };

export interface OneShotQueueContext {
  /** Per dependency key, its runs in order: the first is running, the rest wait. */
  queues: Record<string, string[]>;
  /** Per run in a queue, its key. */
  keyOf: Record<string, string>;
  /** Runs the transition being taken starts. */
  starting: string[];
}

const hasKey = (dependency: string | null): dependency is string => dependency !== null && dependency !== '';

export const oneShotQueueMachine = setup({
  types: {
    context: {} as OneShotQueueContext,
    events: {} as OneShotQueueEvent,
    emitted: {} as OneShotQueueEmitted,
  },
  actions: {
    decide: assign(({ context, event }) => {
      if (event.type === 'queued') {
        if (!hasKey(event.dependency)) return { ...context, starting: [event.run_id] };
        const queue = context.queues[event.dependency] ?? [];
        // The same run queued twice (a replayed fact) waits once.
        if (context.keyOf[event.run_id] !== undefined) return { ...context, starting: [] };
        return {
          queues: { ...context.queues, [event.dependency]: [...queue, event.run_id] },
          keyOf: { ...context.keyOf, [event.run_id]: event.dependency },
          starting: queue.length === 0 ? [event.run_id] : [],
        };
      }
      const key = context.keyOf[event.run_id];
      if (key === undefined) return { ...context, starting: [] };
      const queue = context.queues[key] ?? [];
      const rest = queue.filter((id) => id !== event.run_id);
      const { [event.run_id]: _gone, ...keyOf } = context.keyOf;
      const { [key]: _old, ...others } = context.queues;
      // Only the end of the running run (the head) starts the next; one that ends while waiting just leaves.
      const next = queue[0] === event.run_id ? rest[0] : undefined;
      return { queues: rest.length ? { ...others, [key]: rest } : others, keyOf, starting: next === undefined ? [] : [next] };
    }),
    tell: enqueueActions(({ context, enqueue }) => {
      for (const run_id of context.starting) enqueue.emit({ type: 'start', run_id });
    }),
  },
}).createMachine({
  id: 'one-shot-queue',
  context: { queues: {}, keyOf: {}, starting: [] },
  on: {
    queued: { actions: ['decide', 'tell'] },
    finished: { actions: ['decide', 'tell'] },
  },
});

/** The runs waiting behind a running one, per dependency key (for a status line or a test). */
export function waitingRuns(context: OneShotQueueContext): Record<string, string[]> {
  return Object.fromEntries(Object.entries(context.queues).map(([key, runs]) => [key, runs.slice(1)]));
}
