import { enqueueActions, setup } from 'xstate';
import type { Fact } from '../schemas/index.js';
import { decideWorkflowRun, foldWorkflowRun, isActiveRun, runTimers, type WorkflowRunInput, type WorkflowRunStart, type WorkflowRunState } from './workflow-run.logic.js';

export interface WorkflowRunContext {
  /** What the run was created with; read by `start` only (a restored run has it from its first fact). */
  start: WorkflowRunStart;
  run: WorkflowRunState | null;
}

const routes = [
  { guard: 'isRunning', target: 'running' },
  { guard: 'isWaiting', target: 'waiting' },
  { guard: 'isCompleted', target: 'completed' },
  { guard: 'isFailed', target: 'failed' },
  { guard: 'isCancelled', target: 'cancelled' },
] as const;
const routesExcept = (status: string) => routes.filter((r) => r.target !== status);

/**
 * One workflow run on its `run:<id>` stream. Each input goes through the run's decider
 * (workflow-run.logic.ts), whose facts are emitted and folded into the context; the state value
 * follows the run's status (SPEC.md "Workflow run": running, waiting, completed, failed, cancelled).
 * The engine performs the steps the facts start and reports back. Step timeouts and retry delays
 * are this machine's delayed events (on the clock the host gives it), one per timer `runTimers`
 * names, keyed by it: each decision cancels the timers its state no longer names and arms the new
 * ones, so a timer lives exactly as long as the state that calls for it. A restored actor has none
 * (xstate does not keep them in a state rebuilt from facts): `resume` arms them all again.
 */
export const workflowRunMachine = setup({
  types: {
    context: {} as WorkflowRunContext,
    input: {} as WorkflowRunStart,
    events: {} as WorkflowRunInput,
    emitted: {} as Fact,
  },
  guards: {
    isRunning: ({ context }) => context.run?.status === 'running',
    isWaiting: ({ context }) => context.run?.status === 'waiting',
    isCompleted: ({ context }) => context.run?.status === 'completed',
    isFailed: ({ context }) => context.run?.status === 'failed',
    isCancelled: ({ context }) => context.run?.status === 'cancelled',
  },
  actions: {
    decide: enqueueActions(({ context, event, enqueue }) => {
      const { state, facts } = decideWorkflowRun(context.run, context.start, event);
      if (facts.length === 0) return;
      enqueue.assign({ run: state });
      for (const fact of facts) enqueue.emit(fact);
      const rearm = event.type === 'resume';
      const before = new Set(context.run ? runTimers(context.run).map((timer) => timer.key) : []);
      const after = state ? runTimers(state) : [];
      const kept = new Set(after.map((timer) => timer.key));
      for (const key of before) if (rearm || !kept.has(key)) enqueue.cancel(key);
      for (const timer of after) {
        if (!rearm && before.has(timer.key)) continue;
        enqueue.raise(timer.input(timer.at), { id: timer.key, delay: Math.max(0, timer.at - event.now) });
      }
    }),
  },
}).createMachine({
  id: 'workflow-run',
  initial: 'pending',
  context: ({ input }) => ({ start: input, run: null }),
  states: {
    pending: { on: { start: { actions: 'decide' } }, always: routes.slice() },
    running: { on: { '*': { actions: 'decide' } }, always: routesExcept('running') },
    waiting: { on: { '*': { actions: 'decide' } }, always: routesExcept('waiting') },
    completed: { type: 'final' },
    failed: { type: 'final' },
    cancelled: { type: 'final' },
  },
});

/** What a run's stream reads for a restore: its own facts. */
export function restoreWorkflowRun(events: Parameters<typeof foldWorkflowRun>[0]): { value: 'running' | 'waiting'; context: WorkflowRunContext } | null {
  const run = foldWorkflowRun(events);
  if (!run || !isActiveRun(run.status)) return null;
  const { workflow_id: _w, status: _s, current: _c, steps: _st, outputs: _o, executions: _e, error: _er, started_at: _sa, ended_at: _ea, ...start } = run;
  return { value: run.status as 'running' | 'waiting', context: { start, run } };
}
