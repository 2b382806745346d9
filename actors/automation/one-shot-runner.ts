import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createActor } from 'xstate';
import { agentsOf, type Bus } from '../../bus/index.js';
import { cutOneShots, jobInQuietHours, oneShotQueueMachine, restartsAfterCut, runStatusOf } from '../../machines/index.js';
import {
  AGENT_COMMANDS,
  CRON_RUN_STATUS,
  ONESHOT_EVENTS,
  SvcError,
  cliNotFoundStatus,
  describeError,
  oneShotStream,
  taskSessionKey,
  type AgentConfig,
  type OneShotRequest,
  type TaskRun,
} from '../../schemas/index.js';
import type { EventLog, HomePaths } from '../../store/index.js';
import type { OneShotRunner } from './webhook-dispatch.js';

/*
 * One fresh CLI run (never a resumed session) in `workspace/cron_tasks/<folder>/`, for cron jobs and
 * for `cron_task` webhooks alike, through the agent contract with the `task` field: the turn runs in
 * the folder, on its own session key, with the run's provider/model/effort/CLI arguments and
 * `cli_timeout` (turn kind `cron`). Runs that share a `dependency` key wait for each other in one
 * FIFO queue, whoever asked; runs without one start at once. Each run's request is in its
 * `oneshot.queued` fact, so after a stop of svc a run that never started is started, and one that
 * had started is recorded interrupted: nothing queued is lost, nothing is run twice.
 */

export const CRON_TASKS_DIR = 'cron_tasks';
const PROVIDERS = ['claude', 'codex', 'gemini'] as const;
type Provider = (typeof PROVIDERS)[number];
const isProvider = (p: string | null): p is Provider => p !== null && (PROVIDERS as readonly string[]).includes(p);
/** The inter-agent conversation, as the task hub uses for a parent with no chat. */
const NO_CHAT = { transport: 'internal', chat_id: 0, topic_id: null };

export interface OneShotResult {
  run_id: string;
  status: string;
  /** The CLI's answer, or what went wrong. */
  text: string;
  duration_ms: number | null;
  turn_id: string | null;
}

/** What recover() did, and the correlations of every run the log holds queued (a cron fire's run was made). */
export interface RecoveredRuns {
  /** Runs that had asked their CLI: recorded `interrupted`, not run again (source and agent null in older facts). */
  interrupted: { run_id: string; correlation: string | null; source: string | null; agent: string | null }[];
  restarted: RestartedRun[];
  queued: ReadonlySet<string>;
}

/** A run a stop of svc cut before it started, queued again by recover(). */
export interface RestartedRun {
  run_id: string;
  correlation: string | null;
  source: string;
  agent: string;
  done: Promise<OneShotResult>;
}

export interface OneShotRunsDeps {
  bus: Bus;
  log: EventLog;
  paths: HomePaths;
  config: () => AgentConfig;
  /** The configured zone (user_timezone → TZ → host → UTC), for quiet hours without a zone of their own. */
  timezone: () => string;
  newId?: () => string;
}

interface Queued {
  runId: string;
  req: OneShotRequest;
  resolve: (r: OneShotResult) => void;
}

export function cronTaskFolder(paths: HomePaths, folder: string): string {
  return join(paths.workspace, CRON_TASKS_DIR, folder);
}

/** A job's folder with its memory file, made when the job is; an existing one is left as it is. */
export function ensureCronTaskFolder(paths: HomePaths, folder: string): string {
  const dir = cronTaskFolder(paths, folder);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const memory = join(dir, `${folder}_MEMORY.md`);
  if (!existsSync(memory)) writeFileSync(memory, `# ${folder}\n\nNotes this job keeps between its runs.\n`, { mode: 0o600 });
  return dir;
}

/** The reminder every run's prompt carries: the folder's memory file is how runs know what came before. */
export function oneShotPrompt(prompt: string, folder: string): string {
  return `${prompt}\n\n---\nThis is a scheduled run with no memory of earlier runs except ${folder}_MEMORY.md in your working folder: read it first, and before you finish update it with what the next run should know.`;
}

export class OneShotRuns implements OneShotRunner {
  /** Which run starts when (machines/one-shot-queue.machine.ts); the runs themselves are held here. */
  private readonly queue = createActor(oneShotQueueMachine);
  private readonly runs = new Map<string, Queued>();
  private readonly newId: () => string;
  private stopped = false;
  private recovery: Promise<RecoveredRuns> | null = null;
  /** Runs doing svc's own work now: not waiting on their agent's answer, nor in a queue behind another run. */
  private busy = 0;
  private idleWaiters: (() => void)[] = [];

  constructor(private readonly d: OneShotRunsDeps) {
    this.newId = d.newId ?? (() => randomBytes(6).toString('hex'));
    this.queue.on('start', ({ run_id }) => {
      const item = this.runs.get(run_id);
      if (item) void this.execute(item);
    });
    this.queue.start();
  }

  /**
   * Runs cut by a stop of svc: one that had asked its CLI is recorded `error:interrupted` (turn
   * recovery tells its chat); one still waiting is queued again, in its old order, under its old id.
   * Call once, before anything new is queued.
   */
  recover(correlation: string): Promise<RecoveredRuns> {
    // Once: a second pass would find the runs it queued again still unstarted and queue them twice.
    this.recovery ??= this.recoverOnce(correlation);
    return this.recovery;
  }

  private async recoverOnce(correlation: string): Promise<RecoveredRuns> {
    const interrupted: RecoveredRuns['interrupted'] = [];
    const restarted: RestartedRun[] = [];
    const events = this.d.log.read({ streamPrefix: 'oneshot:' });
    const queued = new Set(events.filter((e) => e.type === ONESHOT_EVENTS.queued && e.correlation !== undefined).map((e) => e.correlation!));
    for (const run of cutOneShots(events)) {
      if (restartsAfterCut(run)) {
        const { request } = run;
        const done = this.enqueue(run.run_id, { ...request, correlation: run.correlation ?? request.correlation });
        restarted.push({ run_id: run.run_id, correlation: run.correlation, source: request.source, agent: request.agent, done });
        this.d.bus.emitLog('info', `one-shot run ${run.run_id} (${request.source}) was waiting when svc stopped: queued again`);
        continue;
      }
      const { run_id } = run;
      await this.d.bus.publish({ stream: oneShotStream(run_id), type: ONESHOT_EVENTS.finished, data: { run_id, status: CRON_RUN_STATUS.interrupted, duration_ms: null, turn_id: null }, correlation });
      interrupted.push({ run_id, correlation: run.correlation, source: run.request?.source ?? null, agent: run.request?.agent ?? null });
    }
    return { interrupted, restarted, queued };
  }

  /** What recover() found, once it ran (null before): webhook recovery reports its cut `cron_task` runs. */
  recovered(): Promise<RecoveredRuns> | null {
    return this.recovery;
  }

  stop(): void {
    this.stopped = true;
  }

  /**
   * Resolves once every run queued so far has ended or is held: waiting on its agent's answer, or in
   * its dependency queue behind such a run. Runs queued meanwhile are waited for too. Checked after a
   * macrotask turn, so an answer already given (its reply travels in microtasks) has made its run busy
   * again before the check: `held` means the agent has not answered, not that its answer is on its way.
   */
  async idle(): Promise<void> {
    for (;;) {
      if (this.busy > 0) await new Promise<void>((r) => this.idleWaiters.push(r));
      await new Promise((r) => setImmediate(r));
      if (this.busy === 0) return;
    }
  }

  private enter(): void {
    this.busy++;
  }

  private leave(): void {
    if (--this.busy === 0) for (const w of this.idleWaiters.splice(0)) w();
  }

  /** The port webhooks use: resolves once the run is queued (or started). */
  async start(req: OneShotRequest): Promise<{ task_id: string; done: Promise<OneShotResult> }> {
    const run = this.run(req);
    await run.queued;
    return { task_id: run.run_id, done: run.done };
  }

  /** Queues one run; `done` resolves with how it ended and never rejects. */
  run(req: OneShotRequest): { run_id: string; queued: Promise<void>; done: Promise<OneShotResult> } {
    const runId = this.newId();
    const folder = req.folder ?? req.source.replace(/^[a-z]+:/, '');
    const request = { ...req, folder };
    let done!: Promise<OneShotResult>;
    this.enter();
    // The fact first: a run the log does not hold must not start (a restart would not know of it).
    const queued = this.d.bus
      .publish({
        stream: oneShotStream(runId),
        type: ONESHOT_EVENTS.queued,
        data: { run_id: runId, source: req.source, agent: req.agent, folder, dependency: req.dependency, provider: req.provider, model: req.model, request },
        correlation: req.correlation,
      })
      .then(() => void (done = this.enqueue(runId, request)))
      .finally(() => this.leave());
    const failed = queued.then(
      () => done,
      (e: unknown): OneShotResult => ({ run_id: runId, status: 'error:internal', text: describeError(e), duration_ms: null, turn_id: null }),
    );
    return { run_id: runId, queued, done: failed };
  }

  /** Puts a run whose `queued` fact is in the log at the back of its dependency queue (or starts it). */
  private enqueue(runId: string, req: OneShotRequest): Promise<OneShotResult> {
    return new Promise<OneShotResult>((resolve) => {
      this.runs.set(runId, { runId, req, resolve });
      this.queue.send({ type: 'queued', run_id: runId, dependency: req.dependency });
    });
  }

  /** Runs one item, then the next of its dependency queue. */
  private async execute(item: Queued): Promise<void> {
    this.enter();
    try {
      await this.executeOne(item);
    } finally {
      this.leave();
    }
  }

  private async executeOne(item: Queued): Promise<void> {
    const result = await this.runOne(item).catch((e: unknown): OneShotResult => ({ run_id: item.runId, status: 'error:internal', text: describeError(e), duration_ms: null, turn_id: null }));
    await this.d.bus
      .publish({ stream: oneShotStream(item.runId), type: ONESHOT_EVENTS.finished, data: { run_id: item.runId, status: result.status, duration_ms: result.duration_ms, turn_id: result.turn_id }, correlation: item.req.correlation })
      .catch((e: unknown) => this.d.bus.emitLog('error', `one-shot run ${item.runId}: its end was not recorded: ${describeError(e)}`));
    item.resolve(result);
    this.runs.delete(item.runId);
    this.queue.send({ type: 'finished', run_id: item.runId });
  }

  private async runOne({ runId, req }: Queued): Promise<OneShotResult> {
    const { bus } = this.d;
    const end = (status: string, text: string): OneShotResult => ({ run_id: runId, status, text, duration_ms: null, turn_id: null });
    if (this.stopped) return end(CRON_RUN_STATUS.interrupted, 'svc is stopping');
    const zone = req.timezone ?? this.d.timezone();
    if (jobInQuietHours(req.quiet_start, req.quiet_end, bus.now(), zone)) return end(CRON_RUN_STATUS.quietHours, `quiet hours ${req.quiet_start}-${req.quiet_end} (${zone})`);
    const folderName = req.folder!;
    if (req.create_folder) ensureCronTaskFolder(this.d.paths, folderName);
    const folder = cronTaskFolder(this.d.paths, folderName);
    if (!isDirectory(folder)) return end(CRON_RUN_STATUS.folderMissing, `the run's folder ${folder} does not exist`);
    if (req.provider !== null && !isProvider(req.provider)) return end(cliNotFoundStatus(req.provider), `no CLI for provider ${JSON.stringify(req.provider)}`);
    const provider = req.provider;
    const params = req.cli_parameters ?? null;
    const task: TaskRun = {
      task_id: runId,
      folder,
      provider,
      model: req.model,
      // A fresh conversation every time: what a run must remember is in its memory file.
      resume_session_id: null,
      reasoning_effort: req.reasoning_effort,
      // Task-level parameters replace the global ones for the provider that runs (SPEC: not merged).
      // The whole map goes: which provider runs is the agent's to resolve (a job naming only a model,
      // or neither, runs on that model's provider, or the agent's own), and it picks that one's list.
      ...(params ? { cli_parameters: params } : {}),
    };
    await bus.publish({ stream: oneShotStream(runId), type: ONESHOT_EVENTS.started, data: { run_id: runId }, correlation: req.correlation });
    const startedAt = bus.now();
    const route = req.route ?? NO_CHAT;
    const asked = agentsOf(bus).ask({ agent: req.agent, ...route, text: oneShotPrompt(req.prompt, folderName), kind: 'cron', task }, req.principal, { requestId: `oneshot:${runId}` });
    const admission = await asked.accepted;
    if (!admission.accepted) return end(`error:${admission.code.replace(/-/g, '_')}`, admission.message);
    try {
      // Held: the agent has the run; only its answer moves it on (idle() does not wait for that).
      this.leave();
      const o = await asked.outcome.finally(() => this.enter());
      return { run_id: runId, status: runStatusOf(o), text: o.text, duration_ms: bus.now() - startedAt, turn_id: o.turn_id };
    } catch (e) {
      return { ...end('error:internal', describeError(e)), duration_ms: bus.now() - startedAt };
    } finally {
      await this.endSession(req, runId);
    }
  }

  /**
   * A run's session is never resumed: it is ended once the run is, so a job firing every minute
   * does not leave a session a minute behind it (each one an actor, and restored at every start).
   */
  private async endSession(req: OneShotRequest, runId: string): Promise<void> {
    await this.d.bus
      .send(AGENT_COMMANDS.endSession, { id: `${req.agent}:${taskSessionKey(runId)}`, principal: req.principal, request_id: `oneshot-end:${runId}` })
      .catch((e: unknown) => {
        // A run whose CLI never started has no session; anything else is worth a line.
        if (!(e instanceof SvcError && e.code === 'not-found')) this.d.bus.emitLog('debug', `one-shot run ${runId}: its session was not ended: ${describeError(e)}`);
      });
  }
}

function isDirectory(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}
