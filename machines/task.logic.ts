import { FINISHED_TASK_STATUSES, TASK_EVENTS, type AnyEnvelope, type EventPayload, type TaskStatus } from '../schemas/index.js';

/*
 * A task's record, folded from its `task:<id>` facts. The task machine keeps exactly this as its
 * context (it applies the fact it emits), so tasks.json, a restore after a restart and a replay
 * all read the same fold.
 */

export type TaskCreated = EventPayload<typeof TASK_EVENTS.created>;

export interface TaskState extends TaskCreated {
  status: TaskStatus;
  /** The provider session of the last run; with `provider` it is what a resume continues. */
  session_id: string | null;
  result: string | null;
  /** A failure's reason code (`timeout`, `stale`, ...). */
  reason: string | null;
  /** The question the task waits on, while `waiting`. */
  question: string | null;
  /** Epoch seconds; null while running or waiting. */
  finished_at: number | null;
  /** How many runs were started (the first, then one per resume). */
  runs: number;
  deleted: boolean;
}

/** A task fact as the fold reads it: from the log, or as the machine emits it. */
export interface TaskFact {
  type: string;
  data: unknown;
}

export function isFinishedTask(status: string): boolean {
  return FINISHED_TASK_STATUSES.includes(status);
}

/** Resume needs a conversation to continue: the provider and the session id a run reported. */
export function resumable(s: TaskState): boolean {
  return s.status !== 'running' && s.session_id !== null && s.session_id !== '' && s.provider !== null && s.provider !== '';
}

/** Applies one fact; a fact that does not fit the state (or an unknown type) leaves it unchanged. */
export function evolveTask(s: TaskState | null, f: TaskFact): TaskState | null {
  if (f.type === TASK_EVENTS.created) {
    const d = f.data as TaskCreated;
    return { ...d, status: 'running', session_id: null, result: null, reason: null, question: null, finished_at: null, runs: 1, deleted: false };
  }
  if (s === null) return null;
  switch (f.type) {
    case TASK_EVENTS.question_asked: {
      const d = f.data as EventPayload<typeof TASK_EVENTS.question_asked>;
      return { ...s, status: 'waiting', question: d.question };
    }
    case TASK_EVENTS.answered:
      return { ...s, status: 'running', question: null };
    case TASK_EVENTS.resumed: {
      const d = f.data as EventPayload<typeof TASK_EVENTS.resumed>;
      return {
        ...s,
        status: 'running',
        provider: d.provider ?? s.provider,
        session_id: d.session_id ?? s.session_id,
        question: null,
        result: null,
        reason: null,
        finished_at: null,
        runs: s.runs + 1,
      };
    }
    case TASK_EVENTS.completed:
    case TASK_EVENTS.failed: {
      const d = f.data as EventPayload<typeof TASK_EVENTS.failed>;
      return {
        ...s,
        status: f.type === TASK_EVENTS.completed ? 'done' : 'failed',
        result: d.result,
        reason: f.type === TASK_EVENTS.failed ? d.reason : null,
        // What the run resolved is persisted; a run that never started keeps what the task had.
        provider: d.provider ?? s.provider,
        model: d.model ?? s.model,
        session_id: d.session_id ?? s.session_id,
        question: null,
        finished_at: d.at,
      };
    }
    case TASK_EVENTS.cancelled:
      return { ...s, status: 'cancelled', question: null, finished_at: (f.data as { at: number }).at };
    case TASK_EVENTS.deleted:
      return { ...s, deleted: true };
    default:
      return s;
  }
}

/** One stream's facts, in order; null for no task (or none created). */
export function foldTask(events: readonly TaskFact[]): TaskState | null {
  let s: TaskState | null = null;
  for (const e of events) s = evolveTask(s, e);
  return s;
}

/** `task:<id>`. */
export function taskStream(id: string): string {
  return `task:${id}`;
}

/** Every task of a log (deleted ones included), by id, in creation order. */
export function foldTasks(events: Iterable<AnyEnvelope>): Map<string, TaskState> {
  const byId = new Map<string, TaskState>();
  for (const e of events) {
    if (!e.stream.startsWith('task:')) continue;
    const id = e.stream.slice('task:'.length);
    const next = evolveTask(byId.get(id) ?? null, e);
    if (next) byId.set(id, next);
  }
  return byId;
}
