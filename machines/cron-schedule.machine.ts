import { assign, emit, enqueueActions, setup } from 'xstate';
import { compileSchedule, nextFireAfter, type CompiledSchedule } from './cron.logic.js';
import { heapOf, heapPop, heapPush, heapSoonest, type FireHeap } from './cron-schedule.logic.js';

/*
 * When the cron jobs fire next, and which are due: the scheduler's state, pure. One xstate delay (on
 * the injected clock) waits for the soonest fire and then asks for the time (`wake`); the driver
 * answers with `clock`, the time as its clock says, since a timer can fire late and a machine that
 * counted time by its own delays would fall behind. A tick touches only the jobs it fires (croner
 * computes each one's next), so a thousand idle jobs cost a look at the top of a heap. What is due is
 * emitted as `due`; the driver records the fires and runs them (actors/automation/cron-scheduler.ts).
 *
 * A transition hands out at most `batch` fires (CRON_FIRE_BATCH): a thousand jobs due in the same
 * minute would otherwise be decided (croner, each) and started (fact, run, record) in one turn of
 * the event loop, holding every socket for the whole burst. While more are due the plan is
 * `draining`: a 0-ms delay on the injected clock takes the next batch at the time already given,
 * so the driver's loop turns between batches, and the fires still come in heap order (time, id).
 *
 * Every input is plain data (`jobs.set` names each job's expression, zone and enabled; `clock`
 * carries a time), so the same inputs in the same order decide the same fires. The heap and the
 * next-fire record are updated in place: copying them at each tick would cost what the heap saves,
 * and no earlier snapshot of this machine is kept.
 */

/** Longest sleep between checks, so a jump of the wall clock is noticed within this. */
export const CRON_MAX_TICK_MS = 60_000;
/** Most fires one transition hands out; the rest follow after a 0-ms delay, batch by batch. */
export const CRON_FIRE_BATCH = 32;

export interface CronScheduleJob {
  id: string;
  expr: string;
  zone: string;
  enabled: boolean;
}

export interface CronDue {
  id: string;
  /** The scheduled time that is due. */
  at: number;
  /** The job's next fire after it, or null when it never fires again. */
  next: number | null;
}

export type CronScheduleEvent =
  /** The whole set of jobs as it is now: new or changed ones get a next fire after `now`, missing ones are dropped. */
  | { type: 'jobs.set'; jobs: CronScheduleJob[]; now: number }
  /** The time as the driver's clock says (a watch check, a manual tick): whatever is due fires. */
  | { type: 'clock'; now: number };

export type CronScheduleEmitted =
  /** `more`: fires still due after these, handed out by the next batch. */
  | { type: 'due'; fires: CronDue[]; more: boolean }
  | { type: 'wake' };

export interface CronScheduleContext {
  /** The time as of the last input. */
  now: number;
  /** How long the armed delay waits from `now`. */
  wait: number;
  /** Per job, the next fire (null: disabled, broken or never again). */
  next: Record<string, number | null>;
  /** What a job must change in to get a new next fire. */
  keys: Record<string, string>;
  compiled: Record<string, CompiledSchedule | null>;
  heap: FireHeap;
  /** What the transition being taken decided is due; emitted, then left for the next one to replace. */
  fires: CronDue[];
  /** Most fires one transition hands out. */
  batch: number;
  /** Fires due at `now` are left for the next batch. */
  more: boolean;
}

const keyOf = (j: CronScheduleJob) => `${j.expr}|${j.zone}|${j.enabled}`;

function waitFrom(c: CronScheduleContext): number {
  const soonest = heapSoonest(c.heap, c.next);
  return soonest === undefined ? CRON_MAX_TICK_MS : Math.max(0, Math.min(soonest.at - c.now, CRON_MAX_TICK_MS));
}

function setJobs(c: CronScheduleContext, jobs: readonly CronScheduleJob[], now: number): CronScheduleContext {
  const next: Record<string, number | null> = {};
  const keys: Record<string, string> = {};
  const compiled: Record<string, CompiledSchedule | null> = {};
  let heap = c.heap;
  for (const j of jobs) {
    const key = keyOf(j);
    keys[j.id] = key;
    if (c.keys[j.id] === key && j.id in c.next) {
      next[j.id] = c.next[j.id]!;
      compiled[j.id] = c.compiled[j.id] ?? null;
      continue;
    }
    const s = compileSchedule(j.expr, j.zone);
    compiled[j.id] = 'error' in s ? null : s;
    const at = 'error' in s || !j.enabled ? null : nextFireAfter(s, now);
    next[j.id] = at;
    if (at !== null) heapPush(heap, { id: j.id, at });
  }
  // Dead entries (moved or removed jobs) outnumber live ones: start the heap again.
  if (heap.length > 2 * jobs.length + 16) heap = heapOf(next);
  const out = { ...c, now: Math.max(c.now, now), next, keys, compiled, heap };
  // A job dropped or moved while its fire waited for a batch no longer fires at that time.
  return { ...out, wait: waitFrom(out), more: c.more && dueLeft(out, out.now) };
}

/** Whether a live fire at or before `now` is still in the heap. */
function dueLeft(c: CronScheduleContext, now: number): boolean {
  const top = heapSoonest(c.heap, c.next);
  return top !== undefined && top.at <= now;
}

/** Pops the live fires at or before `now`, at most `c.batch` of them, giving each job its next fire after it. */
function takeDue(c: CronScheduleContext, now: number): { context: CronScheduleContext; fires: CronDue[] } {
  const fires: CronDue[] = [];
  const next = c.next;
  for (let top = heapSoonest(c.heap, next); top !== undefined && top.at <= now && fires.length < c.batch; top = heapSoonest(c.heap, next)) {
    heapPop(c.heap);
    const s = c.compiled[top.id];
    const after = s ? nextFireAfter(s, Math.max(top.at, now)) : null;
    next[top.id] = after;
    if (after !== null) heapPush(c.heap, { id: top.id, at: after });
    fires.push({ id: top.id, at: top.at, next: after });
  }
  const out = { ...c, now, next };
  return { context: { ...out, wait: waitFrom(out), more: dueLeft(out, now) }, fires };
}

export const cronScheduleMachine = setup({
  types: {
    context: {} as CronScheduleContext,
    input: {} as { now: number; batch?: number },
    events: {} as CronScheduleEvent,
    emitted: {} as CronScheduleEmitted,
  },
  delays: {
    untilDue: ({ context }) => context.wait,
  },
  guards: {
    more: ({ context }) => context.more,
  },
  actions: {
    advance: assign(({ context, event }) => {
      if (event.type !== 'clock') return context;
      const r = takeDue(context, Math.max(context.now, event.now));
      return { ...r.context, fires: r.fires };
    }),
    /** The next batch, at the time the last input gave (what was due then is still due). */
    nextBatch: assign(({ context }) => {
      const r = takeDue(context, context.now);
      return { ...r.context, fires: r.fires };
    }),
    tell: enqueueActions(({ context, enqueue }) => {
      if (context.fires.length) enqueue.emit({ type: 'due', fires: context.fires, more: context.more });
    }),
    setJobs: assign(({ context, event }) => (event.type === 'jobs.set' ? { ...setJobs(context, event.jobs, event.now), fires: [] } : context)),
  },
}).createMachine({
  id: 'cron-schedule',
  context: ({ input }) => ({ now: input.now, wait: CRON_MAX_TICK_MS, next: {}, keys: {}, compiled: {}, heap: [], fires: [], batch: Math.max(1, input.batch ?? CRON_FIRE_BATCH), more: false }),
  initial: 'armed',
  states: {
    armed: {
      after: { untilDue: { target: 'armed', reenter: true, actions: emit({ type: 'wake' }) } },
      on: {
        'jobs.set': { target: 'deciding', actions: 'setJobs' },
        clock: { target: 'deciding', actions: ['advance', 'tell'] },
      },
    },
    /** Fires due are left over (a batch was full): drain them, else wait for the soonest. */
    deciding: {
      always: [{ guard: 'more', target: 'draining' }, { target: 'armed' }],
    },
    draining: {
      after: { 0: { target: 'deciding', actions: ['nextBatch', 'tell'] } },
      on: {
        'jobs.set': { target: 'deciding', actions: 'setJobs' },
        clock: { target: 'deciding', actions: ['advance', 'tell'] },
      },
    },
  },
});
