// Longer than 450 lines because it is one driver: the four commands, the reply interceptor and the
// effects all act on the same live runs and their in-flight requests; the rules are the run machine's.
import { randomUUID } from 'node:crypto';
import type { Subscription } from 'rxjs';
import { REAL_CLOCK, type Bus } from '../../bus/index.js';
import {
  MAX_STEP_EXECUTIONS,
  foldWorkflowRun,
  isActiveRun,
  runningEffects,
  unrestricted,
  workflowRunMachine,
  workflowRunView,
  workflowSteps,
  type DueEffect,
  type WorkflowRunInput,
  type WorkflowRunStart,
  type WorkflowRunState,
} from '../../machines/index.js';
import {
  CHAT_DELIVERY_COMMANDS,
  MAX_LISTED_RUNS,
  SvcError,
  WORKFLOW_COMMANDS,
  WORKFLOW_DEFINITIONS_STREAM,
  WORKFLOW_DEFINITION_EVENTS,
  describeError,
  workflowRunStream,
  type AgentMessage,
  type AnyEnvelope,
  type CommandData,
  type CommandReply,
  type Principal,
  type WorkflowConfig,
  type WorkflowDefinition,
  type WorkflowDefinitionView,
} from '../../schemas/index.js';
import type { EventLog, WorkflowDefinitions, WorkflowLoadError } from '../../store/index.js';
import type { ActorClock, ActorHost } from '../host/actor-host.js';
import { watchWorkflowDefinitions } from './workflow-definitions-watcher.js';
import { mayChange, mayUse, visibleTo } from './workflow-access.js';
import { askAgentStep } from './workflow-agent-step.js';

/*
 * The workflow engine (SPEC.md "Workflow definition", "Workflow run"): definitions from
 * workflows/*.yaml, kept current by a watcher; one `workflowRunMachine` actor per active run on its
 * `run:<id>` stream; and the side effects the run's facts call for.
 *
 * Decisions where SPEC.md is silent:
 * - `max_parallel_runs` counts running and waiting runs; a run beyond it is refused (`too-many-runs`),
 *   not queued: a queued run would start at a moment nobody chose, in a chat that moved on.
 * - `enabled: false` refuses new runs; runs already going finish (cancel them to stop them).
 * - A run keeps the definition it started with (it is in its first fact): a reload, an edit or a
 *   deletion of the file changes only runs started afterwards.
 * - Variable overrides must name variables the definition declares, so a typo is refused instead of
 *   silently ignored.
 * - ask_agent runs on transport `workflow` in a chat of the run's own (a hash of the run id; a
 *   parallel branch gets one per branch, so branches run side by side and a branch's timeout aborts
 *   only its own request). `new_session: false` therefore continues the agent's conversation of
 *   earlier steps of the same run, never the user's chat. It asks with the rights of whoever started
 *   the run. `model` rides as the message's `@model` directive; `provider` must agree with it (or,
 *   alone, with the agent's own provider): the contract has no other way to pick one.
 * - After a restart: a waiting run keeps waiting (its message is not sent again); a notify that was
 *   being delivered is delivered again (at least once); an ask_agent that was running fails with
 *   reason `interrupted` and its on_error decides (retry asks again, abort fails the run). The CLI
 *   process died with the old daemon, and asking again behind the user's back could run a
 *   non-idempotent prompt twice unless the workflow said retry. A step timeout or a retry delay keeps
 *   its moment: the resumed run machine arms it for the time left, and one that passed while svc
 *   was down fires at once.
 */

/** Finished runs kept in memory for `runs` and `status`; older ones are read back from the log. */
const RECENT_FINISHED = 200;
/** Characters of a variable's default a listing shows. */
const MAX_LISTED_VALUE_CHARS = 200;

export interface WorkflowEngineDeps {
  bus: Bus;
  host: ActorHost;
  log: EventLog;
  /** The workflows directory (watched unless `watch` is false). */
  dir: string;
  /** `loadWorkflowDefinitions(dir, {checkExpression})`, bound by the composition root. */
  load(): WorkflowDefinitions;
  config(): WorkflowConfig;
  /** Drives the run machines' step timeouts and retry delays; tests pass a SimulatedClock. */
  clock?: ActorClock;
  /** Epoch ms; the clock's own when it is simulated. */
  now?(): number;
  newId?(): string;
  watch?: boolean;
}

interface Inflight {
  /** Ends the request; absent when there is nothing to end (a delivered message). */
  abort?(): void;
  /** The engine ended it: its late outcome is not reported. */
  ended: boolean;
}

interface LiveRun {
  id: string;
  actorId: string;
  correlation: string;
  inflight: Map<string, Inflight>;
  /** A reply is being recorded: the next message of the chat is not taken too. */
  taking: boolean;
  sub: { unsubscribe(): void };
}


const effectKey = (e: Pick<DueEffect, 'step' | 'n'>) => `${e.step}#${e.n}`;

export class WorkflowEngine {
  private definitions = new Map<string, WorkflowDefinition>();
  private loadErrors: WorkflowLoadError[] = [];
  private readonly runs = new Map<string, LiveRun>();
  /** Latest state of every run seen by this process (active and recently finished), oldest first. */
  private readonly recent = new Map<string, WorkflowRunState>();
  private readonly subs: Subscription[] = [];
  private watcher: { close(): Promise<void> } | null = null;
  private stopped = false;
  private readonly clock: ActorClock;
  private readonly now: () => number;
  private readonly newId: () => string;
  /** Inputs being committed and effects under way, but those waiting on an agent's answer. */
  private busy = 0;
  private idleWaiters: (() => void)[] = [];

  constructor(private readonly d: WorkflowEngineDeps) {
    this.clock = d.clock ?? REAL_CLOCK;
    this.now = d.now ?? (() => d.bus.now());
    this.newId = d.newId ?? (() => randomUUID());
  }

  async start(): Promise<void> {
    const { bus } = this.d;
    await this.reload();
    this.restore();
    this.subs.push(
      bus.handle(WORKFLOW_COMMANDS.list, 'workflows', (cmd) => this.list(cmd.data.principal)),
      bus.handle(WORKFLOW_COMMANDS.run, 'workflows', (cmd) => this.startRun(cmd.data, cmd.correlation)),
      bus.handle(WORKFLOW_COMMANDS.status, 'workflows', (cmd) => this.status(cmd.data)),
      bus.handle(WORKFLOW_COMMANDS.cancel, 'workflows', (cmd) => this.cancel(cmd.data)),
    );
    if (this.d.watch !== false) {
      this.watcher = watchWorkflowDefinitions(this.d.dir, () => {
        this.reload().catch((e) => bus.emitLog('error', `workflows: reload failed: ${describeError(e)}`));
      });
    }
  }

  /**
   * Stops taking work. Runs stay as their facts left them: what is in flight now is cut by the agents
   * stopping after this, and a restart resumes each run by the rules above, so nothing is recorded here.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const s of this.subs.splice(0)) s.unsubscribe();
    for (const run of this.runs.values()) {
      for (const f of run.inflight.values()) f.ended = true;
      run.sub.unsubscribe();
      this.d.host.stop(run.actorId);
    }
    this.runs.clear();
    await this.watcher?.close();
  }

  /** Re-reads every definition; active runs keep theirs. */
  async reload(): Promise<void> {
    const loaded = this.d.load();
    this.definitions = new Map(loaded.definitions.map((d) => [d.id, d]));
    this.loadErrors = loaded.errors;
    for (const e of loaded.errors) this.d.bus.emitLog('warn', `workflow not loaded: ${e.text}`);
    await this.d.bus.publish({
      stream: WORKFLOW_DEFINITIONS_STREAM,
      type: WORKFLOW_DEFINITION_EVENTS.definitions_loaded,
      data: { ids: [...this.definitions.keys()], errors: loaded.errors.map((e) => e.text) },
    });
  }

  activeRuns(): number {
    return this.runs.size;
  }

  /**
   * Resolves once nothing the engine started is under way but what waits on someone else: an agent's
   * answer, a reply in the chat, a timer. Inputs and effects started meanwhile are waited for too.
   * Checked after a macrotask turn, so an answer already given (it travels in microtasks) has made
   * its step busy again before the check.
   */
  async idle(): Promise<void> {
    for (;;) {
      if (this.busy > 0) await new Promise<void>((r) => this.idleWaiters.push(r));
      await new Promise((r) => setImmediate(r));
      if (this.busy === 0) return;
    }
  }

  /** `p` counts as work under way until it settles. */
  private async working<T>(p: Promise<T>): Promise<T> {
    this.busy++;
    try {
      return await p;
    } finally {
      this.leave();
    }
  }

  /** `p` is someone else's to settle: the work around it is not under way meanwhile. */
  private async waitingOn<T>(p: Promise<T>): Promise<T> {
    this.leave();
    try {
      return await p;
    } finally {
      this.busy++;
    }
  }

  private leave(): void {
    if (--this.busy === 0) for (const w of this.idleWaiters.splice(0)) w();
  }

  /**
   * The runtime's interceptor (AgentRuntime's `intercept`): a plain message in a chat where a run
   * waits at wait_for_reply is that run's reply, not a turn. The oldest waiting run of the chat
   * takes it. Null: not ours, queue it as usual.
   */
  takeReply(msg: Pick<AgentMessage, 'transport' | 'chat_id' | 'topic_id' | 'text'>): Promise<string> | null {
    if (this.stopped) return null;
    for (const run of this.runs.values()) {
      const s = this.state(run);
      if (!s || s.status !== 'waiting' || run.taking) continue;
      if (s.transport !== msg.transport || s.chat_id !== msg.chat_id || s.topic_id !== msg.topic_id) continue;
      run.taking = true;
      return this.input(run, { type: 'reply', text: msg.text, now: this.now() })
        .then(() => `Reply received: workflow "${s.definition.name}" (run ${s.run_id}) continues.`)
        .finally(() => {
          run.taking = false;
        });
    }
    return null;
  }

  // ---------------------------------------------------------------- commands

  private list(principal: Principal): CommandReply<typeof WORKFLOW_COMMANDS.list> {
    const definitions: WorkflowDefinitionView[] = [...this.definitions.values()].filter((d) => visibleTo(principal, d)).map((d) => ({
      id: d.id,
      file: null,
      name: d.name,
      description: d.description ?? null,
      step_count: workflowSteps(d).size,
      // A default may be 100 000 characters: a listing shows the start of each.
      variables: Object.fromEntries(Object.entries(d.variables).map(([k, value]) => [k, value.length > MAX_LISTED_VALUE_CHARS ? `${value.slice(0, MAX_LISTED_VALUE_CHARS)}…` : value])),
      error: null,
    }));
    // A broken file names no agent one can trust: only an unrestricted caller sees it.
    for (const e of unrestricted(principal) ? this.loadErrors : []) {
      const id = /^([A-Za-z0-9_-]{1,64})\.ya?ml$/.exec(e.file)?.[1] ?? null;
      definitions.push({ id, file: e.file, name: null, description: null, step_count: 0, variables: {}, error: e.text });
    }
    const runs = [...this.recent.values()].reverse().filter((s) => visibleTo(principal, s.definition)).slice(0, MAX_LISTED_RUNS).map((s) => {
      const { steps: _steps, ...summary } = workflowRunView(s);
      return summary;
    });
    return { enabled: this.d.config().enabled, definitions, runs };
  }

  private async startRun(data: CommandData<typeof WORKFLOW_COMMANDS.run>, correlation: string): Promise<{ run_id: string }> {
    if (this.stopped) throw new SvcError('agent-stopped', 'the workflow engine is stopping');
    mayChange(data.principal);
    const config = this.d.config();
    if (!config.enabled) throw new SvcError('workflows-disabled', 'workflows are disabled (workflow.enabled is false in config.json)');
    const definition = this.definitions.get(data.workflow_id);
    if (!definition) {
      const broken = this.loadErrors.find((e) => e.file.replace(/\.ya?ml$/, '') === data.workflow_id);
      throw new SvcError('unknown-workflow', broken ? `workflow ${data.workflow_id} is not loaded: ${broken.text}` : `no workflow named ${data.workflow_id} (known: ${[...this.definitions.keys()].join(', ') || 'none'})`);
    }
    mayUse(data.principal, definition);
    for (const name of Object.keys(data.variables)) {
      if (!Object.hasOwn(definition.variables, name)) {
        const declared = Object.keys(definition.variables);
        throw new SvcError('invalid-body', `variables.${name}: workflow ${definition.id} declares no variable "${name}" (${declared.length ? `it declares ${declared.join(', ')}` : 'it declares none'})`);
      }
    }
    if (this.runs.size >= config.max_parallel_runs) {
      throw new SvcError('too-many-runs', `${this.runs.size} workflow runs are active and workflow.max_parallel_runs is ${config.max_parallel_runs}: wait for one to finish or cancel one (/workflow cancel <run>)`);
    }
    const runId = this.newId();
    const run = this.spawn(runId, correlation, {
        run_id: runId,
        definition,
        variables: { ...definition.variables, ...data.variables },
        transport: data.transport,
        chat_id: data.chat_id,
        topic_id: data.topic_id,
        principal: data.principal,
        max_step_executions: MAX_STEP_EXECUTIONS,
        default_step_timeout: config.default_step_timeout,
    });
    await this.input(run, { type: 'start', now: this.now() });
    return { run_id: runId };
  }

  private status({ run_id, principal }: CommandData<typeof WORKFLOW_COMMANDS.status>): CommandReply<typeof WORKFLOW_COMMANDS.status> {
    const state = this.find(run_id);
    mayUse(principal, state.definition);
    return workflowRunView(state);
  }

  private async cancel({ run_id, principal }: CommandData<typeof WORKFLOW_COMMANDS.cancel>): Promise<CommandReply<typeof WORKFLOW_COMMANDS.cancel>> {
    mayChange(principal);
    const state = this.find(run_id);
    mayUse(principal, state.definition);
    const run = this.runs.get(run_id);
    if (!run || !isActiveRun(state.status)) throw new SvcError('run-finished', `run ${run_id} has already ${state.status === 'completed' ? 'completed' : `ended (${state.status})`}`);
    await this.input(run, { type: 'cancel', by: principal.id ?? principal.kind, now: this.now() });
    return { run_id, status: this.state(run)?.status ?? 'cancelled' };
  }

  private find(runId: string): WorkflowRunState {
    const known = this.recent.get(runId);
    if (known) return known;
    const folded = foldWorkflowRun(this.d.log.read({ stream: workflowRunStream(runId) }));
    if (!folded) throw new SvcError('not-found', `no workflow run ${runId}`);
    return folded;
  }

  // ---------------------------------------------------------------- runs

  private spawn(runId: string, correlation: string, input: WorkflowRunStart): LiveRun {
    const actorId = `workflow-run:${runId}`;
    const actor = this.d.host.spawn(actorId, workflowRunMachine, { stream: workflowRunStream(runId), input, correlation, clock: this.clock });
    const run: LiveRun = { id: runId, actorId, correlation, inflight: new Map(), taking: false, sub: { unsubscribe: () => undefined } };
    this.runs.set(runId, run);
    run.sub = actor.subscribe(() => this.reconcile(run));
    return run;
  }

  private state(run: LiveRun): WorkflowRunState | null {
    return this.d.host.get<typeof workflowRunMachine>(run.actorId)?.getSnapshot().context.run ?? this.recent.get(run.id) ?? null;
  }

  /** Hands the run an input and waits until the facts it caused are committed. */
  private async input(run: LiveRun, event: WorkflowRunInput): Promise<void> {
    if (this.stopped || !this.d.host.get(run.actorId)) return;
    await this.working(this.d.host.sendAndCommit(run.actorId, event, { correlation: run.correlation }));
  }

  /** Makes what runs match what the run's state says should: effects started or ended (its timers are the machine's). */
  private reconcile(run: LiveRun): void {
    const state = this.d.host.get<typeof workflowRunMachine>(run.actorId)?.getSnapshot().context.run;
    if (!state) return;
    this.remember(state);
    const due = new Map(runningEffects(state).map((e) => [effectKey(e), e]));
    for (const [key, f] of run.inflight) {
      if (due.has(key)) continue;
      run.inflight.delete(key);
      if (!f.ended) {
        f.ended = true;
        f.abort?.();
      }
    }
    for (const [key, effect] of due) if (!run.inflight.has(key)) this.perform(run, state, effect);
    if (!isActiveRun(state.status)) {
      run.sub.unsubscribe();
      this.runs.delete(run.id);
    }
  }

  private remember(state: WorkflowRunState): void {
    this.recent.delete(state.run_id);
    this.recent.set(state.run_id, state);
    let finished = 0;
    for (const s of this.recent.values()) if (!isActiveRun(s.status)) finished++;
    for (const [id, s] of this.recent) {
      if (finished <= RECENT_FINISHED) break;
      if (isActiveRun(s.status)) continue;
      this.recent.delete(id);
      finished--;
    }
  }

  /** Starts one step attempt's side effect; its result goes back to the run as an input. */
  private perform(run: LiveRun, state: WorkflowRunState, effect: DueEffect): void {
    const f: Inflight = { ended: false };
    run.inflight.set(effectKey(effect), f);
    const report = (event: WorkflowRunInput) => {
      if (f.ended || this.stopped) return;
      f.ended = true;
      this.input(run, event).catch((e) => this.d.bus.emitLog('error', `workflow run ${run.id}: could not record step ${effect.step}: ${describeError(e)}`));
    };
    const done = (output: string) => report({ type: 'step.done', step: effect.step, n: effect.n, output, now: this.now() });
    const failed = (error: string) => report({ type: 'step.failed', step: effect.step, n: effect.n, error, now: this.now() });
    if (effect.type === 'ask_agent') {
      this.working(askAgentStep(this.d.bus, state, effect, (abort) => (f.abort = abort), (p) => this.waitingOn(p))).then(done, (e) => failed(e instanceof SvcError ? e.message : describeError(e)));
      return;
    }
    this.working(this.d.bus.send(CHAT_DELIVERY_COMMANDS.deliver, {
      transport: state.transport,
      chat_id: state.chat_id,
      topic_id: state.topic_id,
      text: effect.text,
      source: `workflow:${state.run_id}`,
    }, { correlation: run.correlation })).then(
      (r) => {
        if (!r.delivered) this.d.bus.emitLog('warn', `workflow run ${state.run_id}: transport ${state.transport} has no chat delivery; step ${effect.step}'s message was not shown`);
        // A wait is answered by the reply; its message only had to go out.
        if (effect.type === 'notify') done('');
      },
      (e) => failed(`could not deliver the message: ${e instanceof SvcError ? e.message : describeError(e)}`),
    );
  }

  /** Brings back every run the log says is still going (see the restart rules above). */
  private restore(): void {
    const byStream = new Map<string, AnyEnvelope[]>();
    for (const e of this.d.log.read({ streamPrefix: 'run:' })) {
      let list = byStream.get(e.stream);
      if (!list) byStream.set(e.stream, (list = []));
      list.push(e);
    }
    const restored: LiveRun[] = [];
    const cut: Array<{ run: LiveRun; effect: DueEffect }> = [];
    for (const events of byStream.values()) {
      const state = foldWorkflowRun(events);
      if (!state) continue;
      this.remember(state);
      if (!isActiveRun(state.status)) continue;
      const last = events.at(-1)!;
      const snapshot = workflowRunMachine.resolveState({ value: state.status, context: { start: startOf(state), run: state } });
      const correlation = last.correlation ?? `workflow:${state.run_id}`;
      const run = this.spawnRestored(state.run_id, correlation, snapshot);
      restored.push(run);
      for (const effect of runningEffects(state)) {
        if (effect.type === 'notify') continue;
        // Already asked or already shown: nothing is repeated behind the user's back.
        run.inflight.set(effectKey(effect), { ended: false });
        if (effect.type === 'ask_agent') cut.push({ run, effect });
      }
      this.reconcile(run);
    }
    const report = (run: LiveRun) => (e: unknown) => this.d.bus.emitLog('error', `workflow run ${run.id}: ${describeError(e)}`);
    // The timers first: a deadline that passed while svc was down is a timeout, whatever was cut.
    for (const run of restored) void this.input(run, { type: 'resume', now: this.now() }).catch(report(run));
    for (const { run, effect } of cut) {
      void this.input(run, { type: 'step.failed', step: effect.step, n: effect.n, reason: 'interrupted', error: 'svc restarted while the agent was answering', now: this.now() }).catch(report(run));
    }
  }

  private spawnRestored(runId: string, correlation: string, snapshot: ReturnType<typeof workflowRunMachine.resolveState>): LiveRun {
    // Effects are marked before the first reconcile: spawn subscribes only after the caller marks them.
    const actorId = `workflow-run:${runId}`;
    const actor = this.d.host.spawn(actorId, workflowRunMachine, { stream: workflowRunStream(runId), snapshot, correlation, clock: this.clock });
    const run: LiveRun = { id: runId, actorId, correlation, inflight: new Map(), taking: false, sub: { unsubscribe: () => undefined } };
    this.runs.set(runId, run);
    run.sub = actor.subscribe(() => this.reconcile(run));
    return run;
  }
}

function startOf(state: WorkflowRunState): WorkflowRunStart {
  const { run_id, definition, variables, transport, chat_id, topic_id, principal, max_step_executions, default_step_timeout } = state;
  return { run_id, definition, variables, transport, chat_id, topic_id, principal, max_step_executions, default_step_timeout };
}
