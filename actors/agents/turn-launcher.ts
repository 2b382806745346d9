import { mkdtempSync, rmSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { toPromise, type Actor } from 'xstate';
import type { Bus, TurnStream } from '../../bus/index.js';
import { buildInjection, callerUserOf, effortFor, memoryHookDue, permissionModeForPrincipal, selectModules, TURN_MACHINE, turnMachine, type TurnInput, type TurnResult } from '../../machines/index.js';
import { MAX_STEP_TIMEOUT_SECONDS, TURN_CHUNKS, describeError, type AgentConfig, type AgentMessage, type TurnChunkBase, type TurnKind } from '../../schemas/index.js';
import { buildChildEnv, listMemoryModules, readDotEnv, readMemoryModule, type HomePaths } from '../../store/index.js';
import type { ActorClock, ActorHost } from '../host/actor-host.js';
import { cliTurnLogic } from './cli-turn.js';
import { claudeAdapter } from '../providers/claude.js';
import { codexAdapter } from '../providers/codex.js';
import { geminiAdapter } from '../providers/gemini.js';
import type { PermissionMode, ProviderAdapter, ProviderId, ReasoningEffort, StreamEvent } from '../providers/provider.js';

const ADAPTERS: Readonly<Record<ProviderId, ProviderAdapter>> = { claude: claudeAdapter, codex: codexAdapter, gemini: geminiAdapter };

export interface TurnLauncherDeps {
  bus: Bus;
  out: TurnStream;
  host: ActorHost;
  paths: HomePaths;
  name: string;
  workspace: string;
  hostEnv: NodeJS.ProcessEnv;
  /** Handed to the CLI as SVC_INTERAGENT_TOKEN so its tool scripts can call other agents. */
  interagentToken: () => string | null;
  /** Variables the daemon's services give agent tools (FILESHARE_URL, FILESHARE_DOWNLOADS), read per turn. */
  toolEnv?: () => Record<string, string>;
  graceMs?: number;
  clock?: ActorClock;
}

/** A turn the runtime decided to run: where, with which model, resuming which provider session. */
export interface TurnPlan {
  msg: AgentMessage;
  key: string;
  turnId: string;
  config: AgentConfig;
  /** The prompt without its directives. */
  prompt: string;
  provider: ProviderId;
  model: string;
  /** The provider session to resume; null starts a new one (and gets the full memory). */
  resume: string | null;
  /** This message's number in the session (the memory reminder comes every few messages). */
  messageNumber: number;
  /** Where the CLI runs when not in the agent's workspace (a task's folder). */
  cwd?: string;
  /** A cron run's own reasoning effort instead of the config's. */
  effort?: string;
  /** A cron run's own extra CLI arguments, instead of (not merged with) the config's. */
  cliParameters?: readonly string[];
}

export interface LaunchedTurn {
  actor: Actor<typeof turnMachine>;
  /** The turn's result; a turn actor that failed comes back as a failed result. Its temp dir is gone by then. */
  result: Promise<TurnResult>;
}

/**
 * Spawns the turn actor for a decided turn: the CLI's environment, working directory, argv
 * (through its provider adapter), the memory injected, and its output forwarded as live chunks.
 */
export class TurnLauncher {
  constructor(private readonly d: TurnLauncherDeps) {}

  launch(plan: TurnPlan): LaunchedTurn {
    const { msg, key, turnId, config, prompt, provider, model, resume } = plan;
    const memory = this.memoryText(config, resume === null, plan.messageNumber);
    const base: TurnChunkBase = {
      request_id: msg.request_id,
      turn_id: turnId,
      agent: this.d.name,
      session_key: key,
      transport: msg.transport,
      chat_id: msg.chat_id,
      topic_id: msg.topic_id,
    };

    const tempDir = mkdtempSync(join(tmpdir(), 'svc-turn-'));
    const effort = effortFor(provider, model, plan.effort ?? config.reasoning_effort);
    const env = this.childEnv(config, msg, provider);
    const cli = cliTurnLogic({
      adapter: ADAPTERS[provider],
      request: {
        provider,
        prompt: memory.reminder ? `${memory.reminder}\n\n${prompt}` : prompt,
        model,
        permissionMode: permissionModeForPrincipal(config, msg.principal) as PermissionMode,
        ...(effort ? { reasoningEffort: effort as ReasoningEffort } : {}),
        ...(memory.system ? { systemPrompt: memory.system } : {}),
        ...(config.max_turns ? { maxTurns: config.max_turns } : {}),
        ...(config.max_budget_usd ? { maxBudgetUsd: config.max_budget_usd } : {}),
        additionalDirectories: config.additional_directories,
        cliParameters: [...(plan.cliParameters ?? config.cli_parameters[provider] ?? [])],
        cwd: plan.cwd ?? this.d.workspace,
      },
      env,
      tempDir,
      ...(this.d.graceMs !== undefined ? { graceMs: this.d.graceMs } : {}),
      live: (events) => this.forward(base, events),
    });
    const machine = turnMachine.provide({
      actors: { cli },
      actions: { forward: (_, p: { events: StreamEvent[] }) => this.forward(base, p.events) },
    });
    const timeouts = timeoutFor(config, msg.kind);
    const input: TurnInput = {
      turn_id: turnId,
      request_id: msg.request_id,
      agent: this.d.name,
      session_key: key,
      kind: msg.kind,
      prompt: msg.text,
      provider,
      model,
      resumeSessionId: resume,
      timeoutMs: timeouts * 1000,
      extendOnActivity: config.timeouts.extend_on_activity,
      extensionMs: config.timeouts.activity_extension * 1000,
      maxExtensions: config.timeouts.max_extensions,
    };
    const caller = callerUserOf(msg.principal);
    let actor: Actor<typeof turnMachine>;
    try {
      actor = this.d.host.spawn(`turn:${turnId}`, machine, {
        stream: `turn:${turnId}`,
        input,
        journal: TURN_MACHINE,
        correlation: msg.request_id,
        ...(caller ? { by: caller } : {}),
        ...(this.d.clock ? { clock: this.d.clock } : {}),
      });
    } catch (e) {
      rmSync(tempDir, { recursive: true, force: true });
      throw e;
    }
    const result = toPromise(actor)
      .catch((e): TurnResult => ({
        status: 'failed', text: '', is_error: true, stream_fallback: false, files: [], session_id: null, usage: null,
        cost_usd: null, duration_ms: null, reason: 'internal', error: describeError(e), session_reset: false,
      }))
      // Off the loop: a removal waits on the disk, and nothing reads the folder after the turn.
      .finally(() => void rm(tempDir, { recursive: true, force: true }).catch(() => undefined));
    return { actor, result };
  }

  /** One stdout read's events (or the machine's own status), as live chunks (the turn stream merges consecutive texts). */
  private forward(base: TurnChunkBase, events: StreamEvent[]): void {
    const stream = `turn:${base.turn_id}`;
    for (const e of events) {
      if (e.kind === 'text') this.d.out.chunk({ stream, type: TURN_CHUNKS.text_delta, data: { ...base, text: e.text } });
      else if (e.kind === 'tool') this.d.out.chunk({ stream, type: TURN_CHUNKS.tool_activity, data: { ...base, tool: e.name } });
      else if (e.kind === 'status') this.d.out.chunk({ stream, type: TURN_CHUNKS.system_status, data: { ...base, status: e.status } });
      else if (e.kind === 'malformed') this.d.bus.emitLog('warn', `turn ${base.turn_id}: unreadable CLI line (${e.reason})`);
    }
  }

  /** Full memory at the start of a provider session; a compact reminder every 6 messages after. */
  private memoryText(config: AgentConfig, newProviderSession: boolean, messageNumber: number): { system?: string; reminder?: string } {
    if (!config.memory.enabled) return {};
    const full = newProviderSession;
    if (!full && !memoryHookDue(messageNumber)) return {};
    try {
      const entries = listMemoryModules(this.d.workspace);
      const main = entries.find((m) => m.filename === 'MAINMEMORY.md');
      const mainText = main ? readMemoryModule(this.d.workspace, main.filename).text : '';
      const chosen = selectModules(entries, mainText, config.memory.inject_all_modules);
      const modules = chosen.map((m) => ({ filename: m.filename, text: readMemoryModule(this.d.workspace, m.filename).text }));
      if (modules.length === 0) return {};
      return full ? { system: buildInjection(modules) } : { reminder: buildInjection(modules, { compactLines: config.memory.hook_compact_lines }) };
    } catch (e) {
      this.d.bus.emitLog('warn', `agent ${this.d.name}: memory not injected: ${describeError(e)}`);
      return {};
    }
  }

  private childEnv(config: AgentConfig, msg: AgentMessage, provider: ProviderId): Record<string, string> {
    const providerEnv: Record<string, string> = {};
    if (provider === 'gemini' && config.gemini_api_key) providerEnv.GEMINI_API_KEY = config.gemini_api_key;
    const env = buildChildEnv(this.d.hostEnv, providerEnv, readDotEnv(this.d.paths.envFile));
    const token = this.d.interagentToken();
    const caller = callerUserOf(msg.principal);
    // The framework's own variables describe this call; a stale value in the host env must not win.
    Object.assign(env, {
      ...this.d.toolEnv?.(),
      SVC_AGENT_NAME: this.d.name,
      SVC_CHAT_ID: String(msg.chat_id),
      SVC_TOPIC_ID: msg.topic_id === null ? '' : String(msg.topic_id),
      SVC_TRANSPORT: msg.transport,
      SVC_INTERAGENT_PORT: String(config.interagent_port),
      SVC_HOME: this.d.paths.root,
      ...(caller ? { SVC_CALLER_USER_ID: caller } : {}),
      ...(msg.task ? { SVC_TASK_ID: msg.task.task_id } : {}),
      ...(token ? { SVC_INTERAGENT_TOKEN: token } : {}),
    });
    return env;
  }
}

/** TimeoutConfig buckets per kind of turn (SPEC.md), in seconds. */
function timeoutFor(config: AgentConfig, kind: TurnKind): number {
  switch (kind) {
    case 'foreground':
      return config.timeouts.normal;
    case 'background':
      return config.timeouts.background;
    case 'task':
      return config.tasks.timeout_seconds;
    case 'interagent':
    case 'cron':
      return config.cli_timeout;
    case 'workflow':
      // The engine's own step timer bounds the turn (and aborts it); this only backs it up.
      return MAX_STEP_TIMEOUT_SECONDS;
  }
}
