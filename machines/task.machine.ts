import { emit, enqueueActions, setup } from 'xstate';
import { TASK_EVENTS, type Fact } from '../schemas/index.js';
import { evolveTask, resumable, type TaskCreated, type TaskState } from './task.logic.js';

/** What a run reports when it ends: the provider, model and session it ran with (null when it never started). */
interface RunEnd {
  provider: string | null;
  model: string | null;
  session_id: string | null;
  now: number;
}

export type TaskMachineEvent =
  | { type: 'ask'; question: string; now: number }
  | { type: 'answer'; answer: string; now: number }
  /** `found`: the conversation to continue when the task's facts lack it (see `task.resumed`). */
  | { type: 'resume'; prompt: string; now: number; found?: { provider: string; session_id: string } }
  | ({ type: 'complete'; result: string } & RunEnd)
  | ({ type: 'fail'; reason: string; result: string } & RunEnd)
  | { type: 'cancel'; now: number }
  | { type: 'delete'; now: number };

/** The fact each accepted event is recorded as: the machine emits it and folds it into its context. */
function factOf(e: TaskMachineEvent): Fact {
  switch (e.type) {
    case 'ask':
      return { type: TASK_EVENTS.question_asked, data: { question: e.question, at: e.now } };
    case 'answer':
      return { type: TASK_EVENTS.answered, data: { answer: e.answer, at: e.now } };
    case 'resume':
      return { type: TASK_EVENTS.resumed, data: { prompt: e.prompt, at: e.now, ...(e.found ? { provider: e.found.provider, session_id: e.found.session_id } : {}) } };
    case 'complete':
      return { type: TASK_EVENTS.completed, data: { result: e.result, provider: e.provider, model: e.model, session_id: e.session_id, at: e.now } };
    case 'fail':
      return { type: TASK_EVENTS.failed, data: { reason: e.reason, result: e.result, provider: e.provider, model: e.model, session_id: e.session_id, at: e.now } };
    case 'cancel':
      return { type: TASK_EVENTS.cancelled, data: { at: e.now } };
    case 'delete':
      return { type: TASK_EVENTS.deleted, data: { at: e.now } };
  }
}

/**
 * One delegated task (SPEC.md "Task status"): running → waiting (ask_parent) → running (answer),
 * ending done, failed or cancelled; a resume (from a finished state, or from waiting once the
 * asking run is gone) runs it again in the same folder and provider session; only a finished task
 * may be deleted. Pure: the run, its CLI and the clock belong to the task hub, which tells the
 * machine what happened.
 */
/** What a running task may do next, whether it was just created (`running`) or answered or resumed (`working`). */
const WHILE_RUNNING = {
  ask: { target: 'waiting', actions: 'record' },
  complete: { target: 'done', actions: 'record' },
  fail: { target: 'failed', actions: 'record' },
  cancel: { target: 'cancelled', actions: 'record' },
} as const;

export const taskMachine = setup({
  types: {
    context: {} as TaskState,
    input: {} as TaskCreated,
    events: {} as TaskMachineEvent,
    emitted: {} as Fact,
  },
  guards: {
    resumable: ({ context, event }) => event.type === 'resume' && (resumable(context) || (event.found !== undefined && context.status !== 'running')),
  },
  actions: {
    /** The event as its fact: emitted for the log, and folded into the context as the log is folded. */
    record: enqueueActions(({ context, event, enqueue }) => {
      const fact = factOf(event);
      enqueue.emit(fact);
      enqueue.assign(evolveTask(context, fact)!);
    }),
  },
}).createMachine({
  id: 'task',
  initial: 'running',
  context: ({ input }) => evolveTask(null, { type: TASK_EVENTS.created, data: input })!,
  states: {
    running: {
      entry: emit(({ context }) => ({ type: TASK_EVENTS.created, data: createdOf(context) })),
      on: WHILE_RUNNING,
    },
    // Re-entered after an answer or a resume: unlike `running`, nothing is created again.
    working: {
      on: WHILE_RUNNING,
    },
    waiting: {
      on: {
        answer: { target: 'working', actions: 'record' },
        resume: { guard: 'resumable', target: 'working', actions: 'record' },
        // The asking run ended on its own (its deadline, an error) before the parent answered.
        complete: { target: 'done', actions: 'record' },
        fail: { target: 'failed', actions: 'record' },
        cancel: { target: 'cancelled', actions: 'record' },
      },
    },
    done: { on: { resume: { guard: 'resumable', target: 'working', actions: 'record' }, delete: { target: 'deleted', actions: 'record' } } },
    failed: { on: { resume: { guard: 'resumable', target: 'working', actions: 'record' }, delete: { target: 'deleted', actions: 'record' } } },
    cancelled: { on: { resume: { guard: 'resumable', target: 'working', actions: 'record' }, delete: { target: 'deleted', actions: 'record' } } },
    deleted: { type: 'final' },
  },
});

/** The `task.created` payload a folded record was made from: what a restored task actor starts with. */
export function createdOf(s: TaskState): TaskCreated {
  const { task_id, name, parent_agent, agent, transport, chat_id, topic_id, caller_user, caller_role, prompt, provider, model, created_at } = s;
  return { task_id, name, parent_agent, agent, transport, chat_id, topic_id, caller_user, ...(caller_role ? { caller_role } : {}), prompt, provider, model, created_at };
}

/** The machine state a folded record resumes in (`running` restores as `working`: it was created long ago). */
export function taskMachineState(s: TaskState): { value: string; context: TaskState } | null {
  if (s.deleted) return null;
  return { value: s.status === 'running' ? 'working' : s.status, context: s };
}
