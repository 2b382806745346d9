import { randomUUID } from 'node:crypto';
import { agentsOf, type Bus } from '../../bus/index.js';
import { expiryRulesFromConfig, heartbeatDecision, isHeartbeatAck, isUserChatSession, staleThresholdMs, staleTurns, type HeartbeatSkip, type LiveTurn } from '../../machines/index.js';
import {
  CHAT_DELIVERY_COMMANDS,
  AGENT_COMMANDS,
  HEARTBEAT_EVENTS,
  HEARTBEAT_STREAM,
  SvcError,
  describeError,
  type AgentConfig,
  type HeartbeatTarget,
  type Principal,
  type SessionSummary,
  systemPrincipal,
} from '../../schemas/index.js';
import type { ActorClock } from '../host/actor-host.js';
import { UPKEEP_CLOCK } from './daily-job.js';

/*
 * Heartbeat (SPEC.md HeartbeatConfig): every `interval_minutes` each agent with heartbeat enabled
 * looks at its chats that have a session, and each `group_targets` entry at its own chat on its own
 * interval, and asks the agent the heartbeat prompt where the rules allow. It only resumes: a chat
 * without a session (or whose session holds no conversation with the configured provider) is left
 * alone. An answer that is only the ack token is dropped; anything else is delivered to the chat.
 * Each tick of an agent's chat loop also ends that agent's turns running past twice their own time
 * limit (`cli_timeout * 2` for the turns cli_timeout bounds), each turn alone.
 */

export function heartbeatPrincipal(chat: { transport: string; chat_id: number; topic_id: number | null }): Principal {
  return systemPrincipal('heartbeat', { transport: 'heartbeat', chat_id: chat.chat_id, topic_id: chat.topic_id });
}

export interface HeartbeatDelivery {
  agent: string;
  transport: string;
  chat_id: number;
  topic_id: number | null;
  text: string;
  request_id: string;
}

export interface HeartbeatDeps {
  bus: Bus;
  clock?: ActorClock;
  /** Agents looked at when the heartbeat starts (SPEC.md: hot reload does not add loops). */
  agents: () => string[];
  configOf: (agent: string) => Pick<AgentConfig, 'heartbeat' | 'cli_timeout' | 'user_timezone' | 'idle_timeout_minutes' | 'daily_reset_enabled' | 'daily_reset_hour' | 'max_session_messages'>;
  timeZoneOf: (agent: string) => string;
  /** Turns of the agent that started and have not ended, with the time limit each started with. */
  runningTurns: (agent: string) => LiveTurn[];
  /** Hands a non-ack answer to the chat. */
  deliver: (d: HeartbeatDelivery) => Promise<void>;
  /** Skips are not facts (one per chat per tick would flood the log): tests and debug logs see them here. */
  onSkip?: (chat: { agent: string; chat_id: number; topic_id: number | null }, skip: HeartbeatSkip) => void;
}

interface Loop {
  agent: string;
  /** null: the agent's chats not claimed by a group target. */
  target: HeartbeatTarget | null;
  timer: unknown;
}

const SYSTEM = heartbeatPrincipal({ transport: 'heartbeat', chat_id: 0, topic_id: null });

export class Heartbeat {
  private readonly loops: Loop[] = [];
  /** Heartbeats asked and not yet answered, per chat: the request, so stop() can end its turn. */
  private readonly inFlight = new Map<string, { agent: string; request_id: string }>();
  /** Every heartbeat sent and not yet handled (answered, refused, failed, or dropped after stop). */
  private readonly sending = new Set<Promise<void>>();
  /** Per agent, its stale turns already aborted and still running, so a turn slow to die is not aborted (and recorded) each tick. */
  private readonly swept = new Map<string, Set<string>>();
  private stopped = false;

  constructor(private readonly d: HeartbeatDeps) {}

  private get clock(): ActorClock {
    return this.d.clock ?? UPKEEP_CLOCK;
  }

  /** Starts one loop per agent with heartbeat enabled and one per group target. How many loops run. */
  start(): number {
    for (const agent of this.d.agents()) {
      let hb: AgentConfig['heartbeat'];
      try {
        hb = this.d.configOf(agent).heartbeat;
      } catch (e) {
        this.d.bus.emitLog('warn', `heartbeat: ${agent}: ${describeError(e)}`);
        continue;
      }
      if (!hb.enabled) continue;
      for (const target of [null, ...hb.group_targets]) {
        const loop: Loop = { agent, target, timer: null };
        this.loops.push(loop);
        this.schedule(loop);
      }
    }
    return this.loops.length;
  }

  /**
   * Stops the loops and ends the turns of the heartbeats still running, without waiting for their
   * answers: a heartbeat turn may run for `timeouts.background`, and shutdown must not wait on it.
   * Ended here rather than by the agents' shutdown (which stops after this), so a heartbeat cut off
   * is not owed a restart notice. An answer that still arrives is dropped.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const l of this.loops) if (l.timer !== null) this.clock.clearTimeout(l.timer as never);
    const running = [...this.inFlight.values()];
    await Promise.allSettled(running.map((r) => agentsOf(this.d.bus).abortTurn(r, 'requester-stopped', SYSTEM)));
  }

  /**
   * Resolves once every heartbeat sent so far has been handled: its answer delivered and recorded,
   * or dropped (refused, failed, or come after stop()). It waits for the agents' answers, so only
   * after they are given (tests answer theirs, then wait on this).
   */
  async idle(): Promise<void> {
    while (this.sending.size) await Promise.allSettled([...this.sending]);
  }

  private intervalMs(loop: Loop): number {
    const hb = this.d.configOf(loop.agent).heartbeat;
    return (loop.target?.interval_minutes ?? hb.interval_minutes) * 60_000;
  }

  private schedule(loop: Loop): void {
    if (this.stopped) return;
    let ms: number;
    try {
      ms = this.intervalMs(loop);
    } catch {
      // The agent's config broke after start: look again in the default interval.
      ms = 30 * 60_000;
    }
    loop.timer = this.clock.setTimeout(() => {
      loop.timer = null;
      void this.tick(loop.agent, loop.target)
        .catch((e: unknown) => this.d.bus.emitLog('error', `heartbeat ${loop.agent}: ${describeError(e)}`))
        .finally(() => this.schedule(loop));
    }, ms);
  }

  /**
   * One tick of a loop: for `target` null, the stale sweep and every chat of the agent no group
   * target claims; otherwise that target's chat. Resolves once the heartbeats are sent (not answered).
   */
  async tick(agent: string, target: HeartbeatTarget | null): Promise<void> {
    if (this.stopped) return;
    const cfg = this.d.configOf(agent);
    const hb = cfg.heartbeat;
    if (!hb.enabled) return;
    const now = this.d.bus.now();
    const all = (await this.d.bus.send(AGENT_COMMANDS.sessions, { principal: SYSTEM }, { by: 'heartbeat' })).filter((s) => s.agent === agent);
    if (target === null) await this.sweep(agent, cfg.cli_timeout, all, now);
    // People's chats only: not a task's session, a workflow run's or an inter-agent call's.
    const sessions = all.filter(isUserChatSession);
    const summary = (await this.d.bus.send(AGENT_COMMANDS.list, { principal: SYSTEM }, { by: 'heartbeat' })).find((a) => a.name === agent);
    // Stopped while this tick looked: a heartbeat asked now would outlive stop().
    if (!summary || this.stopped) return;
    const claimed = (s: { chat_id: number; topic_id: number | null }, t: HeartbeatTarget) => s.chat_id === t.chat_id && (t.topic_id ?? null) === s.topic_id;
    const chats: { transport: string; chat_id: number; topic_id: number | null; session: SessionSummary | null }[] =
      target === null
        ? sessions.filter((s) => !hb.group_targets.some((t) => claimed(s, t))).map((s) => ({ transport: s.transport, chat_id: s.chat_id, topic_id: s.topic_id, session: s }))
        : [{ transport: '', chat_id: target.chat_id, topic_id: target.topic_id ?? null, session: sessions.find((s) => claimed(s, target)) ?? null }];
    const timeZone = this.d.timeZoneOf(agent);
    const rules = {
      quietStart: target?.quiet_start ?? hb.quiet_start,
      quietEnd: target?.quiet_end ?? hb.quiet_end,
      cooldownMinutes: hb.cooldown_minutes,
      timeZone,
      provider: summary.provider,
      expiry: expiryRulesFromConfig(cfg, timeZone),
    };
    for (const chat of chats) {
      const key = `${agent}\u0000${chat.chat_id}\u0000${chat.topic_id ?? ''}`;
      const s = chat.session;
      const decision = heartbeatDecision(
        {
          session: s ? { providers: s.providers, lastActiveMs: Date.parse(s.last_active), createdMs: Date.parse(s.created_at), messageCount: s.message_count, busy: s.busy } : null,
          inFlight: this.inFlight.has(key),
        },
        now,
        rules,
      );
      if (!decision.send) {
        this.d.onSkip?.({ agent, chat_id: chat.chat_id, topic_id: chat.topic_id }, decision.skip);
        continue;
      }
      const where = { agent, transport: s!.transport, chat_id: chat.chat_id, topic_id: chat.topic_id };
      const requestId = `heartbeat:${randomUUID()}`;
      this.inFlight.set(key, { agent, request_id: requestId });
      const sent = this.send(where, requestId, target?.prompt ?? hb.prompt, target?.ack_token ?? hb.ack_token).finally(() => {
        this.inFlight.delete(key);
        this.sending.delete(sent);
      });
      this.sending.add(sent);
    }
  }

  private async send(where: { agent: string; transport: string; chat_id: number; topic_id: number | null }, requestId: string, prompt: string, ackToken: string): Promise<void> {
    // resume_only: should the session expire or lose its conversation between this decision and the
    // turn, the runtime refuses rather than open a new one.
    const asked = agentsOf(this.d.bus).ask({ ...where, text: prompt, kind: 'background', resume_only: true }, heartbeatPrincipal(where), { requestId });
    try {
      const admission = await asked.accepted;
      if (!admission.accepted) {
        this.d.bus.emitLog('info', `heartbeat ${where.agent} chat ${where.chat_id}: refused (${admission.code}): ${admission.message}`);
        return;
      }
      const outcome = await asked.outcome;
      // Stopped meanwhile: nothing more is delivered or recorded (the log may be closing).
      if (this.stopped) return;
      if (outcome.status !== 'completed' || outcome.is_error) {
        this.d.bus.emitLog('info', `heartbeat ${where.agent} chat ${where.chat_id}: the turn ended ${outcome.status}${outcome.reason ? ` (${outcome.reason})` : ''}`);
        return;
      }
      const delivered = !isHeartbeatAck(outcome.text, ackToken);
      if (delivered) await this.d.deliver({ ...where, text: outcome.text, request_id: requestId });
      await this.d.bus.publish({ stream: HEARTBEAT_STREAM, type: HEARTBEAT_EVENTS.answered, data: { ...where, request_id: requestId, delivered }, correlation: requestId });
    } catch (e) {
      // no-session: the session expired or lost its conversation after the tick looked; nothing was started.
      const level = e instanceof SvcError && e.code === 'no-session' ? 'info' : 'warn';
      this.d.bus.emitLog(level, `heartbeat ${where.agent} chat ${where.chat_id}: ${describeError(e)}`);
    }
  }

  /**
   * Ends each of the agent's turns running past twice its own time limit (`cli_timeout * 2` for the
   * turns cli_timeout bounds), that turn alone: the chat's other topics and the messages queued
   * behind it carry on.
   */
  private async sweep(agent: string, cliTimeout: number, sessions: SessionSummary[], now: number): Promise<void> {
    const running = this.d.runningTurns(agent);
    const swept = this.swept.get(agent) ?? new Set<string>();
    // Only turns still running are remembered: an ended one is never seen again.
    const live = new Set(running.map((t) => t.turn_id));
    for (const id of swept) if (!live.has(id)) swept.delete(id);
    this.swept.set(agent, swept);
    for (const turn of staleTurns(running, now, cliTimeout)) {
      if (swept.has(turn.turn_id)) continue;
      swept.add(turn.turn_id);
      let killed: number;
      try {
        ({ killed } = await agentsOf(this.d.bus).abortTurn({ agent, turn_id: turn.turn_id }, 'stale', SYSTEM));
      } catch (e) {
        // Tried again next tick.
        swept.delete(turn.turn_id);
        this.d.bus.emitLog('warn', `heartbeat: stale turn ${turn.turn_id} of ${agent} not aborted: ${describeError(e)}`);
        continue;
      }
      const session = sessions.find((s) => s.key === turn.session_key);
      await this.d.bus.publish({
        stream: HEARTBEAT_STREAM,
        type: HEARTBEAT_EVENTS.stale_aborted,
        data: {
          agent,
          turn_id: turn.turn_id,
          session_key: turn.session_key,
          chat_id: session?.chat_id ?? null,
          running_ms: Math.max(0, Math.round(now - turn.started_ms)),
          threshold_ms: Math.round(staleThresholdMs(turn, cliTimeout)),
          killed,
        },
        correlation: `turn:${turn.turn_id}`,
      });
    }
  }
}

/**
 * Where a heartbeat answer goes: the chat it checked in on, through its own transport (a Telegram
 * chat, a group target's topic); `chat.deliver` puts it in the agent's admin chat instead when that
 * transport cannot reach the chat now, and records why.
 */
export function deliverToOriginChat(bus: Bus): (d: HeartbeatDelivery) => Promise<void> {
  return async (d) => {
    await bus.send(
      CHAT_DELIVERY_COMMANDS.deliver,
      { transport: d.transport, chat_id: d.chat_id, topic_id: d.topic_id, text: d.text, agent: d.agent, source: 'heartbeat' },
      { correlation: d.request_id, by: 'heartbeat' },
    );
  };
}
