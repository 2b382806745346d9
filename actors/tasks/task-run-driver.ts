import type { Bus } from '../../bus/index.js';
import { runStarted, taskRunsMachine, type TaskRunsEvent } from '../../machines/index.js';
import { TASK_RUN_EVENTS, type EventPayload } from '../../schemas/index.js';
import type { ActorClock, ActorHost } from '../host/actor-host.js';

/** The one task run queue's actor and stream. */
export const TASK_RUNS_ID = 'task-runs';

export interface TaskRunDriverDeps {
  bus: Bus;
  host: ActorHost;
  /** `tasks.max_parallel` now: handed to the machine with each input. */
  maxParallel: () => number;
  /** Starts a run's CLI with `text`; settles with its outcome (or why it could not start). */
  run(task_id: string, text: string): Promise<unknown>;
  /** A started run's CLI ended; called after the queue has freed its place. */
  ended(task_id: string, run: number, result: unknown): void;
  /** The orphan sweep's timer fired. */
  sweep(): void;
  clock?: ActorClock;
}

/**
 * Drives the task run queue (machines/task-runs.machine.ts): tells it each run asked for, each end
 * and each drop, and does what it decides — the CLI of each run it starts, the sweep it times. The
 * prompt text stays here: the queue decides by ids alone, so its stream stays small.
 */
export class TaskRunDriver {
  private readonly texts = new Map<string, string>();
  private stopped = false;

  constructor(private readonly d: TaskRunDriverDeps) {}

  start(correlation: string | undefined): void {
    const actor = this.d.host.spawn(TASK_RUNS_ID, taskRunsMachine, { stream: TASK_RUNS_ID, ...(correlation ? { correlation } : {}), ...(this.d.clock ? { clock: this.d.clock } : {}) });
    actor.on(TASK_RUN_EVENTS.started, (f) => this.launch(f.data as EventPayload<typeof TASK_RUN_EVENTS.started>));
    actor.on(TASK_RUN_EVENTS.sweep_due, () => this.d.sweep());
  }

  stop(): void {
    this.stopped = true;
    this.d.host.stop(TASK_RUNS_ID);
    this.texts.clear();
  }

  /** Queues run `run` of task `task_id` in its chat; it starts at once when the chat has a free place. */
  request(task_id: string, run: number, chat_id: number, text: string): void {
    this.texts.set(keyOf(task_id, run), text);
    this.tell({ type: 'request', task_id, run, chat_id, max_parallel: this.d.maxParallel() }, task_id);
  }

  /** Takes a queued run out before it started; false when it has started (its CLI must be stopped instead). */
  drop(task_id: string, run: number): boolean {
    if (this.started(task_id) || !this.texts.has(keyOf(task_id, run))) return false;
    this.texts.delete(keyOf(task_id, run));
    this.tell({ type: 'drop', task_id, run, max_parallel: this.d.maxParallel() }, task_id);
    return true;
  }

  /** Whether a run of the task has started and not ended: only such a run may ask its parent. */
  started(task_id: string): boolean {
    const actor = this.d.host.get<typeof taskRunsMachine>(TASK_RUNS_ID);
    return actor ? runStarted(actor.getSnapshot().context, task_id) : false;
  }

  private tell(event: TaskRunsEvent, task_id: string): void {
    if (this.stopped) return;
    this.d.host.send(TASK_RUNS_ID, event, { correlation: `task:${task_id}` });
  }

  private launch({ task_id, run }: { task_id: string; run: number }): void {
    const text = this.texts.get(keyOf(task_id, run)) ?? '';
    this.texts.delete(keyOf(task_id, run));
    // Deferred: the queue is still deciding when it emits the start, and a refused start ends the run at once.
    void Promise.resolve()
      .then(() => this.d.run(task_id, text))
      .then(
        (o) => this.end(task_id, run, o),
        (e: unknown) => this.end(task_id, run, e),
      );
  }

  private end(task_id: string, run: number, result: unknown): void {
    if (this.stopped) return;
    this.tell({ type: 'ended', task_id, run, max_parallel: this.d.maxParallel() }, task_id);
    this.d.ended(task_id, run, result);
  }
}

function keyOf(task_id: string, run: number): string {
  return `${task_id}#${run}`;
}
