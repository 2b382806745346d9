import * as v from 'valibot';
import {
  DEFAULT_RETRY,
  MAX_STATUS_OUTPUT_CHARS,
  MAX_WORKFLOW_STEPS,
  RunDefinitionSchema,
  WORKFLOW_RUN_EVENTS,
  stepTimeoutSeconds,
  type AnyEnvelope,
  type EventPayload,
  type Fact,
  type Json,
  type ParallelBranchStep,
  type Principal,
  type WorkflowDefinition,
  type WorkflowRunStatus,
  type WorkflowRunRecordedInput,
  type WorkflowRunView,
  type WorkflowStep,
  type WorkflowStepStatus,
} from '../schemas/index.js';
import { describeExpressionError, evaluateWorkflowCondition } from './workflow-expression.logic.js';
import { substituteWorkflowText } from './workflow-vars.logic.js';

/*
 * The rules of one workflow run (SPEC.md "Workflow run"), as a decider: `decideWorkflowRun(state,
 * input)` gives the facts an input causes, `evolveWorkflowRun(state, fact)` folds one fact in. The
 * live machine and a restart share `evolve`, so a run rebuilt from its stream is the run that wrote it.
 *
 * What the engine does and what is decided here: the engine performs a step (asks the agent,
 * delivers the message) when a `step_started` fact says so, and reports back (`step.done`,
 * `step.failed`). The timers the state names (`deadline_ms`, `retry_at`) are the machine's own
 * delays (`runTimers`), whose firing (`step.timeout`, `retry.due`) carries the moment they were due,
 * so a fire is decided from the state alone. Everything else — which step is next, what an error
 * leads to, when the run ends — is decided here, from the inputs alone.
 *
 * Every input from outside that changes the run is written first as `workflow.input_received`, so
 * replay re-drives the run from the log without rebuilding inputs from their facts. A `resume` (the
 * engine brought the run back after a restart) is always written: the timers died with the old
 * process, and the ones already past due fire at once, in the resume's own decision, at its time.
 *
 * Decisions where SPEC.md is silent:
 * - Sequence: after a step comes its `goto`, else the next step in the file; after the last, the
 *   run is `completed`. A condition goes to `then`/`else`, a missing one meaning the next step; its
 *   output is "true" or "false".
 * - on_error `skip` continues with the next step in the file (not the step's goto, which SPEC ties
 *   to completion); `fallback` marks the step failed and goes to `fallback.goto`; `retry` runs the
 *   step again up to `max_attempts` attempts in all, `delay_seconds` apart, then aborts the run.
 * - Parallel fails fast: a branch that fails for good (abort, or retries used up) stops its
 *   siblings at once (their requests are aborted, they are recorded `skipped`), and the parallel
 *   step fails with that branch's error; the parallel step's own on_error then applies (a retry
 *   runs every branch again). A skipped branch counts as settled. The parallel step's output is
 *   empty: each branch's output is addressable on its own.
 * - Cap on step executions: every attempt of every step, branches included, counts one; a run
 *   reaching MAX_STEP_EXECUTIONS fails (`the run reached its cap ...`). This is what bounds goto
 *   loops: a loop that polls (ask, condition, goto back) may legitimately go round a few times, so
 *   the cap is ten times the most steps a file may hold — every step of the largest workflow may
 *   run ten times over — while a runaway loop stops after minutes, not after burning agent turns
 *   and log space for ever.
 * - A substituted prompt or message over MAX_STEP_TEXT_CHARS, or a condition that cannot be
 *   evaluated (a bare unknown variable), is an error of that step, handled by its on_error.
 */

/** Ten visits of every step of the largest workflow a file may hold (see above). */
export const MAX_STEP_EXECUTIONS = MAX_WORKFLOW_STEPS * 10;
/** A prompt or message once references are filled in: what one CLI prompt or chat message may carry. */
export const MAX_STEP_TEXT_CHARS = 256 * 1024;
/** What a run keeps of one step's output (an agent's answer, a reply): the rest is cut with a note. */
export const MAX_STEP_OUTPUT_CHARS = 256 * 1024;

export interface WorkflowRunStart {
  run_id: string;
  definition: WorkflowDefinition;
  variables: Record<string, string>;
  transport: string;
  chat_id: number;
  topic_id: number | null;
  principal: Principal;
  max_step_executions: number;
  default_step_timeout: number;
}

export interface StepRecord {
  status: WorkflowStepStatus;
  /** The parallel step a branch belongs to. */
  parent: string | null;
  /** Attempts made in the current visit of the step. */
  attempts: number;
  /** The run's execution number of the latest attempt (0: never started). */
  n: number;
  error: string | null;
  /** When the running attempt times out (epoch ms). */
  deadline_ms: number | null;
  /** When the scheduled retry is due (epoch ms), while the step waits for it. */
  retry_at: number | null;
  /** The substituted prompt or message of the latest attempt. */
  text: string | null;
}

export interface WorkflowRunState extends WorkflowRunStart {
  workflow_id: string;
  status: WorkflowRunStatus;
  /** The top-level step the run is at. */
  current: string | null;
  steps: Record<string, StepRecord>;
  outputs: Record<string, string>;
  executions: number;
  error: string | null;
  started_at: number;
  ended_at: number | null;
}

export type WorkflowRunInput =
  | { type: 'start'; now: number }
  | { type: 'step.done'; step: string; n: number; output: string; now: number }
  /** `interrupted`: a restart cut the step off (the engine's choice for a step it cannot resume). */
  | { type: 'step.failed'; step: string; n: number; error: string; reason?: 'error' | 'interrupted'; now: number }
  | { type: 'step.timeout'; step: string; n: number; now: number }
  | { type: 'retry.due'; step: string; attempt: number; now: number }
  | { type: 'reply'; text: string; now: number }
  | { type: 'cancel'; by: string | null; now: number }
  /** The run came back after a restart; timers due meanwhile fire now. */
  | { type: 'resume'; now: number };

type RunFact = Fact<(typeof WORKFLOW_RUN_EVENTS)[keyof typeof WORKFLOW_RUN_EVENTS]>;

/** The input as the journal records it (its time is the fact's `at_ms`); null for the machine's own timers and the start. */
export function recordedInput(input: WorkflowRunInput): WorkflowRunRecordedInput | null {
  switch (input.type) {
    case 'step.done':
      return { type: input.type, step: input.step, n: input.n, output: boundOutput(input.output) };
    case 'step.failed':
      return { type: input.type, step: input.step, n: input.n, error: input.error, reason: input.reason ?? 'error' };
    case 'reply':
      return { type: input.type, text: boundOutput(input.text) };
    case 'cancel':
      return { type: input.type, by: input.by };
    case 'resume':
      return { type: input.type };
    default:
      return null;
  }
}

/** The input a journal entry records, at the time it was handed over. */
export function inputOfRecord(input: WorkflowRunRecordedInput, now: number): WorkflowRunInput {
  return { ...input, now };
}

export const ACTIVE_RUN_STATUSES: readonly WorkflowRunStatus[] = ['running', 'waiting'];
export const isActiveRun = (status: WorkflowRunStatus): boolean => ACTIVE_RUN_STATUSES.includes(status);

type AnyStep = WorkflowStep | ParallelBranchStep;

/** Every step by id, branches included, with its parallel parent. */
export function workflowSteps(def: WorkflowDefinition): Map<string, { step: AnyStep; parent: string | null; index: number | null }> {
  const out = new Map<string, { step: AnyStep; parent: string | null; index: number | null }>();
  def.steps.forEach((s, i) => {
    out.set(s.id, { step: s, parent: null, index: i });
    if (s.type === 'parallel') for (const b of s.steps) out.set(b.id, { step: b, parent: s.id, index: null });
  });
  return out;
}

/** JSON for a fact: the definition's optional fields absent instead of undefined. */
function asJson(value: unknown): Json {
  return JSON.parse(JSON.stringify(value)) as Json;
}

/** Cuts an output to MAX_STEP_OUTPUT_CHARS, saying so. */
export function boundOutput(text: string): string {
  if (text.length <= MAX_STEP_OUTPUT_CHARS) return text;
  return `${text.slice(0, MAX_STEP_OUTPUT_CHARS)}\n[cut: the output was ${text.length} characters; a run keeps ${MAX_STEP_OUTPUT_CHARS}]`;
}

// ---------------------------------------------------------------- evolve

/** Folds one fact of a run's stream into its state; facts of other types leave it as it was. */
export function evolveWorkflowRun(state: WorkflowRunState | null, fact: { type: string; data: unknown }): WorkflowRunState | null {
  if (fact.type === WORKFLOW_RUN_EVENTS.run_started) {
    const d = fact.data as EventPayload<typeof WORKFLOW_RUN_EVENTS.run_started>;
    const definition = v.parse(RunDefinitionSchema, d.definition) as WorkflowDefinition;
    const steps: Record<string, StepRecord> = {};
    for (const [id, { parent }] of workflowSteps(definition)) {
      steps[id] = { status: 'pending', parent, attempts: 0, n: 0, error: null, deadline_ms: null, retry_at: null, text: null };
    }
    return {
      run_id: d.run_id,
      workflow_id: d.workflow_id,
      definition,
      variables: { ...d.variables },
      transport: d.transport,
      chat_id: d.chat_id,
      topic_id: d.topic_id,
      principal: d.principal,
      max_step_executions: d.max_step_executions,
      default_step_timeout: d.default_step_timeout,
      status: 'running',
      current: null,
      steps,
      outputs: {},
      executions: 0,
      error: null,
      started_at: d.at_ms,
      ended_at: null,
    };
  }
  if (!state) return state;
  const step = (id: string, patch: Partial<StepRecord>): Record<string, StepRecord> => ({ ...state.steps, [id]: { ...state.steps[id]!, ...patch } });
  switch (fact.type) {
    case WORKFLOW_RUN_EVENTS.step_started: {
      const d = fact.data as EventPayload<typeof WORKFLOW_RUN_EVENTS.step_started>;
      const waits = stepType(state, d.step) === 'wait_for_reply';
      return {
        ...state,
        executions: Math.max(state.executions, d.n),
        current: d.parent === null ? d.step : state.current,
        status: waits ? 'waiting' : state.status,
        steps: step(d.step, { status: waits ? 'waiting' : 'running', attempts: d.attempt, n: d.n, error: null, deadline_ms: d.deadline_ms, retry_at: null, text: d.text }),
      };
    }
    case WORKFLOW_RUN_EVENTS.step_completed: {
      const d = fact.data as EventPayload<typeof WORKFLOW_RUN_EVENTS.step_completed>;
      return { ...state, status: 'running', outputs: { ...state.outputs, [d.step]: d.output }, steps: step(d.step, { status: 'completed', deadline_ms: null }) };
    }
    case WORKFLOW_RUN_EVENTS.step_failed: {
      const d = fact.data as EventPayload<typeof WORKFLOW_RUN_EVENTS.step_failed>;
      return { ...state, status: 'running', steps: step(d.step, { status: 'failed', error: d.error, deadline_ms: null }) };
    }
    case WORKFLOW_RUN_EVENTS.step_retry_scheduled: {
      const d = fact.data as EventPayload<typeof WORKFLOW_RUN_EVENTS.step_retry_scheduled>;
      return { ...state, steps: step(d.step, { status: 'pending', retry_at: d.due_ms }) };
    }
    case WORKFLOW_RUN_EVENTS.step_skipped: {
      const d = fact.data as EventPayload<typeof WORKFLOW_RUN_EVENTS.step_skipped>;
      return { ...state, steps: step(d.step, { status: 'skipped', error: d.reason, deadline_ms: null, retry_at: null }) };
    }
    case WORKFLOW_RUN_EVENTS.run_completed:
      return { ...state, status: 'completed', current: null, ended_at: (fact.data as { at_ms: number }).at_ms };
    case WORKFLOW_RUN_EVENTS.run_failed: {
      const d = fact.data as EventPayload<typeof WORKFLOW_RUN_EVENTS.run_failed>;
      return { ...state, status: 'failed', error: d.error, ended_at: d.at_ms };
    }
    case WORKFLOW_RUN_EVENTS.run_cancelled:
      return { ...state, status: 'cancelled', ended_at: (fact.data as { at_ms: number }).at_ms };
    default:
      return state;
  }
}

/** A run's stream folded; null when it holds no start. */
export function foldWorkflowRun(events: readonly Pick<AnyEnvelope, 'type' | 'data'>[]): WorkflowRunState | null {
  let state: WorkflowRunState | null = null;
  for (const e of events) state = evolveWorkflowRun(state, e);
  return state;
}

function stepType(state: Pick<WorkflowRunState, 'definition'>, id: string): AnyStep['type'] | undefined {
  return findStep(state.definition, id)?.type;
}

function findStep(def: WorkflowDefinition, id: string): AnyStep | undefined {
  for (const s of def.steps) {
    if (s.id === id) return s;
    if (s.type === 'parallel') for (const b of s.steps) if (b.id === id) return b;
  }
  return undefined;
}

// ---------------------------------------------------------------- decide

/**
 * The facts `input` causes in a run (none when it does not apply: a late answer, a reply while not
 * waiting, anything after the run ended), and the state they lead to. `start` is the input the
 * run's machine was created with; only the `start` input reads it.
 */
export function decideWorkflowRun(
  current: WorkflowRunState | null,
  start: WorkflowRunStart,
  input: WorkflowRunInput,
): { state: WorkflowRunState | null; facts: RunFact[] } {
  let state = current;
  const facts: RunFact[] = [];
  const now = input.now;
  const push = (fact: RunFact) => {
    facts.push(fact);
    state = evolveWorkflowRun(state, fact);
  };
  const run = () => state!;
  const active = () => state !== null && isActiveRun(state.status);

  const nextInFile = (id: string): string | null => run().definition.steps[run().definition.steps.findIndex((s) => s.id === id) + 1]?.id ?? null;

  const advance = (next: string | null): void => {
    if (!active()) return;
    if (next === null) push({ type: WORKFLOW_RUN_EVENTS.run_completed, data: { at_ms: now } });
    else startStep(next, 1);
  };

  const startStep = (id: string, attempt: number): void => {
    if (!active()) return;
    const step = findStep(run().definition, id)!;
    const rec = run().steps[id]!;
    if (run().executions >= run().max_step_executions) {
      push({
        type: WORKFLOW_RUN_EVENTS.run_failed,
        data: { step: id, error: `the run reached its cap of ${run().max_step_executions} step executions (a goto loop that never ends?)`, at_ms: now },
      });
      return;
    }
    const n = run().executions + 1;
    const timeout = stepTimeoutSeconds(step, { default_step_timeout: run().default_step_timeout });
    const scope = { variables: run().variables, outputs: run().outputs };
    let text: string | null = null;
    let problem: string | null = null;
    if (step.type === 'ask_agent' || step.type === 'notify' || step.type === 'wait_for_reply') {
      const r = substituteWorkflowText(step.type === 'ask_agent' ? step.prompt : step.message, scope, MAX_STEP_TEXT_CHARS);
      if (r.ok) text = r.text;
      else problem = r.error;
    }
    push({
      type: WORKFLOW_RUN_EVENTS.step_started,
      data: { step: id, n, attempt, parent: rec.parent, text, deadline_ms: timeout === null ? null : now + timeout * 1000, at_ms: now },
    });
    if (problem !== null) return failStep(id, n, 'error', problem);
    if (step.type === 'condition') {
      const r = evaluateWorkflowCondition(step.if, scope);
      if (!r.ok) return failStep(id, n, 'error', `condition "${step.if}": ${describeExpressionError(r.error)}`);
      push({ type: WORKFLOW_RUN_EVENTS.step_completed, data: { step: id, n, output: String(r.value), at_ms: now } });
      return advance((r.value ? step.then : step.else) ?? nextInFile(id));
    }
    if (step.type === 'parallel') for (const b of step.steps) startStep(b.id, 1);
  };

  const completeStep = (id: string, n: number, output: string): void => {
    push({ type: WORKFLOW_RUN_EVENTS.step_completed, data: { step: id, n, output, at_ms: now } });
    settled(id);
  };

  /** A step completed or was skipped: its parallel block may be done, or the run moves on. */
  const settled = (id: string, skipped = false): void => {
    const { parent } = run().steps[id]!;
    if (parent !== null) return parallelSettled(parent);
    const step = findStep(run().definition, id)!;
    advance(skipped || !('goto' in step) || step.goto === undefined ? nextInFile(id) : step.goto);
  };

  const parallelSettled = (pid: string): void => {
    const par = findStep(run().definition, pid);
    const rec = run().steps[pid]!;
    if (par?.type !== 'parallel' || rec.status !== 'running') return;
    if (par.steps.every((b) => ['completed', 'skipped'].includes(run().steps[b.id]!.status))) completeStep(pid, rec.n, '');
  };

  const failStep = (id: string, n: number, reason: 'error' | 'timeout' | 'interrupted', error: string): void => {
    const step = findStep(run().definition, id)!;
    // The failure first, then what it stops: replay sends the input when it meets the failure's fact.
    push({ type: WORKFLOW_RUN_EVENTS.step_failed, data: { step: id, n, reason, error, at_ms: now } });
    if (step.type === 'parallel') stopBranches(step.steps.map((b) => b.id), `stopped: the parallel step ${id} failed (${error})`);
    const rec = run().steps[id]!;
    switch (step.on_error) {
      case 'retry': {
        const retry = step.retry ?? DEFAULT_RETRY;
        if (rec.attempts >= retry.max_attempts) break;
        if (retry.delay_seconds === 0) return startStep(id, rec.attempts + 1);
        push({ type: WORKFLOW_RUN_EVENTS.step_retry_scheduled, data: { step: id, attempt: rec.attempts + 1, due_ms: now + retry.delay_seconds * 1000, at_ms: now } });
        return;
      }
      case 'skip':
        push({ type: WORKFLOW_RUN_EVENTS.step_skipped, data: { step: id, n, reason: `skipped after an error: ${error}`, at_ms: now } });
        return settled(id, true);
      case 'fallback':
        if (step.fallback) return advance(step.fallback.goto);
        break;
      default:
        break;
    }
    const attempts = step.on_error === 'retry' ? ` (after ${rec.attempts} attempts)` : '';
    if (rec.parent !== null) {
      const parent = run().steps[rec.parent]!;
      if (parent.status !== 'running') return;
      // Failing the parallel step stops the siblings still running (fail fast, see above).
      return failStep(rec.parent, parent.n, 'error', `branch ${id} failed${attempts}: ${error}`);
    }
    push({ type: WORKFLOW_RUN_EVENTS.run_failed, data: { step: id, error: `step ${id} failed${attempts}: ${error}`, at_ms: now } });
  };

  /** Branches still running or waiting for a retry are stopped; settled ones keep their status. */
  const stopBranches = (ids: string[], reason: string) => {
    for (const b of ids) {
      const r = run().steps[b]!;
      if (r.status === 'running' || r.status === 'waiting' || (r.status === 'pending' && r.retry_at !== null)) {
        push({ type: WORKFLOW_RUN_EVENTS.step_skipped, data: { step: b, n: r.n, reason, at_ms: now } });
      }
    }
  };

  /** The step's attempt `n` is the one running (or waiting): otherwise the input is about an earlier one. */
  const live = (id: string, n: number): boolean => {
    const r = state?.steps[id];
    return active() && r !== undefined && r.n === n && (r.status === 'running' || r.status === 'waiting');
  };

  const timedOut = (id: string, n: number): void => {
    if (!live(id, n)) return;
    const limit = stepTimeoutSeconds(findStep(run().definition, id)!, { default_step_timeout: run().default_step_timeout });
    failStep(id, n, 'timeout', `timed out after ${limit ?? 0} s`);
  };

  const retryDue = (id: string, attempt: number): void => {
    const r = state?.steps[id];
    if (!active() || !r || r.status !== 'pending' || r.retry_at === null || attempt !== r.attempts + 1) return;
    startStep(id, attempt);
  };

  const wasActive = active();
  switch (input.type) {
    case 'start': {
      if (state !== null) break;
      push({
        type: WORKFLOW_RUN_EVENTS.run_started,
        data: {
          run_id: start.run_id,
          workflow_id: start.definition.id,
          definition: asJson(start.definition),
          variables: start.variables,
          transport: start.transport,
          chat_id: start.chat_id,
          topic_id: start.topic_id,
          principal: start.principal,
          max_step_executions: start.max_step_executions,
          default_step_timeout: start.default_step_timeout,
          at_ms: now,
        },
      });
      startStep(run().definition.steps[0]!.id, 1);
      break;
    }
    case 'step.done': {
      const type = state && stepType(state, input.step);
      // A parallel step completes through its branches, a wait through the reply.
      if (!live(input.step, input.n) || type === 'parallel' || type === 'wait_for_reply' || type === 'condition') break;
      completeStep(input.step, input.n, boundOutput(input.output));
      break;
    }
    case 'step.failed':
      if (!live(input.step, input.n)) break;
      failStep(input.step, input.n, input.reason ?? 'error', input.error);
      break;
    case 'step.timeout':
      timedOut(input.step, input.n);
      break;
    case 'retry.due':
      retryDue(input.step, input.attempt);
      break;
    case 'resume': {
      if (!active()) break;
      // Due while no process was running: each fires now, earliest first, if it still applies.
      const due = runTimers(run()).filter((timer) => timer.at <= now).sort((a, b) => a.at - b.at);
      for (const timer of due) {
        const fire = timer.input(now);
        if (fire.type === 'step.timeout') timedOut(fire.step, fire.n);
        else if (fire.type === 'retry.due') retryDue(fire.step, fire.attempt);
      }
      break;
    }
    case 'reply': {
      if (state === null || state.status !== 'waiting' || state.current === null) break;
      const r = state.steps[state.current]!;
      if (r.status !== 'waiting') break;
      completeStep(state.current, r.n, boundOutput(input.text));
      break;
    }
    case 'cancel':
      if (!active()) break;
      push({ type: WORKFLOW_RUN_EVENTS.run_cancelled, data: { by: input.by, at_ms: now } });
      break;
  }
  const recorded = recordedInput(input);
  if (recorded !== null && (facts.length > 0 || (input.type === 'resume' && wasActive))) {
    facts.unshift({ type: WORKFLOW_RUN_EVENTS.input_received, data: { input: recorded, at_ms: now } });
  }
  return { state, facts };
}

// ---------------------------------------------------------------- views

/** What a step's effect needs, for each attempt the engine has to perform now. */
export interface DueEffect {
  step: string;
  n: number;
  parent: string | null;
  type: 'ask_agent' | 'notify' | 'wait_for_reply';
  text: string;
}

/** The step attempts that are running (or waiting, for their message) and need the engine. */
export function runningEffects(state: WorkflowRunState): DueEffect[] {
  if (!isActiveRun(state.status)) return [];
  const out: DueEffect[] = [];
  for (const [id, r] of Object.entries(state.steps)) {
    if ((r.status !== 'running' && r.status !== 'waiting') || r.text === null) continue;
    const type = stepType(state, id);
    if (type === 'ask_agent' || type === 'notify' || type === 'wait_for_reply') out.push({ step: id, n: r.n, parent: r.parent, type, text: r.text });
  }
  return out;
}

/** The machine's timers while the run is in this state: step deadlines and retries due, each firing with the moment it was due. */
export function runTimers(state: WorkflowRunState): Array<{ key: string; at: number; input: (now: number) => WorkflowRunInput }> {
  if (!isActiveRun(state.status)) return [];
  const out: Array<{ key: string; at: number; input: (now: number) => WorkflowRunInput }> = [];
  for (const [id, r] of Object.entries(state.steps)) {
    if ((r.status === 'running' || r.status === 'waiting') && r.deadline_ms !== null) {
      out.push({ key: `timeout:${id}:${r.n}`, at: r.deadline_ms, input: (now) => ({ type: 'step.timeout', step: id, n: r.n, now }) });
    } else if (r.status === 'pending' && r.retry_at !== null) {
      const attempt = r.attempts + 1;
      out.push({ key: `retry:${id}:${attempt}:${r.n}`, at: r.retry_at, input: (now) => ({ type: 'retry.due', step: id, attempt, now }) });
    }
  }
  return out;
}

const iso = (ms: number) => new Date(ms).toISOString();

function bounded(text: string | undefined): { output: string | null; output_truncated: boolean } {
  if (text === undefined) return { output: null, output_truncated: false };
  return text.length > MAX_STATUS_OUTPUT_CHARS ? { output: text.slice(0, MAX_STATUS_OUTPUT_CHARS), output_truncated: true } : { output: text, output_truncated: false };
}

/** The run as `/workflows/status` and `/workflow status` show it, outputs bounded. */
export function workflowRunView(state: WorkflowRunState): WorkflowRunView {
  return {
    run_id: state.run_id,
    workflow_id: state.workflow_id,
    name: state.definition.name,
    status: state.status,
    transport: state.transport,
    chat_id: state.chat_id,
    topic_id: state.topic_id,
    current_step: state.current,
    error: state.error,
    started_at: iso(state.started_at),
    ended_at: state.ended_at === null ? null : iso(state.ended_at),
    step_executions: state.executions,
    steps: [...workflowSteps(state.definition)].map(([id, { step, parent }]) => {
      const r = state.steps[id]!;
      return { id, type: step.type, parent, status: r.status, attempts: r.attempts, error: r.error, ...bounded(state.outputs[id]) };
    }),
  };
}
