// Longer than 450 lines: the composition of an agent's chats (lanes, commands, decider, launcher) plus
// what spans sessions — the model in force, the CLI-slot queue, /stop's bookkeeping — which its parts share.
import { randomUUID } from 'node:crypto';
import { readlinkSync } from 'node:fs';
import { toPromise, type Actor, type ActorRefFrom } from 'xstate';
import { turnStreamOf, type Bus, type TurnStream } from '../../bus/index.js';
import {
  SHUTDOWN_ABORT,
  ageWarningOnRecord,
  expiryRulesFromConfig,
  foldSession,
  looksLikeCommand,
  type agentMachine,
  promptOf,
  resolveModel,
  resolveProviderForModel,
  resolveTimezone,
  sessionIdFor,
  sessionKey,
  sessionStream,
  turnMachine,
  type sessionMachine,
  type ChatCommand,
  type SessionCommand,
  type SessionState,
} from '../../machines/index.js';
import { SvcError, TASK_COMMANDS, TURN_CHUNKS, taskSessionKey, type AgentConfig, type AgentMessage, type Principal, type TurnChunkBase, type TurnOutcome, type UserRecord } from '../../schemas/index.js';
import type { EventLog, HomePaths } from '../../store/index.js';
import type { ActorClock, ActorHost } from '../host/actor-host.js';
import { ChatCommands } from './chat-commands.js';
import { queuedStatus, type CliSlot, type CliSlots } from './cli-slots.js';
import type { ProviderId } from '../providers/provider.js';
import { SessionLanes } from './session-lanes.js';
import { TurnLauncher } from './turn-launcher.js';
import { answerWorkflowCommand } from '../workflows/workflow-chat.js';

export interface AgentRuntimeDeps {
  bus: Bus;
  host: ActorHost;
  log: EventLog;
  paths: HomePaths;
  name: string;
  isMain: boolean;
  workspace: string;
  /** The agent's effective config, live (hot reload). */
  config: () => AgentConfig;
  users: () => UserRecord[];
  hostEnv: NodeJS.ProcessEnv;
  discoveredGemini: () => string[];
  /** Handed to the CLI as SVC_INTERAGENT_TOKEN so its tool scripts can call other agents. */
  interagentToken: () => string | null;
  /** See TurnLauncherDeps.toolEnv. */
  toolEnv?: () => Record<string, string>;
  /** Persist a `/model` change: config.json for main, the registry entry for a sub-agent. */
  saveModel: (model: string, provider: string) => void;
  /** `/retry`: the prompt of this chat's last answer a restart cut off, handed out once; null if none. */
  takeRetry?: (sessionKey: string, requestId: string) => Promise<string | null>;
  /** `/agent_restart <name>`: restarts that agent (see ChatCommandDeps.restartAgent). */
  restartAgent?: (name: string) => Promise<'unknown' | 'restarted' | 'not-started'>;
  /** A turn svc's own shutdown cut off (its chat is told on the next start). */
  onCut?: (turn: { stream: string; agent: string; sessionKey: string; text: string }) => Promise<void>;
  /**
   * The one place a message can be taken before it becomes a turn: a workflow run waiting for this
   * chat's reply (WorkflowEngine.takeReply). Consulted for plain foreground messages only; a
   * promise of the acknowledgement text when taken, null to queue the message as usual.
   */
  intercept?: (msg: AgentMessage) => Promise<string> | null;
  /** The daemon-wide bound on running CLIs, shared by every agent; absent: no bound. */
  cliSlots?: CliSlots;
  graceMs?: number;
  clock?: ActorClock;
}

/** A message waiting in its session's lane, with the chat command it is (parsed once, on arrival). */
interface Queued {
  msg: AgentMessage;
  cmd: ChatCommand | null;
  /** Not a message: ends the session (`DELETE /api/sessions/{id}`) once what runs in it has stopped. */
  end?: true;
}

interface ActiveTurn {
  actor: Actor<typeof turnMachine>;
  request_id: string;
  chat_id: number;
  session_key: string;
}

/**
 * Runs one agent's chats by composing its parts: SessionLanes (one turn at a time per session key),
 * ChatCommands, the session decider (whose facts let a restart continue each provider session where
 * it was) and TurnLauncher. Itself it holds what spans sessions: the model in force, the CLI-slot
 * queue and the per-chat abort bookkeeping that `/stop` and `stop()` act on.
 */
export class AgentRuntime {
  private readonly lanes = new SessionLanes<Queued, TurnOutcome>((q, key) => this.track(this.process(q, key)));
  /** Messages taken off their lane and not yet answered: stop() waits for them to record their session facts. */
  private readonly inFlight = new Set<Promise<unknown>>();
  private readonly commands: ChatCommands;
  private readonly launcher: TurnLauncher;
  private readonly active = new Map<string, ActiveTurn>();
  private pendingModel: { model: string; provider: string } | null = null;
  /** Messages taken off their lane and still preparing a turn (session facts, files): request → chat. */
  private readonly preparing = new Map<string, number>();
  /** Turns waiting for a CLI slot: request → chat, and the place in the queue an abort gives up. */
  private readonly queued = new Map<string, { chat_id: number; session_key: string; slot: CliSlot }>();
  /** Bumped by each abort of a chat, so preparation that outlives an abort does not start its turn. */
  private readonly abortEpoch = new Map<number, number>();
  /** Bumped by each end of a session (DELETE /api/sessions), for the same reason. */
  private readonly endEpoch = new Map<string, number>();
  private stopped = false;
  private readonly out: TurnStream;

  constructor(private readonly d: AgentRuntimeDeps) {
    this.out = turnStreamOf(d.bus);
    this.launcher = new TurnLauncher({
      bus: d.bus,
      out: this.out,
      host: d.host,
      paths: d.paths,
      name: d.name,
      workspace: d.workspace,
      hostEnv: d.hostEnv,
      interagentToken: d.interagentToken,
      ...(d.toolEnv ? { toolEnv: d.toolEnv } : {}),
      ...(d.graceMs !== undefined ? { graceMs: d.graceMs } : {}),
      ...(d.clock ? { clock: d.clock } : {}),
    });
    this.commands = new ChatCommands({
      currentModel: () => this.currentModel(),
      setModel: (model, provider) => {
        d.saveModel(model, provider);
        this.pendingModel = { model, provider };
      },
      discoveredGemini: d.discoveredGemini,
      resetSession: async (msg, key, reason) => {
        await this.runSessionCommand(msg, key, { type: 'reset', where: this.where(msg, key), reason, now: d.bus.now() });
      },
      abortChat: (chatId) => this.abort(chatId),
      ...(d.takeRetry ? { takeRetry: d.takeRetry } : {}),
      ...(d.restartAgent ? { restartAgent: d.restartAgent } : {}),
      workflow: (msg, arg) => answerWorkflowCommand(d.bus, msg, arg),
      tasksEnabled: () => d.config().tasks.enabled,
      taskSelector: (req, correlation) => d.bus.send(TASK_COMMANDS.selector, req, { correlation }),
    });
    // Sessions come back as children of the agent's actor, each with the state its stream folds to.
    d.host.restoreChildren(d.log, this.actorId, {
      streamPrefix: `session:${d.name}:`,
      fold: (_stream, events) => {
        const state = foldSession(events);
        return state ? { type: 'session.restore', key: state.key, state } : null;
      },
    });
  }

  /** The agent's actor (spawned by the supervisor before this runtime): it owns one child per session. */
  private get actorId(): string {
    return `agent:${this.d.name}`;
  }

  private sessionActor(key: string): ActorRefFrom<typeof sessionMachine> | undefined {
    const agent = this.d.host.get<typeof agentMachine>(this.actorId);
    return agent?.getSnapshot().children[key] as ActorRefFrom<typeof sessionMachine> | undefined;
  }

  get name(): string {
    return this.d.name;
  }

  /** The model in force: a fresh `/model` wins until config.json (or the registry) catches up. */
  currentModel(): { model: string; provider: string } {
    const cfg = this.d.config();
    if (this.pendingModel && cfg.model === this.pendingModel.model) this.pendingModel = null;
    return this.pendingModel ?? { model: cfg.model, provider: resolveProviderForModel(cfg.model, this.d.discoveredGemini()) };
  }

  /** The sessions this agent holds, with whether a turn runs or waits in each. */
  sessions(): { state: SessionState; busy: boolean }[] {
    const agent = this.d.host.get<typeof agentMachine>(this.actorId);
    if (!agent) return [];
    const out: { state: SessionState; busy: boolean }[] = [];
    for (const child of Object.values(agent.getSnapshot().children)) {
      const state = (child as ActorRefFrom<typeof sessionMachine>).getSnapshot().context.state;
      if (state) out.push({ state, busy: this.lanes.busy(state.key) });
    }
    return out;
  }

  /**
   * Ends one session: its running turn is killed, what waits behind it is cancelled, and the end
   * is queued in its lane so it follows the killed turn's record. How many turns were killed.
   */
  async endSession(key: string, principal: Principal, requestId: string): Promise<number> {
    if (this.stopped) throw new SvcError('agent-stopped', `agent ${this.d.name} is not running`);
    const state = this.sessionActor(key)?.getSnapshot().context.state;
    if (!state) throw new SvcError('not-found', `agent ${this.d.name} has no session ${key}`);
    let killed = 0;
    for (const [turnId, turn] of this.active) {
      if (turn.session_key !== key) continue;
      this.abortRunning(turnId, 'user');
      killed++;
    }
    // One still preparing or waiting for a CLI slot never starts its CLI in the ending session.
    this.endEpoch.set(key, (this.endEpoch.get(key) ?? 0) + 1);
    for (const q of this.queued.values()) if (q.session_key === key) q.slot.cancel();
    this.lanes.drop(
      (_q, k) => k === key,
      (q) => this.commands.reply(q.msg, 'Cancelled: the session was ended.', 'aborted', 'aborted'),
    );
    const msg: AgentMessage = { request_id: requestId, agent: this.d.name, transport: state.transport, chat_id: state.chat_id, topic_id: state.topic_id, text: '', principal, kind: 'foreground' };
    await this.lanes.enqueue(key, { msg, cmd: null, end: true });
    return killed;
  }

  sessionCount(): number {
    const agent = this.d.host.get<typeof agentMachine>(this.actorId);
    return agent ? Object.keys(agent.getSnapshot().children).length : 0;
  }

  /**
   * Queues a message on its session key (the only place turns are ordered) and returns the outcome
   * to come; throws, queueing nothing, when the message is refused.
   */
  accept(msg: AgentMessage, cmd: ChatCommand | null): { outcome: Promise<TurnOutcome> } {
    const now = this.commands.immediate(cmd, msg);
    if (now) return { outcome: now };
    if (this.stopped) throw new SvcError('agent-stopped', `agent ${this.d.name} is not running`);
    if (cmd === null) promptOf(msg.text);
    if (cmd === null && msg.kind === 'foreground' && !looksLikeCommand(msg.text)) {
      const taken = this.d.intercept?.(msg);
      if (taken) return { outcome: taken.then((text) => this.commands.reply(msg, text)) };
    }
    const key = msg.task ? taskSessionKey(msg.task.task_id) : sessionKey(msg.transport, msg.chat_id, msg.topic_id);
    return { outcome: this.lanes.enqueue(key, { msg, cmd }) };
  }

  /** Chat-scoped: kills the running turns of `chat_id` on every topic and drops what was queued behind them. */
  abort(chatId: number): number {
    let killed = 0;
    this.abortEpoch.set(chatId, (this.abortEpoch.get(chatId) ?? 0) + 1);
    for (const chat of this.preparing.values()) if (chat === chatId) killed++;
    for (const q of this.queued.values()) if (q.chat_id === chatId) q.slot.cancel();
    for (const [turnId, turn] of this.active) {
      if (turn.chat_id !== chatId) continue;
      this.abortRunning(turnId, 'user');
      killed++;
    }
    // A queued session end is not the chat's work: it still ends the session.
    this.lanes.drop((q) => q.msg.chat_id === chatId && !q.end, (q) => this.commands.reply(q.msg, 'Cancelled by /stop.', 'aborted'));
    return killed;
  }

  /**
   * Ends one running turn, named by its id or by its request, recording `cause`: unlike `abort`, the
   * chat's other turns and what waits behind this one carry on. How many turns were ended (0 or 1).
   */
  abortTurn(target: { turn_id?: string; request_id?: string }, cause: string): number {
    for (const [turnId, turn] of this.active) {
      if (turnId !== target.turn_id && turn.request_id !== target.request_id) continue;
      this.abortRunning(turnId, cause);
      return 1;
    }
    return 0;
  }

  /**
   * Stop taking messages, end every running turn (killing its process group), fail what was queued.
   * `cause` is recorded on the aborted turns: `shutdown` (svc stopping) marks them as cut off by a
   * restart, owed a notice and a /retry; resolves once `onCut` has been told of each.
   */
  async stop(cause: string = SHUTDOWN_ABORT): Promise<void> {
    this.stopped = true;
    for (const q of this.queued.values()) q.slot.cancel();
    this.lanes.failAll(new SvcError('agent-stopped', `agent ${this.d.name} stopped`));
    const running = [...this.active.entries()].map(async ([turnId, t]) => {
      this.abortRunning(turnId, cause);
      const r = await toPromise(t.actor).catch(() => null);
      // Only a turn this stop ended is owed a notice and a /retry: one a user's /stop was already
      // ending keeps that cause, and an agent restarted in place records its own.
      const cutByShutdown = t.actor.getSnapshot().context.abortCause === SHUTDOWN_ABORT;
      if (r?.status === 'aborted' && cutByShutdown) await this.d.onCut?.({ stream: `turn:${turnId}`, agent: this.d.name, sessionKey: t.session_key, text: r.text });
    });
    await Promise.all(running);
    // What was taken off a lane finishes (recording its session facts on the agent's actor) before
    // the supervisor stops that actor; each ends promptly now that the agent is stopped.
    await Promise.allSettled([...this.inFlight]);
  }

  /**
   * An abort is one of the turn's inputs: sent through the host, it is journaled on the turn's
   * stream, so replay re-drives the turn into the `turn.aborted` the log holds (sent to the actor
   * directly, the journal showed only the killed CLI, which the machine reads as a failure). A turn
   * whose actor has already ended takes no input.
   */
  private abortRunning(turnId: string, reason: string): void {
    const id = `turn:${turnId}`;
    if (this.d.host.get(id)) this.d.host.send(id, { type: 'abort', reason });
  }

  private track<T>(p: Promise<T>): Promise<T> {
    this.inFlight.add(p);
    void p.finally(() => this.inFlight.delete(p)).catch(() => undefined);
    return p;
  }

  /**
   * Hands one session command to the session's actor (which runs the decider and emits its facts)
   * with the message's correlation, and waits until those facts are committed.
   */
  private async runSessionCommand(msg: AgentMessage, key: string, command: SessionCommand): Promise<SessionState | null> {
    const committed = this.d.host.sendAndCommit(this.actorId, { type: 'session', key, command }, { correlation: msg.request_id });
    const decided = this.sessionActor(key)?.getSnapshot().context;
    await committed.catch((e: unknown) => {
      // The session moved on facts the log lacks: set it back to what the log says before failing.
      const state = foldSession(this.d.log.read({ stream: sessionStream(this.d.name, key) }));
      if (this.d.host.get(this.actorId)) this.d.host.send(this.actorId, { type: 'session.restore', key, state });
      throw e;
    });
    if (!decided) throw new SvcError('agent-stopped', `agent ${this.d.name} is not running`);
    if (decided.refused) throw new SvcError(decided.refused.code, decided.refused.message);
    return decided.state;
  }

  private where(msg: AgentMessage, key: string) {
    return { agent: this.d.name, key, transport: msg.transport, chat_id: msg.chat_id, topic_id: msg.topic_id };
  }

  private async process({ msg: sent, cmd, end }: Queued, key: string): Promise<TurnOutcome> {
    if (end) {
      await this.runSessionCommand(sent, key, { type: 'end', reason: 'terminated', now: this.d.bus.now() });
      return this.commands.reply(sent, 'Session ended.');
    }
    const answer = await this.commands.inLane(cmd, sent, key);
    if (answer && 'outcome' in answer) return answer.outcome;
    const msg = answer?.turn ?? sent;

    this.preparing.set(msg.request_id, msg.chat_id);
    const epoch = { chat: this.abortEpoch.get(msg.chat_id) ?? 0, session: this.endEpoch.get(key) ?? 0 };
    const turnId = randomUUID();
    const slot = await this.cliSlot(msg, key, turnId);
    try {
      if (!slot) {
        // Never started, so nothing to recover or retry later: the sender is told to send it again.
        if (this.stopped) return this.commands.reply(msg, `${this.d.name} stopped before this message could start; send it again.`, 'aborted', 'agent-stopped');
        return this.commands.reply(msg, 'Cancelled by /stop.', 'aborted', 'aborted');
      }
      return await this.runTurn(msg, key, epoch, turnId);
    } finally {
      slot?.release();
      this.preparing.delete(msg.request_id);
    }
  }

  /**
   * Waits for a place under `max_concurrent_cli`; the client is told while it waits. Null when the
   * turn was aborted (or the agent stopped) before its CLI could start.
   */
  private async cliSlot(msg: AgentMessage, key: string, turnId: string): Promise<CliSlot | null> {
    // An inter-agent call is made from inside a running turn that holds a slot and waits for this
    // one: queueing it behind the bound could wait on itself (max_concurrent_cli = 1 deadlocks).
    if (this.stopped) return null;
    const slot = msg.kind === 'interagent' ? undefined : this.d.cliSlots?.acquire();
    if (!slot) return { granted: Promise.resolve(true), queued: null, release: () => undefined, cancel: () => undefined };
    if (!slot.queued) return slot;
    const base: TurnChunkBase = { request_id: msg.request_id, turn_id: turnId, agent: this.d.name, session_key: key, transport: msg.transport, chat_id: msg.chat_id, topic_id: msg.topic_id };
    const status = (text: string | null) => this.out.chunk({ stream: `turn:${turnId}`, type: TURN_CHUNKS.system_status, data: { ...base, status: text } });
    this.queued.set(msg.request_id, { chat_id: msg.chat_id, session_key: key, slot });
    status(queuedStatus(slot.queued));
    const granted = await slot.granted;
    this.queued.delete(msg.request_id);
    if (!granted) return null;
    status(null);
    return slot;
  }

  private async runTurn(msg: AgentMessage, key: string, epoch: { chat: number; session: number }, turnId: string): Promise<TurnOutcome> {
    const config = this.d.config();
    // Checked again: `/retry` replaced the text after it was accepted.
    const { prompt, directive } = promptOf(msg.text);

    const resumeOnly = msg.resume_only === true;
    // Refused before the session's actor is made: a chat without a session keeps having none.
    if (resumeOnly && !this.sessionActor(key)?.getSnapshot().context.state) throw new SvcError('no-session', `resume-only turn in ${key}: there is no session; a new session is not started for it`);
    const session = (await this.runSessionCommand(msg, key, {
      type: 'begin-turn',
      where: this.where(msg, key),
      freshAsked: msg.new_session === true,
      rules: expiryRulesFromConfig(config, this.timezone(config.user_timezone)),
      now: this.d.bus.now(),
      ...(resumeOnly ? { resumeOnly } : {}),
    }))!;

    const current = this.currentModel();
    let { model } = resolveModel({
      directive: directive.model ?? null,
      topicId: msg.topic_id,
      topicDefaults: config.topic_defaults,
      configModel: current.model,
    });
    let provider = resolveProviderForModel(model, this.d.discoveredGemini()) as ProviderId;
    let resume = sessionIdFor(session.providerSessions, provider);
    const task = msg.task;
    if (task) {
      // A task's overrides win; a provider chosen without a model runs that provider's default ('').
      if (task.model !== null) model = task.model;
      else if (task.provider !== null && task.provider !== provider) model = '';
      provider = (task.provider ?? resolveProviderForModel(model, this.d.discoveredGemini())) as ProviderId;
      // The task's facts know its conversation; its session's expiry rules (idle, daily reset) do not apply.
      resume = task.resume_session_id;
    }
    // A new conversation with this provider would be a new session in all but name.
    if (resumeOnly && resume === null) throw new SvcError('no-session', `resume-only turn in ${key}: the session holds no ${provider} conversation; a new one is not started for it`);
    // Also when the agent stopped meanwhile: a turn still preparing is in no list stop() ends.
    if (this.stopped || (this.abortEpoch.get(msg.chat_id) ?? 0) !== epoch.chat || (this.endEpoch.get(key) ?? 0) !== epoch.session) {
      return this.commands.reply(msg, 'Cancelled by /stop.', 'aborted', 'aborted');
    }
    this.preparing.delete(msg.request_id);
    const { actor, result: done } = this.launcher.launch({
      msg, key, turnId, config, prompt, provider, model, resume, messageNumber: session.messageCount + 1,
      ...(task ? { cwd: task.folder } : {}),
      ...(task?.reasoning_effort ? { effort: task.reasoning_effort } : {}),
      // The provider resolved above, so a run naming only a model gets that model's provider's flags.
      ...(task?.cli_parameters ? { cliParameters: task.cli_parameters[provider] ?? [] } : {}),
    });
    this.active.set(turnId, { actor, request_id: msg.request_id, chat_id: msg.chat_id, session_key: key });
    const result = await done.finally(() => this.active.delete(turnId));

    const endedAt = this.d.bus.now();
    const warn = ageWarningOnRecord(session, endedAt, config.session_age_warning_hours);
    await this.runSessionCommand(msg, key, {
      type: 'record-turn',
      turn_id: turnId,
      provider,
      session_id: result.session_id,
      session_reset: result.session_reset,
      warningHours: config.session_age_warning_hours,
      now: endedAt,
    });

    let text = result.status === 'completed' || result.text ? result.text : result.error ?? '';
    if (warn && result.status === 'completed') {
      text += `\n\n(This session is over ${config.session_age_warning_hours} hours old; send /new to start a fresh one.)`;
    }
    return {
      request_id: msg.request_id,
      turn_id: turnId,
      agent: this.d.name,
      session_key: key,
      status: result.status,
      text,
      is_error: result.is_error,
      stream_fallback: result.stream_fallback,
      files: result.files,
      provider,
      model,
      session_id: result.session_id,
      usage: result.usage,
      cost_usd: result.cost_usd,
      duration_ms: result.duration_ms,
      reason: result.reason,
      exit_code: result.exit_code ?? null,
    };
  }

  /** Resolving builds Intl formatters (milliseconds each): do it once per configured value. */
  private tz: { configured: string; zone: string } | null = null;
  private timezone(configured: string): string {
    if (this.tz?.configured !== configured) {
      this.tz = { configured, zone: resolveTimezone(configured, this.d.hostEnv.TZ ?? null, hostZone()) };
    }
    return this.tz.zone;
  }
}

/** POSIX hosts name their zone by the `/etc/localtime` symlink (resolveTimezone reads the zoneinfo path). */
export function hostZone(): string | null {
  try {
    return readlinkSync('/etc/localtime');
  } catch {
    return null;
  }
}
