import { randomBytes } from 'node:crypto';
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Subscription, filter, firstValueFrom } from 'rxjs';
import { REAL_CLOCK, agentsOf, causedBy, type Bus, type Cause } from '../../bus/index.js';
import {
  TASKS_DISABLED_TEXT,
  createdOf,
  evolveTask,
  foldTasks,
  renderTaskSelector,
  isFinishedTask,
  leastPrivileged,
  resumable,
  taskMachine,
  taskMachineState,
  taskStream,
  type TaskCreated,
  type TaskMachineEvent,
  type TaskState,
} from '../../machines/index.js';
import {
  CHAT_DELIVERY_COMMANDS,
  AGENT_COMMANDS,
  INTERAGENT_EVENTS,
  MAIN_AGENT,
  SvcError,
  TASK_COMMANDS,
  TURN_EVENTS,
  describeError,
  isSvcError,
  taskSessionKey,
  type AgentConfig,
  type Envelope,
  type EventPayload,
  type Principal,
  type Role,
  type SubAgentConfig,
  type TaskRun,
  type TaskSelectorAction,
  type TaskSelectorAnswer,
  type TaskView,
  type TurnOutcome,
  type UserRecord,
  systemPrincipal,
} from '../../schemas/index.js';
import { initTaskFolder, readTaskRules, writeJsonAtomicSync, type EventLog, type HomePaths } from '../../store/index.js';
import type { ActorClock, ActorHost } from '../host/actor-host.js';
import { taskView } from './task-queries.js';
import { recordChatEnvelope } from '../chat-delivery/chat-envelope.js';

/*
 * The task hub (SPEC.md "Task records", "Task status", "TasksConfig"): one task actor per task on
 * its `task:<id>` stream, runs through the agent contract with the task's own session key (so the
 * parent chat's lane stays free), `tasks.max_parallel` runs per chat with the rest queued, and
 * tasks.json written as the projection of the task facts.
 *
 * Decisions where SPEC.md is silent:
 * - The parent answers a question with `/tasks/resume {task_id, prompt}` (resume_task.py): while
 *   the asking run still waits, the prompt is the answer its ask_parent call returns; when that run
 *   is gone (a restart), the answer starts a new run of the same provider session.
 * - "Injected into the parent session": the parent agent gets a turn in the task's origin chat
 *   holding the result (or the question), queued behind whatever that chat is doing, so it sees it
 *   and can tell the user or resume the task. Both also land in the admin chat as `chat_message`
 *   envelopes (`task_result`, `task_question`), and the parent's reply to them as `text`.
 * - A task waits for its answer inside its run: the run's deadline (`tasks.timeout_seconds`) keeps
 *   counting, so an unanswered question ends in a timeout like any other stuck run.
 */

export const ORPHAN_CLEANUP_INTERVAL_MS = 5 * 60 * 60 * 1000;

export interface TaskHubDeps {
  bus: Bus;
  host: ActorHost;
  log: EventLog;
  paths: HomePaths;
  /** The main agent's config, live: `tasks` is read on every decision. */
  config: () => AgentConfig;
  registry: () => readonly SubAgentConfig[];
  users: () => readonly UserRecord[];
  /** Drives the orphan cleanup schedule; tests pass a SimulatedClock. */
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

/** What `deliverToParent` takes: who hears it, where, as whom, and the envelope kept in the admin chat. */
export interface ParentDelivery {
  agent: string;
  where: { transport: string; chat_id: number; topic_id: number | null };
  principal: Principal;
  correlation: string;
  envelope: { kind: 'task_result' | 'task_question' | 'interagent'; id: string; content: string; meta: Record<string, string | number | boolean | null> };
  turnText: string;
}

interface Run {
  chatId: number;
  text: string;
  started: boolean;
}

const SYSTEM = systemPrincipal(null, { transport: 'internal', chat_id: null, topic_id: null });
const TURN_ENDS = [TURN_EVENTS.started, TURN_EVENTS.completed, TURN_EVENTS.failed, TURN_EVENTS.timed_out, TURN_EVENTS.aborted] as const;
/** The chat of a task whose parent has no chat to be found: the inter-agent conversation, as `/interagent/send` uses. */
const NO_CHAT = { transport: 'internal', chat_id: 0, topic_id: null };

export class TaskHub {
  private readonly tasks = new Map<string, TaskState>();
  /** Runs by task id: started, or queued for a place under `max_parallel`, in arrival order. */
  private readonly runs = new Map<string, Run>();
  private readonly questions = new Map<string, (answer: string | null) => void>();
  private readonly subs = new Subscription();
  private cleanupTimer: unknown = null;
  private stopped = false;
  private readonly newId: () => string;
  private readonly clock: ActorClock;

  constructor(private readonly d: TaskHubDeps) {
    this.newId = d.newId ?? (() => randomBytes(6).toString('hex'));
    this.clock = d.clock ?? REAL_CLOCK;
  }

  /**
   * Brings the tasks back from the log: every task not deleted gets its actor again, one left
   * running by a previous run of svc fails as `stale`, a waiting one stays waiting (its answer
   * resumes it), and what tasks.json or the tasks folder hold beyond the facts goes.
   */
  async start(startCorrelation?: string): Promise<void> {
    const { bus, log } = this.d;
    for (const [id, s] of foldTasks(log.read({ streamPrefix: 'task:' }))) if (!s.deleted) this.tasks.set(id, s);
    this.subs.add(bus.subscribe('task-hub', (e) => this.onFact(e), (e) => e.stream.startsWith('task:')));
    this.subs.add(
      bus.subscribe(
        'task-hub:interagent',
        (e) => void this.onInteragentCompleted(e).catch((err: unknown) => this.bus().emitLog('warn', `${e.stream}: the result was not delivered: ${describeError(err)}`)),
        (e) => e.type === INTERAGENT_EVENTS.completed,
      ),
    );
    for (const s of this.tasks.values()) {
      const state = taskMachineState(s)!;
      this.d.host.spawn(actorIdOf(s.task_id), taskMachine, { stream: taskStream(s.task_id), input: createdOf(s), snapshot: taskMachine.resolveState(state as never) });
    }
    const cause: Cause = startCorrelation ? { correlation: startCorrelation } : {};
    const stale = [...this.tasks.values()].filter((s) => s.status === 'running');
    const found = stale.length ? this.sessionsFromTurns() : new Map<string, { provider: string; session_id: string }>();
    for (const s of stale) {
      const f = found.get(s.task_id);
      await this.d.host.sendAndCommit(
        actorIdOf(s.task_id),
        { type: 'fail', reason: 'stale', result: 'svc stopped while this task was running; resume it to continue', provider: f?.provider ?? null, model: null, session_id: f?.session_id ?? null, now: this.nowS() },
        cause,
      );
    }
    this.writeFile();
    this.cleanupOrphans();
    this.schedule();
    this.serve();
  }

  stop(): void {
    this.stopped = true;
    this.subs.unsubscribe();
    if (this.cleanupTimer !== null) this.clock.clearTimeout(this.cleanupTimer as never);
    // Runs still going are cut by the agents' own stop; the next start finds them running and fails them as stale.
    for (const answer of this.questions.values()) answer(null);
    this.questions.clear();
  }

  list(from: string | null): TaskView[] {
    const now = this.d.bus.now();
    return [...this.tasks.values()]
      .filter((s) => from === null || s.parent_agent === from)
      .sort((a, b) => b.created_at - a.created_at)
      .map((s) => taskView(recordOf(s), now));
  }

  async submit(sub: TaskSubmission, cause: Cause = {}): Promise<{ task_id: string }> {
    if (!this.d.config().tasks.enabled) throw new SvcError('tasks-disabled', 'Task system is not enabled.');
    if (sub.from !== MAIN_AGENT && !this.d.registry().some((r) => r.name === sub.from)) throw new SvcError('unknown-agent', `no agent named ${JSON.stringify(sub.from)}`);
    const where = await this.parentChat(sub);
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
    this.bus().emitLog('info', `task ${id} created by ${sub.from} in ${folder}`, { task_id: id });
    this.enqueue(id, `${sub.prompt}\n\n${readTaskRules()}`);
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
      return { task_id: id, status: 'running' };
    }
    if (s.status === 'running') throw new SvcError('task-state', `task ${id} is running; wait for its result or cancel it`);
    const found = resumable(s) ? undefined : this.sessionsFromTurns().get(id);
    if (!resumable(s) && !found) throw new SvcError('task-state', `task ${id} has no provider session to resume (its run never started one)`);
    const text = s.status === 'waiting' && s.question ? `The parent answered your question (${s.question}):\n\n${prompt}` : prompt;
    await this.drive(id, { type: 'resume', prompt, now: this.nowS(), ...(found ? { found } : {}) }, cause);
    this.enqueue(id, text);
    return { task_id: id, status: 'running' };
  }

  /** Blocks until the parent answers (the answer) or the task ends first (null). */
  async askParent(id: string, question: string, from: string | null, cause: Cause = {}): Promise<{ task_id: string; status: string; answer: string | null }> {
    const s = this.owned(id, from);
    if (s.status !== 'running' || !this.runs.get(id)?.started) throw new SvcError('task-state', `task ${id} is ${s.status === 'running' ? 'not started yet' : s.status}; only a running task asks its parent`);
    const answered = new Promise<string | null>((resolve) => this.questions.set(id, resolve));
    await this.drive(id, { type: 'ask', question, now: this.nowS() }, cause);
    this.deliver(this.known(id), 'task_question', question);
    const answer = await answered;
    return { task_id: id, status: this.tasks.get(id)?.status ?? 'deleted', answer };
  }

  async cancel(id: string, from: string | null, cause: Cause = {}): Promise<{ task_id: string; status: string }> {
    const s = this.owned(id, from);
    if (isFinishedTask(s.status)) throw new SvcError('task-state', `task ${id} is already ${s.status}`);
    await this.drive(id, { type: 'cancel', now: this.nowS() }, cause);
    this.questions.get(id)?.(null);
    this.questions.delete(id);
    const run = this.runs.get(id);
    if (run && !run.started) {
      this.runs.delete(id);
      this.pump();
    } else if (run) {
      // Its own session, so ending it kills exactly this task's CLI and nothing of the parent chat's.
      await this.d.bus
        .send(AGENT_COMMANDS.endSession, { id: `${s.agent}:${taskSessionKey(id)}`, principal: SYSTEM, request_id: `task-cancel:${id}:${s.runs}` })
        .catch((e: unknown) => this.bus().emitLog('warn', `task ${id}: its run could not be stopped: ${describeError(e)}`, { task_id: id }));
    }
    return { task_id: id, status: 'cancelled' };
  }

  /** SPEC's `TaskRegistry.delete`: only a finished task; entry and folder go (the folder path resolved first). */
  async delete(id: string, from: string | null, cause: Cause = {}): Promise<{ task_id: string; deleted: boolean }> {
    const s = this.owned(id, from);
    if (!isFinishedTask(s.status)) throw new SvcError('task-state', `task ${id} is ${s.status}; only a finished task (done, failed, cancelled) can be deleted`);
    const folder = this.folderOf(id);
    await this.drive(id, { type: 'delete', now: this.nowS() }, cause);
    rmSync(folder, { recursive: true, force: true });
    return { task_id: id, deleted: true };
  }

  /**
   * SPEC's `cleanup_finished(chat_id=None)`: deletes every finished task (of one chat). `from`
   * narrows it to one parent's: chat ids are per transport, so two agents may share one.
   */
  async cleanupFinished(chatId: number | null = null, from: string | null = null, cause: Cause = {}): Promise<number> {
    let n = 0;
    for (const s of [...this.tasks.values()]) {
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
      const s = this.tasks.get(action.task_id);
      if (!s || !mine(s)) [notice, ok] = [`No task ${action.task_id} in this chat; nothing changed.`, false];
      else if (isFinishedTask(s.status)) [notice, ok] = [`Task ${label(s)} is already ${s.status}; nothing changed.`, false];
      else {
        await this.cancel(s.task_id, req.agent, cause).then(
          () => (notice = `Cancelled task ${label(s)}.`),
          (e: unknown) => ([notice, ok] = [`Task ${label(s)} was not cancelled: ${describeError(e)}`, false]),
        );
      }
    } else if (action.kind === 'cancel_all') {
      const active = [...this.tasks.values()].filter((s) => mine(s) && !isFinishedTask(s.status));
      let n = 0;
      for (const s of active) await this.cancel(s.task_id, req.agent, cause).then(() => n++, () => undefined);
      notice = active.length ? `Cancelled ${n} of ${active.length} running or waiting task(s).` : 'No running or waiting task to cancel.';
    } else if (action.kind === 'delete_finished') {
      const n = await this.cleanupFinished(req.chat_id, req.agent, cause);
      notice = n ? `Deleted ${n} finished task(s).` : 'No finished task to delete.';
    }
    const shown = [...this.tasks.values()].filter(mine);
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
    const orphans = names.filter((n) => !this.tasks.has(n));
    for (const n of orphans) rmSync(join(dir, n), { recursive: true, force: true });
    if (orphans.length) this.bus().emitLog('info', `removed ${orphans.length} task folder(s) no task owns`, { folders: orphans });
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

  private schedule(): void {
    this.cleanupTimer = this.clock.setTimeout(() => {
      if (this.stopped) return;
      try {
        this.cleanupOrphans();
      } catch (e) {
        this.bus().emitLog('warn', `task folder cleanup failed: ${describeError(e)}`);
      }
      this.schedule();
    }, ORPHAN_CLEANUP_INTERVAL_MS);
  }

  private bus(): Bus {
    return this.d.bus;
  }

  private nowS(): number {
    return Math.floor(this.d.bus.now() / 1000);
  }

  private folderOf(id: string): string {
    return join(this.d.paths.workspace, 'tasks', id);
  }

  private known(id: string): TaskState {
    const s = this.tasks.get(id);
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
    if (!actor || !actor.getSnapshot().can(event)) throw new SvcError('task-state', `task ${id} cannot ${event.type} while ${this.tasks.get(id)?.status ?? 'gone'}`);
    await this.d.host.sendAndCommit(actorIdOf(id), event, causedBy(cause));
  }

  private onFact(e: Envelope): void {
    const id = e.stream.slice('task:'.length);
    const next = evolveTask(this.tasks.get(id) ?? null, e);
    if (!next || next.deleted) this.tasks.delete(id);
    else this.tasks.set(id, next);
    this.writeFile();
  }

  private writeFile(): void {
    try {
      writeJsonAtomicSync(this.d.paths.tasksFile, [...this.tasks.values()].map(recordOf), { mode: 0o600 });
    } catch (e) {
      this.bus().emitLog('error', `tasks.json not written: ${describeError(e)}`);
    }
  }

  /** The chat the task reports to: the one given, else the parent's most recently active chat, else its inter-agent conversation. */
  private async parentChat(sub: Pick<TaskSubmission, 'from' | 'chat_id' | 'topic_id' | 'transport'>): Promise<{ transport: string; chat_id: number; topic_id: number | null }> {
    const sessions = (await this.d.bus.send(AGENT_COMMANDS.sessions, { principal: SYSTEM }).catch(() => []))
      .filter((x) => x.agent === sub.from && !x.key.startsWith('task:'))
      .sort((a, b) => b.last_active.localeCompare(a.last_active));
    if (sub.chat_id === null) {
      const latest = sessions[0];
      return latest ? { transport: latest.transport, chat_id: latest.chat_id, topic_id: latest.topic_id } : NO_CHAT;
    }
    const same = sessions.find((x) => x.chat_id === sub.chat_id && (sub.transport === null || x.transport === sub.transport));
    return { transport: sub.transport ?? same?.transport ?? NO_CHAT.transport, chat_id: sub.chat_id, topic_id: sub.topic_id };
  }

  private enqueue(id: string, text: string): void {
    this.runs.delete(id);
    this.runs.set(id, { chatId: this.known(id).chat_id, text, started: false });
    this.pump();
  }

  /** Starts queued runs, oldest first, while their chat has fewer than `max_parallel` running. */
  private pump(): void {
    if (this.stopped) return;
    const max = this.d.config().tasks.max_parallel;
    for (const [id, run] of this.runs) {
      if (run.started) continue;
      const busy = [...this.runs.values()].filter((r) => r.started && r.chatId === run.chatId).length;
      if (busy >= max) continue;
      run.started = true;
      this.startRun(id, run);
    }
  }

  private startRun(id: string, run: Run): void {
    const s = this.known(id);
    const task: TaskRun = {
      task_id: id,
      folder: this.folderOf(id),
      provider: (s.provider as TaskRun['provider']) ?? null,
      model: s.model,
      resume_session_id: s.session_id,
    };
    const asked = agentsOf(this.d.bus).ask(
      { agent: s.agent, transport: s.transport, chat_id: s.chat_id, topic_id: s.topic_id, text: run.text, kind: 'task', task },
      this.principalOf(s),
      { requestId: `task:${id}` },
    );
    asked.outcome.then(
      (o) => this.runEnded(id, run, o),
      (e: unknown) => this.runEnded(id, run, e),
    );
  }

  private runEnded(id: string, run: Run, result: TurnOutcome | unknown): void {
    if (this.runs.get(id) === run) this.runs.delete(id);
    if (this.stopped) return;
    // A question still open hears "no answer" once the end is recorded, so its reply names the status the task ended in.
    const unanswered = () => {
      this.questions.get(id)?.(null);
      this.questions.delete(id);
    };
    const event = endEvent(result, this.nowS());
    const actor = this.d.host.get<typeof taskMachine>(actorIdOf(id));
    if (actor?.getSnapshot().can(event)) {
      void this.d.host
        .sendAndCommit(actorIdOf(id), event, { correlation: `task:${id}` })
        .then(() => {
          unanswered();
          const s = this.tasks.get(id);
          if (s) this.deliver(s, 'task_result', s.result ?? '');
        })
        .catch((e: unknown) => {
          unanswered();
          this.bus().emitLog('error', `task ${id}: the end of its run was not recorded: ${describeError(e)}`, { task_id: id });
        });
    } else unanswered();
    this.pump();
  }

  /**
   * The parent hears of a result or a question twice over: a `chat_message` envelope in its admin
   * chat, and a turn in the task's origin chat so the agent itself knows (its reply is kept as a
   * `text` envelope beside it).
   */
  private deliver(s: TaskState, kind: 'task_result' | 'task_question', content: string): void {
    const text =
      kind === 'task_result'
        ? `[Task "${s.name}" (${s.task_id}) ${s.status === 'done' ? 'finished' : `ended: ${s.status}${s.reason ? `, ${s.reason}` : ''}`}]\n\n${content}\n\n(Resume it with resume_task.py ${s.task_id} "<prompt>"; delete it with delete_task.py ${s.task_id}.)`
        : `[Task "${s.name}" (${s.task_id}) asks]\n\n${content}\n\n(Answer with resume_task.py ${s.task_id} "<answer>"; the task waits for it.)`;
    this.deliverToParent({
      agent: s.parent_agent,
      where: { transport: s.transport, chat_id: s.chat_id, topic_id: s.topic_id },
      principal: this.principalOf(s),
      correlation: `task:${s.task_id}`,
      envelope: { kind, id: `task-${s.task_id}-${s.runs}-${kind === 'task_result' ? 'result' : `q${this.d.bus.now()}`}`, content, meta: { task_id: s.task_id, task_name: s.name, status: s.status } },
      turnText: text,
    });
  }

  /**
   * The one way a background result reaches the agent that asked for it (a task's parent, an
   * async inter-agent caller): the envelope in its admin chat, a turn in the chat it names, and
   * that turn's reply kept as a `text` envelope (its id the envelope's plus `-reply`).
   */
  deliverToParent(p: ParentDelivery): void {
    const { bus } = this.d;
    const envelope = (kind: string, content: string, id: string) =>
      recordChatEnvelope(bus, { agent: p.agent, id, kind, content, meta: p.envelope.meta, correlation: p.correlation })
        .catch((e: unknown) => this.bus().emitLog('warn', `${p.correlation}: ${kind} not kept in the chat: ${describeError(e)}`));
    void envelope(p.envelope.kind, p.envelope.content, p.envelope.id);
    const asked = agentsOf(bus).ask({ agent: p.agent, ...p.where, text: p.turnText, kind: 'background' }, p.principal);
    asked.outcome.then(
      (o) => (o.text.trim() ? this.sayInChat(p, o.text, envelope) : undefined),
      (e: unknown) => this.bus().emitLog('warn', `${p.correlation}: ${p.agent} was not told: ${describeError(e)}`),
    );
  }

  /**
   * The parent's reply, said where the work came from: a messenger or direct-API chat through
   * `chat.deliver` (the admin chat when that chat cannot be reached now); the admin chat, and work
   * with no chat of its own, keep it as a `text` envelope beside the result.
   */
  private sayInChat(p: ParentDelivery, text: string, envelope: (kind: string, content: string, id: string) => Promise<unknown>): Promise<unknown> {
    if (p.where.transport === 'admin' || p.where.transport === NO_CHAT.transport) return envelope('text', text, `${p.envelope.id}-reply`);
    return this.d.bus
      .send(CHAT_DELIVERY_COMMANDS.deliver, { ...p.where, text, agent: p.agent, source: p.correlation.slice(0, 128), id: `${p.envelope.id}-reply` }, { correlation: p.correlation })
      .catch((e: unknown) => this.bus().emitLog('warn', `${p.correlation}: the reply of ${p.agent} was not said in its chat: ${describeError(e)}`));
  }

  /**
   * An async inter-agent result (`/interagent/send_async`) goes to the caller the way a task's
   * result goes to its parent: where `reply_to` says, else the chat the call named, else the
   * caller's latest chat; `silent` keeps it in the log only.
   */
  private async onInteragentCompleted(e: Envelope): Promise<void> {
    const done = e.data as EventPayload<typeof INTERAGENT_EVENTS.completed>;
    const req = this.d.log.read({ stream: e.stream, types: [INTERAGENT_EVENTS.requested] })[0]?.data as EventPayload<typeof INTERAGENT_EVENTS.requested> | undefined;
    if (!req || req.silent === true) return;
    const to = req.reply_to ?? null;
    const where = await this.parentChat({ from: done.from, chat_id: to ? to.chat_id : req.chat_id, topic_id: to ? (to.topic_id ?? null) : req.topic_id, transport: to?.transport ?? null });
    const head = done.success
      ? `[Reply from agent "${done.to}" to your async request ${done.task_id}]`
      : `[Agent "${done.to}" did not answer your async request ${done.task_id}: ${done.error ?? 'failed'}]`;
    this.deliverToParent({
      agent: done.from,
      where,
      principal: principalFor(this.d, done.from, req.caller_user_id, req.caller_role, where),
      correlation: e.correlation ?? e.stream,
      envelope: {
        kind: 'interagent',
        id: `interagent-${done.task_id}`.slice(0, 120).replace(/[^A-Za-z0-9._:-]/g, '_'),
        content: done.success ? done.text : (done.error ?? done.text),
        meta: { task_id: done.task_id, from: done.from, to: done.to, success: done.success },
      },
      turnText: `${head}\n\n${done.text}`,
    });
  }

  /** The task runs for the person its creator acted for, with the role its creator had; a user removed since runs as a viewer would. */
  private principalOf(s: TaskState): Principal {
    return principalFor(this.d, s.parent_agent, s.caller_user, s.caller_role, { transport: s.transport, chat_id: s.chat_id, topic_id: s.topic_id });
  }

  /** The last provider session each task's runs reported in their turn facts (their correlation is `task:<id>`). */
  private sessionsFromTurns(): Map<string, { provider: string; session_id: string }> {
    const provider = new Map<string, string>();
    const out = new Map<string, { provider: string; session_id: string }>();
    for (const e of this.d.log.read({ streamPrefix: 'turn:', types: TURN_ENDS })) {
      if (!e.correlation?.startsWith('task:')) continue;
      const d = e.data as { provider?: string; session_id?: string | null };
      if (e.type === TURN_EVENTS.started && typeof d.provider === 'string') provider.set(e.stream, d.provider);
      else if (typeof d.session_id === 'string' && d.session_id && provider.has(e.stream)) out.set(e.correlation.slice(5), { provider: provider.get(e.stream)!, session_id: d.session_id });
    }
    return out;
  }
}

/**
 * The agent, acting for the person it acted for when it asked, with no more than the role that
 * call was authenticated with (`callerRole`) nor the role that person has now (a user removed
 * since acts as a viewer would). Work started by a call runs with the rights of whoever made it:
 * a token-less legacy caller was a viewer, so its task, its result's wake turn and an async
 * reply's wake turn are too. Facts older than `caller_role` lack it: then a call without a
 * person was the framework's (admin), unless the agent is a token-less registry entry, whose calls
 * proved nothing.
 */
function principalFor(
  d: Pick<TaskHubDeps, 'users' | 'registry'>,
  agent: string,
  callerUser: string | null,
  callerRole: Role | null | undefined,
  origin: { transport: string; chat_id: number; topic_id: number | null },
): Principal {
  const recorded = callerRole === undefined ? (tokenless(d.registry(), agent) ? 'viewer' : 'admin') : callerRole;
  if (callerUser === null) return { kind: 'agent', id: agent, acting_for: null, role: recorded, allowed_agents: [], origin };
  const user = d.users().find((u) => u.username === callerUser && u.active);
  const now = user ? user.role : 'viewer';
  return { kind: 'agent', id: agent, acting_for: callerUser, role: recorded === null ? now : leastPrivileged(recorded, now), allowed_agents: user ? user.allowed_agents : [], origin };
}

/** A sub-agent whose registry entry has no `interagent_token` (or no entry at all): nothing proves who made its calls. */
function tokenless(registry: readonly SubAgentConfig[], agent: string): boolean {
  if (agent === MAIN_AGENT) return false;
  const token = registry.find((r) => r.name === agent)?.interagent_token;
  return typeof token !== 'string' || token === '';
}

function actorIdOf(id: string): string {
  return `task:${id}`;
}

function firstLine(text: string): string {
  const line = text.trim().split('\n')[0]!.trim();
  return line.length > 60 ? `${line.slice(0, 57)}...` : line;
}

/** How a run's end is told to the task machine. */
function endEvent(result: TurnOutcome | unknown, now: number): TaskMachineEvent {
  if (result && typeof result === 'object' && 'status' in result && 'request_id' in result) {
    const o = result as TurnOutcome;
    const run = { provider: o.provider, model: o.model, session_id: o.session_id, now };
    if (o.status === 'completed' && !o.is_error) return { type: 'complete', result: o.text, ...run };
    const reason = o.status === 'timed_out' ? 'timeout' : o.status === 'aborted' ? 'aborted' : (o.reason ?? 'error');
    return { type: 'fail', reason, result: o.text, ...run };
  }
  const code = isSvcError(result) ? result.code : 'internal-error';
  const text = result instanceof SvcError ? result.message : 'internal error';
  return { type: 'fail', reason: code, result: text, provider: null, model: null, session_id: null, now };
}

/** tasks.json's entry (SPEC.md "Task records"; `thread_id` is the origin topic). */
function recordOf(s: TaskState) {
  return {
    task_id: s.task_id,
    status: s.status,
    name: s.name,
    parent_agent: s.parent_agent,
    agent: s.agent,
    transport: s.transport,
    chat_id: s.chat_id,
    thread_id: s.topic_id,
    session_id: s.session_id,
    provider: s.provider,
    model: s.model,
    prompt: s.prompt,
    description: s.question,
    result: s.result,
    reason: s.reason,
    question: s.question,
    runs: s.runs,
    created_at: s.created_at,
    finished_at: s.finished_at,
    // Left to the reader (taskView), which counts a running task's time up to now.
    elapsed_seconds: null,
  };
}
