import { randomBytes } from 'node:crypto';
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Subscription, filter, firstValueFrom } from 'rxjs';
import { agentsOf, causedBy, type Bus, type Cause } from '../../bus/index.js';
import {
  TASKS_DISABLED_TEXT,
  createdOf,
  renderTaskSelector,
  isFinishedTask,
  resumable,
  taskMachine,
  taskMachineState,
  taskStream,
  type TaskCreated,
  type TaskMachineEvent,
  type TaskState,
} from '../../machines/index.js';
import {
  AGENT_COMMANDS,
  MAIN_AGENT,
  SvcError,
  TASK_COMMANDS,
  describeError,
  systemPrincipal,
  taskSessionKey,
  type AgentConfig,
  type Principal,
  type Role,
  type SubAgentConfig,
  type TaskRun,
  type TaskSelectorAction,
  type TaskSelectorAnswer,
  type TaskView,
  type UserRecord,
} from '../../schemas/index.js';
import { initTaskFolder, readTaskRules, type EventLog, type HomePaths, type TasksReadModel } from '../../store/index.js';
import type { ActorClock, ActorHost } from '../host/actor-host.js';
import { actingPrincipal } from '../chat-delivery/acting-principal.js';
import { deliverToParent, parentChat } from '../chat-delivery/parent-delivery.js';
import { taskView } from './task-queries.js';
import { endEvent, firstLine, sessionsFromTurns } from './task-run-end.js';
import { TaskRunDriver } from './task-run-driver.js';
import { TasksFileWriter, recordOf } from './tasks-file-writer.js';

/*
 * The task hub (SPEC.md "Task records", "Task status", "TasksConfig"): the task commands. One task
 * actor per task on its `task:<id>` stream; its runs go through the agent contract with the task's
 * own session key (so the parent chat's lane stays free), queued per chat under
 * `tasks.max_parallel` by the task run queue (task-run-driver.ts); tasks are read from the tasks
 * projection of the log, and tasks.json is written from it (tasks-file-writer.ts).
 *
 * Decisions where SPEC.md is silent:
 * - The parent answers a question with `/tasks/resume {task_id, prompt}` (resume_task.py): while
 *   the asking run still waits, the prompt is the answer its ask_parent call returns; when that run
 *   is gone (a restart), the answer starts a new run of the same provider session.
 * - "Injected into the parent session": the parent agent gets a turn in the task's origin chat
 *   holding the result (or the question), queued behind whatever that chat is doing, so it sees it
 *   and can tell the user or resume the task. Both also land in the admin chat as `chat_message`
 *   envelopes (`task_result`, `task_question`), and the parent's reply to them as `text`
 *   (chat-delivery/parent-delivery.ts).
 * - A task waits for its answer inside its run: the run's deadline (`tasks.timeout_seconds`) keeps
 *   counting, so an unanswered question ends in a timeout like any other stuck run.
 * - A task created for a person who is removed or disabled since cannot run for them: its next run
 *   fails with `unknown-user` (chat-delivery/acting-principal.ts, the rule the internal API uses).
 */

export interface TaskHubDeps {
  bus: Bus;
  host: ActorHost;
  log: EventLog;
  paths: HomePaths;
  /** The tasks projection of the log: what every read here answers from. */
  tasks: TasksReadModel;
  /** The main agent's config, live: `tasks` is read on every decision. */
  config: () => AgentConfig;
  registry: () => readonly SubAgentConfig[];
  users: () => readonly UserRecord[];
  /** Drives the orphan sweep's timer; tests pass a SimulatedClock. */
  clock?: ActorClock;
  newId?: () => string;
}

/** What `task.submit` carries, and what the admin API's create turns into. */
export interface TaskSubmission {
  from: string;
  prompt: string;
  name: string | null;
  provider: 'claude' | 'codex' | 'gemini' | null;
  model: string | null;
  chat_id: number | null;
  topic_id: number | null;
  transport: string | null;
  caller_user: string | null;
  /** The role the caller was authenticated with (null: none, as the Principal says): the task never runs with more. */
  caller_role: Role | null;
}

const SYSTEM = systemPrincipal(null, { transport: 'internal', chat_id: null, topic_id: null });

export class TaskHub {
  private readonly questions = new Map<string, (answer: string | null) => void>();
  private readonly subs = new Subscription();
  private readonly runs: TaskRunDriver;
  private readonly file: TasksFileWriter;
  private stopped = false;
  private readonly newId: () => string;

  constructor(private readonly d: TaskHubDeps) {
    this.newId = d.newId ?? (() => randomBytes(6).toString('hex'));
    this.file = new TasksFileWriter(d.paths.tasksFile, d.tasks, d.bus);
    this.runs = new TaskRunDriver({
      bus: d.bus,
      host: d.host,
      maxParallel: () => d.config().tasks.max_parallel,
      run: (id, text) => this.run(id, text),
      ended: (id, _run, result) => this.runEnded(id, result),
      sweep: () => {
        try {
          this.cleanupOrphans();
        } catch (e) {
          d.bus.emitLog('warn', `task folder cleanup failed: ${describeError(e)}`);
        }
      },
      ...(d.clock ? { clock: d.clock } : {}),
    });
  }

  /**
   * Brings the tasks back from the log: every task not deleted gets its actor again, one left
   * running by a previous run of svc fails as `stale`, a waiting one stays waiting (its answer
   * resumes it), and what tasks.json or the tasks folder hold beyond the facts goes.
   */
  async start(startCorrelation?: string): Promise<void> {
    const { bus, host } = this.d;
    const all = this.d.tasks.all() as TaskState[];
    this.subs.add(bus.subscribe('task-hub', () => void this.file.written(), (e) => e.stream.startsWith('task:')));
    for (const s of all) host.spawn(actorIdOf(s.task_id), taskMachine, { stream: taskStream(s.task_id), input: createdOf(s), snapshot: taskMachine.resolveState(taskMachineState(s)! as never) });
    const cause: Cause = startCorrelation ? { correlation: startCorrelation } : {};
    const stale = all.filter((s) => s.status === 'running');
    const found = stale.length ? sessionsFromTurns(this.d.log) : new Map<string, { provider: string; session_id: string }>();
    for (const s of stale) {
      const f = found.get(s.task_id);
      await host.sendAndCommit(
        actorIdOf(s.task_id),
        { type: 'fail', reason: 'stale', result: 'svc stopped while this task was running; resume it to continue', provider: f?.provider ?? null, model: null, session_id: f?.session_id ?? null, now: this.nowS() },
        cause,
      );
    }
    // Rewritten whole at start: what a hand edit or a crash left in it beyond the facts goes.
    await this.file.written();
    this.cleanupOrphans();
    this.runs.start(startCorrelation);
    this.serve();
  }

  stop(): void {
    this.stopped = true;
    this.subs.unsubscribe();
    this.runs.stop();
    this.file.flush();
    // Runs still going are cut by the agents' own stop; the next start finds them running and fails them as stale.
    for (const answer of this.questions.values()) answer(null);
    this.questions.clear();
  }

  list(from: string | null): TaskView[] {
    const now = this.d.bus.now();
    return this.all()
      .filter((s) => from === null || s.parent_agent === from)
      .sort((a, b) => b.created_at - a.created_at)
      .map((s) => taskView(recordOf(s), now));
  }

  async submit(sub: TaskSubmission, cause: Cause = {}): Promise<{ task_id: string }> {
    if (!this.d.config().tasks.enabled) throw new SvcError('tasks-disabled', 'Task system is not enabled.');
    if (sub.from !== MAIN_AGENT && !this.d.registry().some((r) => r.name === sub.from)) throw new SvcError('unknown-agent', `no agent named ${JSON.stringify(sub.from)}`);
    const where = await parentChat(this.d.bus, sub);
    const id = this.newId();
    const { folder } = initTaskFolder(this.d.paths, id);
    const created: TaskCreated = {
      task_id: id,
      name: sub.name?.trim() || firstLine(sub.prompt),
      parent_agent: sub.from,
      agent: sub.from,
      ...where,
      caller_user: sub.caller_user,
      caller_role: sub.caller_role,
      prompt: sub.prompt,
      provider: sub.provider,
      model: sub.model,
      created_at: this.nowS(),
    };
    const stream = taskStream(id);
    const committed = firstValueFrom(this.d.bus.events$.pipe(filter((e) => e.stream === stream)));
    this.d.host.spawn(actorIdOf(id), taskMachine, { stream, input: created, correlation: cause.correlation ?? `task:${id}`, ...(cause.by ? { by: cause.by } : {}) });
    await committed;
    this.d.bus.emitLog('info', `task ${id} created by ${sub.from} in ${folder}`, { task_id: id });
    this.runs.request(id, 1, where.chat_id, `${sub.prompt}\n\n${readTaskRules()}`);
    await this.file.written();
    return { task_id: id };
  }

  /** Answers a waiting task whose run still asks; otherwise runs a finished (or orphaned waiting) task again. */
  async resume(id: string, prompt: string, from: string | null, cause: Cause = {}): Promise<{ task_id: string; status: string }> {
    const s = this.owned(id, from);
    const answer = this.questions.get(id);
    if (s.status === 'waiting' && answer) {
      await this.drive(id, { type: 'answer', answer: prompt, now: this.nowS() }, cause);
      this.questions.delete(id);
      answer(prompt);
      await this.file.written();
      return { task_id: id, status: 'running' };
    }
    if (s.status === 'running') throw new SvcError('task-state', `task ${id} is running; wait for its result or cancel it`);
    const found = resumable(s) ? undefined : sessionsFromTurns(this.d.log).get(id);
    if (!resumable(s) && !found) throw new SvcError('task-state', `task ${id} has no provider session to resume (its run never started one)`);
    const text = s.status === 'waiting' && s.question ? `The parent answered your question (${s.question}):\n\n${prompt}` : prompt;
    await this.drive(id, { type: 'resume', prompt, now: this.nowS(), ...(found ? { found } : {}) }, cause);
    const now = this.known(id);
    this.runs.request(id, now.runs, now.chat_id, text);
    await this.file.written();
    return { task_id: id, status: 'running' };
  }

  /** Blocks until the parent answers (the answer) or the task ends first (null). */
  async askParent(id: string, question: string, from: string | null, cause: Cause = {}): Promise<{ task_id: string; status: string; answer: string | null }> {
    const s = this.owned(id, from);
    if (s.status !== 'running' || !this.runs.started(id)) throw new SvcError('task-state', `task ${id} is ${s.status === 'running' ? 'not started yet' : s.status}; only a running task asks its parent`);
    const answered = new Promise<string | null>((resolve) => this.questions.set(id, resolve));
    await this.drive(id, { type: 'ask', question, now: this.nowS() }, cause);
    this.deliver(this.known(id), 'task_question', question);
    const answer = await answered;
    return { task_id: id, status: this.d.tasks.get(id)?.status ?? 'deleted', answer };
  }

  async cancel(id: string, from: string | null, cause: Cause = {}): Promise<{ task_id: string; status: string }> {
    const s = this.owned(id, from);
    if (isFinishedTask(s.status)) throw new SvcError('task-state', `task ${id} is already ${s.status}`);
    await this.drive(id, { type: 'cancel', now: this.nowS() }, cause);
    this.questions.get(id)?.(null);
    this.questions.delete(id);
    if (!this.runs.drop(id, s.runs) && this.runs.started(id)) {
      // Its own session, so ending it kills exactly this task's CLI and nothing of the parent chat's.
      await this.d.bus
        .send(AGENT_COMMANDS.endSession, { id: `${s.agent}:${taskSessionKey(id)}`, principal: SYSTEM, request_id: `task-cancel:${id}:${s.runs}` })
        .catch((e: unknown) => this.d.bus.emitLog('warn', `task ${id}: its run could not be stopped: ${describeError(e)}`, { task_id: id }));
    }
    await this.file.written();
    return { task_id: id, status: 'cancelled' };
  }

  /** SPEC's `TaskRegistry.delete`: only a finished task; entry and folder go (the folder path resolved first). */
  async delete(id: string, from: string | null, cause: Cause = {}): Promise<{ task_id: string; deleted: boolean }> {
    const s = this.owned(id, from);
    if (!isFinishedTask(s.status)) throw new SvcError('task-state', `task ${id} is ${s.status}; only a finished task (done, failed, cancelled) can be deleted`);
    const folder = this.folderOf(id);
    await this.drive(id, { type: 'delete', now: this.nowS() }, cause);
    rmSync(folder, { recursive: true, force: true });
    await this.file.written();
    return { task_id: id, deleted: true };
  }

  /**
   * SPEC's `cleanup_finished(chat_id=None)`: deletes every finished task (of one chat). `from`
   * narrows it to one parent's: chat ids are per transport, so two agents may share one.
   */
  async cleanupFinished(chatId: number | null = null, from: string | null = null, cause: Cause = {}): Promise<number> {
    let n = 0;
    for (const s of this.all()) {
      if (!isFinishedTask(s.status) || (chatId !== null && s.chat_id !== chatId) || (from !== null && s.parent_agent !== from)) continue;
      await this.delete(s.task_id, from, cause);
      n++;
    }
    return n;
  }

  /**
   * `/tasks` in a chat (SPEC.md "Chat commands"): the action on this agent's tasks of that chat,
   * then the selector. A task of another chat (or agent) is answered as unknown, so a chat learns
   * nothing of others' tasks; a refused action changes nothing.
   */
  async selector(req: { agent: string; chat_id: number; action: TaskSelectorAction }, cause: Cause = {}): Promise<TaskSelectorAnswer> {
    if (!this.d.config().tasks.enabled) return { text: TASKS_DISABLED_TEXT, buttons: [], ok: true };
    const mine = (s: TaskState) => s.parent_agent === req.agent && s.chat_id === req.chat_id;
    const label = (s: TaskState) => `${s.task_id} (${s.name})`;
    let notice: string | null = null;
    let ok = true;
    const { action } = req;
    if (action.kind === 'cancel') {
      const s = this.task(action.task_id);
      if (!s || !mine(s)) [notice, ok] = [`No task ${action.task_id} in this chat; nothing changed.`, false];
      else if (isFinishedTask(s.status)) [notice, ok] = [`Task ${label(s)} is already ${s.status}; nothing changed.`, false];
      else {
        await this.cancel(s.task_id, req.agent, cause).then(
          () => (notice = `Cancelled task ${label(s)}.`),
          (e: unknown) => ([notice, ok] = [`Task ${label(s)} was not cancelled: ${describeError(e)}`, false]),
        );
      }
    } else if (action.kind === 'cancel_all') {
      const active = this.all().filter((s) => mine(s) && !isFinishedTask(s.status));
      let n = 0;
      for (const s of active) await this.cancel(s.task_id, req.agent, cause).then(() => n++, () => undefined);
      notice = active.length ? `Cancelled ${n} of ${active.length} running or waiting task(s).` : 'No running or waiting task to cancel.';
    } else if (action.kind === 'delete_finished') {
      const n = await this.cleanupFinished(req.chat_id, req.agent, cause);
      notice = n ? `Deleted ${n} finished task(s).` : 'No finished task to delete.';
    }
    const shown = this.all().filter(mine);
    return renderTaskSelector(shown, this.nowS(), notice, ok);
  }

  /** Folders under workspace/tasks/ that no task owns. tasks.json needs no such pass: it is rewritten from the facts. */
  cleanupOrphans(): string[] {
    const dir = join(this.d.paths.workspace, 'tasks');
    let names: string[];
    try {
      names = readdirSync(dir, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name);
    } catch {
      return [];
    }
    const orphans = names.filter((n) => this.d.tasks.get(n) === null);
    for (const n of orphans) rmSync(join(dir, n), { recursive: true, force: true });
    if (orphans.length) this.d.bus.emitLog('info', `removed ${orphans.length} task folder(s) no task owns`, { folders: orphans });
    return orphans;
  }

  // ------------------------------------------------------------------ internals

  private serve(): void {
    const { bus } = this.d;
    this.subs.add(
      bus.handle(TASK_COMMANDS.submit, 'task-hub', (cmd) => {
        const { principal, ...body } = cmd.data;
        if (principal.kind === 'agent' && principal.id !== body.from) throw new SvcError('task-not-owner', `the caller is ${principal.id}, not ${body.from}`);
        return this.submit({ ...body, caller_user: principal.acting_for, caller_role: principal.role }, cmd);
      }),
    );
    this.subs.add(bus.handle(TASK_COMMANDS.resume, 'task-hub', (cmd) => this.resume(cmd.data.task_id, cmd.data.prompt, cmd.data.from, cmd)));
    this.subs.add(bus.handle(TASK_COMMANDS.askParent, 'task-hub', (cmd) => this.askParent(cmd.data.task_id, cmd.data.question, cmd.data.from, cmd)));
    this.subs.add(bus.handle(TASK_COMMANDS.listOwned, 'task-hub', (cmd) => this.list(cmd.data.from)));
    this.subs.add(bus.handle(TASK_COMMANDS.cancelOwned, 'task-hub', (cmd) => this.cancel(cmd.data.task_id, cmd.data.from, cmd)));
    this.subs.add(bus.handle(TASK_COMMANDS.delete, 'task-hub', (cmd) => this.delete(cmd.data.task_id, cmd.data.from, cmd)));
    this.subs.add(bus.handle(TASK_COMMANDS.selector, 'task-hub', (cmd) => this.selector(cmd.data, cmd)));
  }

  private all(): TaskState[] {
    return this.d.tasks.all() as TaskState[];
  }

  private task(id: string): TaskState | null {
    return this.d.tasks.get(id) as TaskState | null;
  }

  private nowS(): number {
    return Math.floor(this.d.bus.now() / 1000);
  }

  private folderOf(id: string): string {
    return join(this.d.paths.workspace, 'tasks', id);
  }

  private known(id: string): TaskState {
    const s = this.task(id);
    if (!s) throw new SvcError('not-found', `task ${JSON.stringify(id)} does not exist`);
    return s;
  }

  /** SPEC: ownership is checked when `from` is given. */
  private owned(id: string, from: string | null): TaskState {
    const s = this.known(id);
    if (from !== null && s.parent_agent !== from) throw new SvcError('task-not-owner', `task ${id} belongs to ${s.parent_agent}, not ${from}`);
    return s;
  }

  /** Tells the task's actor, waiting for the fact; refused with `task-state` when its status does not allow it. */
  private async drive(id: string, event: TaskMachineEvent, cause: Cause): Promise<void> {
    const actor = this.d.host.get<typeof taskMachine>(actorIdOf(id));
    if (!actor || !actor.getSnapshot().can(event)) throw new SvcError('task-state', `task ${id} cannot ${event.type} while ${this.task(id)?.status ?? 'gone'}`);
    await this.d.host.sendAndCommit(actorIdOf(id), event, causedBy(cause));
  }

  /** A started run: the task's CLI through the agent contract, for the person the task runs for. */
  private run(id: string, text: string): Promise<unknown> {
    const s = this.known(id);
    const task: TaskRun = { task_id: id, folder: this.folderOf(id), provider: (s.provider as TaskRun['provider']) ?? null, model: s.model, resume_session_id: s.session_id };
    return agentsOf(this.d.bus).ask(
      { agent: s.agent, transport: s.transport, chat_id: s.chat_id, topic_id: s.topic_id, text, kind: 'task', task },
      this.principalOf(s),
      { requestId: `task:${id}` },
    ).outcome;
  }

  private runEnded(id: string, result: unknown): void {
    if (this.stopped) return;
    // A question still open hears "no answer" once the end is recorded, so its reply names the status the task ended in.
    const unanswered = () => {
      this.questions.get(id)?.(null);
      this.questions.delete(id);
    };
    const event = endEvent(result, this.nowS());
    const actor = this.d.host.get<typeof taskMachine>(actorIdOf(id));
    if (!actor?.getSnapshot().can(event)) return unanswered();
    void this.d.host
      .sendAndCommit(actorIdOf(id), event, { correlation: `task:${id}` })
      .then(() => {
        unanswered();
        const s = this.task(id);
        if (s) this.deliver(s, 'task_result', s.result ?? '');
      })
      .catch((e: unknown) => {
        unanswered();
        this.d.bus.emitLog('error', `task ${id}: the end of its run was not recorded: ${describeError(e)}`, { task_id: id });
      });
  }

  /** The parent hears of a result or a question in its admin chat and in a turn of the task's origin chat. */
  private deliver(s: TaskState, kind: 'task_result' | 'task_question', content: string): void {
    const text =
      kind === 'task_result'
        ? `[Task "${s.name}" (${s.task_id}) ${s.status === 'done' ? 'finished' : `ended: ${s.status}${s.reason ? `, ${s.reason}` : ''}`}]\n\n${content}\n\n(Resume it with resume_task.py ${s.task_id} "<prompt>"; delete it with delete_task.py ${s.task_id}.)`
        : `[Task "${s.name}" (${s.task_id}) asks]\n\n${content}\n\n(Answer with resume_task.py ${s.task_id} "<answer>"; the task waits for it.)`;
    deliverToParent(this.d.bus, {
      agent: s.parent_agent,
      where: { transport: s.transport, chat_id: s.chat_id, topic_id: s.topic_id },
      principal: () => this.principalOf(s),
      correlation: `task:${s.task_id}`,
      envelope: { kind, id: `task-${s.task_id}-${s.runs}-${kind === 'task_result' ? 'result' : `q${this.d.bus.now()}`}`, content, meta: { task_id: s.task_id, task_name: s.name, status: s.status } },
      turnText: text,
    });
  }

  /** The task runs for the person its creator acted for, with the role its creator had; throws `unknown-user` when that person is gone. */
  private principalOf(s: TaskState): Principal {
    return actingPrincipal(this.d, s.parent_agent, s.caller_user, s.caller_role, { transport: s.transport, chat_id: s.chat_id, topic_id: s.topic_id }, `the user task ${s.task_id} was created for`);
  }
}

function actorIdOf(id: string): string {
  return `task:${id}`;
}
