import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Subscription } from 'rxjs';
import { causedBy, serveAgents, type Bus } from '../../bus/index.js';
import { SHUTDOWN_ABORT, agentAccess, agentMachine, effectiveSubAgentConfig, parseChatCommand, resolveProviderForModel, sessionStream, visibleAgents } from '../../machines/index.js';
import {
  AGENT_COMMANDS,
  MAIN_AGENT,
  REGISTRY_EVENTS,
  SvcError,
  describeError,
  type AbortOutcome,
  type AgentAbort,
  type AgentConfig,
  type AgentList,
  type AgentTurnAbort,
  type SessionEnd,
  type SessionList,
  type SessionSummary,
  type AgentMessage,
  type AgentSummary,
  type SubAgentConfig,
  type TurnOutcome,
  type UserRecord,
} from '../../schemas/index.js';
import {
  agentHomeRoot,
  initWorkspace,
  installSandboxHook,
  loadRegistry,
  saveRegistry,
  setConfigFields,
  type EventLog,
  type HomePaths,
} from '../../store/index.js';
import type { ActorClock, ActorHost } from '../host/actor-host.js';
import { AgentRuntime } from './agent-runtime.js';
import { CliSlots } from './cli-slots.js';
import { InterruptedTurns } from '../recovery/interrupted-turns.js';
import { notifyInterrupted, recoverOrphanTurns } from '../recovery/turn-recovery.js';

export interface SupervisorDeps {
  bus: Bus;
  host: ActorHost;
  log: EventLog;
  paths: HomePaths;
  mainConfig: () => AgentConfig;
  /** The registry as last validated (the registry actor's view). */
  registry: () => SubAgentConfig[];
  users: () => UserRecord[];
  mainAgentToken: () => string | null;
  hostEnv: NodeJS.ProcessEnv;
  /** Gemini model ids found in the installed CLI (provider resolution for a model id). */
  discoveredGemini: () => string[];
  /** See AgentRuntimeDeps.intercept; every agent's runtime consults the same one. */
  intercept?: (msg: AgentMessage) => Promise<string> | null;
  /** See TurnLauncherDeps.toolEnv. */
  toolEnv?: () => Record<string, string>;
  graceMs?: number;
  clock?: ActorClock;
}


/**
 * Owns every agent: the main one and one per registry entry. Serves the agent contract
 * (`agent.message`, `agent.abort`, `agent.list`), deciding there — whatever surface sent the
 * command — whether its principal may use the agent (allowed_agents, can_call); and follows the registry's facts: a new entry
 * starts an agent, a removed one stops it, a transport/token change restarts it.
 */
export class AgentSupervisor {
  private readonly runtimes = new Map<string, AgentRuntime>();
  /** Agents whose runtime is stopping (turns ending, facts recording) and whose actor still exists. */
  private readonly stopping = new Map<string, Promise<void>>();
  private readonly subs: Subscription[] = [];
  private readonly interrupted: InterruptedTurns;
  /** One bound for every agent's CLIs; the main config's value, re-read per admission (hot reload). */
  readonly cliSlots = new CliSlots(() => this.d.mainConfig().max_concurrent_cli);

  constructor(private readonly d: SupervisorDeps) {
    this.interrupted = new InterruptedTurns(d.host);
  }

  async start(): Promise<void> {
    const { bus } = this.d;
    // Registered before recovery records anything, so a chat already connected could be told at once.
    this.subs.push(bus.handle(AGENT_COMMANDS.takeInterrupted, 'agents', (cmd) => this.interrupted.takeNotices(cmd.data, causedBy(cmd))));
    this.interrupted.restore(this.d.log);
    await recoverOrphanTurns(this.d.log, bus, { owe: (turn) => this.interrupted.owe(turn) });
    this.startAgent(MAIN_AGENT);
    for (const entry of this.d.registry()) this.tryStart(entry.name);
    this.subs.push(
      serveAgents(bus, 'agents', { accept: (msg) => this.accept(msg), abort: (req) => this.abort(req), abortTurn: (req) => this.abortTurn(req), list: (req) => this.list(req) }),
      bus.handle(AGENT_COMMANDS.sessions, 'agents', (cmd) => this.sessions(cmd.data)),
      bus.handle(AGENT_COMMANDS.endSession, 'agents', (cmd) => this.endSession(cmd.data)),
      bus.subscribe('agents:registry', (e) => {
        if (e.type === REGISTRY_EVENTS.agent_added || e.type === REGISTRY_EVENTS.agent_removed) this.onRegistry(e.type, e.data.name, false);
        else if (e.type === REGISTRY_EVENTS.agent_changed) this.onRegistry(e.type, e.data.name, e.data.restart);
      }),
    );
  }

  async stop(): Promise<void> {
    for (const s of this.subs.splice(0)) s.unsubscribe();
    await Promise.all([...this.runtimes.keys()].map((name) => this.stopAgent(name, 'shutdown')));
  }

  names(): string[] {
    return [...this.runtimes.keys()];
  }

  /** The agent's effective config (SPEC.md merge priority), for upkeep that follows per-agent overrides. */
  agentConfig(name: string): AgentConfig {
    return this.configOf(name);
  }

  private configOf(name: string): AgentConfig {
    const main = this.d.mainConfig();
    if (name === MAIN_AGENT) return main;
    const entry = this.d.registry().find((e) => e.name === name);
    if (!entry) throw new SvcError('unknown-agent', `no agent named ${name}`);
    return effectiveSubAgentConfig(main, readOwnConfig(this.d.paths, name), entry, { agentsDir: this.d.paths.agentsDir });
  }

  private tryStart(name: string): void {
    // Added back while its last run is still stopping: start once that run's actor is gone.
    const stopping = this.stopping.get(name);
    if (stopping) {
      void stopping.then(() => this.tryStart(name));
      return;
    }
    try {
      this.startAgent(name);
    } catch (e) {
      this.d.bus.emitLog('error', `agent ${name} did not start: ${describeError(e)}`);
    }
  }

  private startAgent(name: string): void {
    if (this.runtimes.has(name)) return;
    const config = this.configOf(name);
    const { workspace } = initWorkspace(this.d.paths, name);
    if (name !== MAIN_AGENT) installSandboxHook(this.d.paths, name);
    // The agent's actor first: the runtime brings its sessions back as the actor's children.
    this.d.host.spawn(`agent:${name}`, agentMachine, {
      stream: `agent:${name}`,
      input: { name, is_main: name === MAIN_AGENT, provider: resolveProviderForModel(config.model, this.d.discoveredGemini()), model: config.model, workspace },
      childStream: (key) => sessionStream(name, key),
    });
    let runtime: AgentRuntime;
    try {
      runtime = new AgentRuntime({
        bus: this.d.bus,
        host: this.d.host,
        log: this.d.log,
        paths: this.d.paths,
        name,
        isMain: name === MAIN_AGENT,
        workspace,
        config: () => this.configOf(name),
        users: this.d.users,
        hostEnv: this.d.hostEnv,
        discoveredGemini: this.d.discoveredGemini,
        interagentToken: () =>
          name === MAIN_AGENT ? this.d.mainAgentToken() : (this.d.registry().find((e) => e.name === name)?.interagent_token ?? null),
        ...(this.d.toolEnv ? { toolEnv: this.d.toolEnv } : {}),
        saveModel: (model, provider) => this.saveModel(name, model, provider),
        restartAgent: (target) => this.restartCommand(target),
        takeRetry: (sessionKey, requestId) => this.interrupted.takeRetry(name, sessionKey, requestId),
        onCut: (turn) => notifyInterrupted(this.d.bus, turn),
        cliSlots: this.cliSlots,
        ...(this.d.intercept ? { intercept: this.d.intercept } : {}),
        ...(this.d.graceMs !== undefined ? { graceMs: this.d.graceMs } : {}),
        ...(this.d.clock ? { clock: this.d.clock } : {}),
      });
    } catch (e) {
      this.d.host.stop(`agent:${name}`);
      throw e;
    }
    this.runtimes.set(name, runtime);
  }

  private async stopAgent(name: string, reason: string): Promise<void> {
    const runtime = this.runtimes.get(name);
    if (!runtime) return this.stopping.get(name);
    this.runtimes.delete(name);
    const done = (async () => {
      // Only svc stopping cuts answers for good; an agent restarted in place still answers its open connections.
      await runtime.stop(reason === 'shutdown' ? SHUTDOWN_ABORT : 'agent-stopped');
      this.d.host.get(`agent:${name}`)?.send({ type: 'stop', reason });
      this.d.host.stop(`agent:${name}`);
    })().finally(() => this.stopping.delete(name));
    this.stopping.set(name, done);
    await done;
  }

  async restart(name: string, reason: string): Promise<void> {
    await this.stopAgent(name, reason);
    this.tryStart(name);
  }

  private saveModel(name: string, model: string, provider: string): void {
    if (name === MAIN_AGENT) {
      setConfigFields(this.d.paths, { model, provider });
      return;
    }
    // Sub-agents write /model back to their registry entry (SPEC.md), leaving other entries alone.
    const entries = loadRegistry(this.d.paths).map((e) => (e.name === name ? { ...e, model, provider } : e));
    saveRegistry(this.d.paths, entries as SubAgentConfig[]);
  }

  private onRegistry(type: string, name: string, restart: boolean): void {
    if (!name || name === MAIN_AGENT) return;
    if (type === REGISTRY_EVENTS.agent_added) this.tryStart(name);
    else if (type === REGISTRY_EVENTS.agent_removed) void this.stopAgent(name, 'removed from the registry');
    else if (type === REGISTRY_EVENTS.agent_changed && restart && this.runtimes.has(name)) void this.restart(name, 'registry change');
  }

  private accept(msg: AgentMessage): { outcome: Promise<TurnOutcome> } {
    const runtime = this.runtimes.get(msg.agent);
    if (!runtime) throw new SvcError('unknown-agent', `no running agent named ${msg.agent}`);
    const access = agentAccess(msg.principal, msg.agent, this.d.registry());
    if (!access.allowed) throw new SvcError(access.code, access.message);
    if (access.warning) this.d.bus.emitLog('warn', access.warning, { agent: msg.principal.id, to: msg.agent });
    return runtime.accept(msg, msg.task ? null : parseChatCommand(msg.text));
  }

  private async restartCommand(target: string): Promise<'unknown' | 'restarted' | 'not-started'> {
    if (!this.runtimes.has(target) && !this.d.registry().some((e) => e.name === target)) return 'unknown';
    await this.restart(target, '/agent_restart');
    return this.runtimes.has(target) ? 'restarted' : 'not-started';
  }

  /** Only on agents the principal may use: a chat id alone does not let anyone stop another's work. */
  private abort({ chat_id, agent, principal }: AgentAbort): AbortOutcome {
    let killed = 0;
    const registry = this.d.registry();
    for (const [name, runtime] of this.runtimes) {
      if ((!agent || agent === name) && agentAccess(principal, name, registry).allowed) killed += runtime.abort(chat_id);
    }
    return { killed };
  }

  /** One turn of one agent the principal may use; an agent it may not use (or that is gone) has no such turn. */
  private abortTurn({ agent, principal, cause, ...target }: AgentTurnAbort): AbortOutcome {
    const runtime = this.runtimes.get(agent);
    if (!runtime || !agentAccess(principal, agent, this.d.registry()).allowed) return { killed: 0 };
    return { killed: runtime.abortTurn(target, cause) };
  }

  private sessions({ principal }: SessionList): SessionSummary[] {
    const visible = visibleAgents(principal, [...this.runtimes.keys()], this.d.registry());
    return visible.flatMap((name) =>
      this.runtimes.get(name)!.sessions().map(({ state: s, busy }) => ({
        id: `${name}:${s.key}`,
        agent: name,
        key: s.key,
        transport: s.transport,
        chat_id: s.chat_id,
        topic_id: s.topic_id,
        created_at: new Date(s.createdAt).toISOString(),
        last_active: new Date(s.lastActiveAt).toISOString(),
        message_count: s.messageCount,
        providers: Object.keys(s.providerSessions),
        busy,
      })),
    );
  }

  /** `<agent>:<key>`; an agent the principal may not use answers as if it had no such session. */
  private async endSession({ id, principal, request_id }: SessionEnd): Promise<AbortOutcome> {
    const colon = id.indexOf(':');
    const name = colon > 0 ? id.slice(0, colon) : '';
    const runtime = this.runtimes.get(name);
    const access = runtime ? agentAccess(principal, name, this.d.registry()) : null;
    if (!runtime || !access?.allowed) throw new SvcError('not-found', `no session ${id}`);
    return { killed: await runtime.endSession(id.slice(colon + 1), principal, request_id) };
  }

  private list({ principal }: AgentList): AgentSummary[] {
    const visible = new Set(visibleAgents(principal, [...this.runtimes.keys()], this.d.registry()));
    return [...this.runtimes.values()].filter((r) => visible.has(r.name)).map((r) => {
      const { model, provider } = r.currentModel();
      return { name: r.name, provider, model, online: true, is_main: r.name === MAIN_AGENT };
    });
  }
}

/** A sub-agent's own `config/config.json` (layer 2 of the effective config), when it has one. */
function readOwnConfig(paths: HomePaths, name: string): Record<string, unknown> | null {
  const file = join(agentHomeRoot(paths, name), 'config', 'config.json');
  if (!existsSync(file)) return null;
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  } catch (e) {
    throw new SvcError('config-invalid', `${file}: not valid JSON (${describeError(e)})`);
  }
}
