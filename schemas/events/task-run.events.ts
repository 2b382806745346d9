import * as v from 'valibot';
import { typeNames } from './type-names.js';

/*
 * Stream `task-runs`: the queue of task runs and their places under `tasks.max_parallel` per chat
 * (machines/task-runs.machine.ts). Each input the machine was given is on the stream (a run asked
 * for, a run's CLI ended, a queued run dropped, the orphan sweep's timer fired), each carrying what
 * the decision needed (`max_parallel` as configured then), so `svc events replay --check` re-drives
 * the queue from this stream alone and compares the runs it starts with `task_run.started`.
 * A run is one task's n-th run (`run`: the task's run count), so a late end of an earlier run
 * never frees the place of a later one.
 */
const Run = { task_id: v.string(), run: v.number() };

export const TASK_RUN_EVENT_SCHEMAS = {
  /** The queue opened empty (the daemon started; runs left by a previous run of svc fail as stale). */
  'task_run.opened': v.object({}),
  /** A run was asked for in chat `chat_id`; it starts once that chat has a free place. */
  'task_run.queued': v.object({ ...Run, chat_id: v.number(), max_parallel: v.number() }),
  /** The run's CLI is started now. */
  'task_run.started': v.object(Run),
  /** The run's CLI ended (or could not start); its place is free. */
  'task_run.ended': v.object({ ...Run, max_parallel: v.number() }),
  /** A queued run was cancelled before it started. */
  'task_run.dropped': v.object({ ...Run, max_parallel: v.number() }),
  /** The orphan sweep's timer fired: task folders no task owns are removed now. */
  'task_run.sweep_due': v.object({}),
};
export const TASK_RUN_EVENTS = typeNames(TASK_RUN_EVENT_SCHEMAS);
