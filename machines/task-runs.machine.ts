import { emit, enqueueActions, raise, setup } from 'xstate';
import { TASK_RUN_EVENTS, type Fact } from '../schemas/index.js';

/** Every 5 hours, task folders no task owns are swept (SPEC.md "Task records"). */
export const ORPHAN_SWEEP_INTERVAL_MS = 5 * 60 * 60 * 1000;

/** One task's n-th run and the chat whose places it counts against. */
export interface TaskRunSlot {
  task_id: string;
  run: number;
  chat_id: number;
}

export interface TaskRunsContext {
  /** Waiting for a place, in arrival order. */
  queued: TaskRunSlot[];
  running: TaskRunSlot[];
}

/** `max_parallel` is the config as it stood when the input arrived: the machine reads no config. */
export type TaskRunsEvent =
  | { type: 'request'; task_id: string; run: number; chat_id: number; max_parallel: number }
  | { type: 'ended'; task_id: string; run: number; max_parallel: number }
  | { type: 'drop'; task_id: string; run: number; max_parallel: number }
  | { type: 'sweep' };

const same = (a: { task_id: string; run: number }, b: { task_id: string; run: number }) => a.task_id === b.task_id && a.run === b.run;

/** Oldest first, each queued run whose chat has fewer than `max` running starts; pure, so replay decides as the daemon did. */
export function admit(ctx: TaskRunsContext, max: number): { next: TaskRunsContext; started: TaskRunSlot[] } {
  const running = [...ctx.running];
  const queued: TaskRunSlot[] = [];
  const started: TaskRunSlot[] = [];
  const busy = new Map<number, number>();
  for (const r of running) busy.set(r.chat_id, (busy.get(r.chat_id) ?? 0) + 1);
  for (const q of ctx.queued) {
    const n = busy.get(q.chat_id) ?? 0;
    if (n >= max) {
      queued.push(q);
      continue;
    }
    busy.set(q.chat_id, n + 1);
    running.push(q);
    started.push(q);
  }
  return { next: { queued, running }, started };
}

/**
 * The task run queue (SPEC.md "TasksConfig"): at most `max_parallel` runs per chat, the rest
 * queued in arrival order, plus the orphan sweep's timer. It emits what it decided: each run it
 * starts (`task_run.started`, which the task hub's run driver turns into a CLI run) and, with each
 * input, the input itself, so the stream holds everything a replay needs. Each daemon start opens
 * a fresh queue: runs a previous run of svc left are failed as stale, never resumed from here.
 */
export const taskRunsMachine = setup({
  types: {
    context: {} as TaskRunsContext,
    events: {} as TaskRunsEvent,
    emitted: {} as Fact,
  },
  delays: { sweep: ORPHAN_SWEEP_INTERVAL_MS },
  actions: {
    /** Records the input, applies it, then starts what now fits. */
    apply: enqueueActions(({ context, event, enqueue }) => {
      if (event.type === 'sweep') return;
      const { task_id, run, max_parallel } = event;
      const without = (list: TaskRunSlot[]) => list.filter((r) => !same(r, event));
      let ctx: TaskRunsContext = { queued: without(context.queued), running: without(context.running) };
      if (event.type === 'request') {
        enqueue.emit({ type: TASK_RUN_EVENTS.queued, data: { task_id, run, chat_id: event.chat_id, max_parallel } });
        ctx = { ...ctx, queued: [...ctx.queued, { task_id, run, chat_id: event.chat_id }] };
      } else if (event.type === 'ended') enqueue.emit({ type: TASK_RUN_EVENTS.ended, data: { task_id, run, max_parallel } });
      else enqueue.emit({ type: TASK_RUN_EVENTS.dropped, data: { task_id, run, max_parallel } });
      const { next, started } = admit(ctx, max_parallel);
      for (const s of started) enqueue.emit({ type: TASK_RUN_EVENTS.started, data: { task_id: s.task_id, run: s.run } });
      enqueue.assign(next);
    }),
  },
}).createMachine({
  id: 'task-runs',
  context: { queued: [], running: [] },
  initial: 'open',
  entry: emit({ type: TASK_RUN_EVENTS.opened, data: {} }),
  states: {
    open: {
      // The timer raises the same event a replay sends, so the fire is decided in one place.
      after: { sweep: { actions: raise({ type: 'sweep' }) } },
      on: {
        request: { actions: 'apply' },
        // An end or a drop of a run the queue does not hold changes nothing but is still recorded.
        ended: { actions: 'apply' },
        drop: { actions: 'apply' },
        sweep: { target: 'open', reenter: true, actions: emit({ type: TASK_RUN_EVENTS.sweep_due, data: {} }) },
      },
    },
  },
});

/** Whether the run is started (not merely queued): only a started run may ask its parent. */
export function runStarted(ctx: TaskRunsContext, task_id: string): boolean {
  return ctx.running.some((r) => r.task_id === task_id);
}

