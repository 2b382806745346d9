import t from 'tap';
import { Heartbeat, type HeartbeatDelivery } from '../../actors/index.js';
import { Bus, serveAgents } from '../../bus/index.js';
import { heartbeatDecision, inQuietHours, isHeartbeatAck, isUserChatSession, staleThresholdMs, staleTurns, type ExpiryRules, type HeartbeatChat, type HeartbeatRules, type HeartbeatSkip, type LiveTurn } from '../../machines/index.js';
import { AGENT_COMMANDS, HEARTBEAT_EVENTS, TURN_EVENTS, defaultConfig, type AgentAbort, type AgentConfig, type AgentMessage, type AgentTurnAbort, type SessionSummary, type TurnOutcome } from '../../schemas/index.js';
import { MemoryEventLog, PROJECTIONS, SqliteEventLog, agentTurnsReadModel } from '../../store/index.js';
import { join } from 'node:path';
import { TimerClock } from '../fixtures/timer-clock.js';
import { until } from '../fixtures/until.js';

const MIN = 60_000;
const at = (iso: string) => Date.parse(iso);
/** Sessions that never expire, so a case tests only what it names. */
const NO_EXPIRY: ExpiryRules = { idleTimeoutMinutes: 0, dailyResetEnabled: false, dailyResetHour: 4, timezone: 'UTC', maxSessionMessages: null };

const NOON = at('2026-11-27T12:00:00Z');

await t.test('quiet hours in the user zone, wrapping midnight', async (t) => {
  for (const [iso, quiet] of [
    ['2026-11-27T20:59:00Z', false],
    ['2026-11-27T21:00:00Z', true],
    ['2026-11-27T23:30:00Z', true],
    ['2026-11-28T07:59:00Z', true],
    ['2026-11-28T08:00:00Z', false],
    ['2026-11-28T12:00:00Z', false],
  ] as const) t.equal(inQuietHours(at(iso), 21, 8, 'UTC'), quiet, iso);
  t.notOk(inQuietHours(at('2026-11-27T23:00:00Z'), 9, 9, 'UTC'), 'start equal to end: never quiet');
  t.ok(inQuietHours(at('2026-11-27T12:00:00Z'), 9, 17, 'UTC'), 'a window inside one day');
  // 20:30Z is 21:30 in Berlin (UTC+1 in November).
  t.ok(inQuietHours(at('2026-11-27T20:30:00Z'), 21, 8, 'Europe/Berlin'));
});

await t.test('heartbeatDecision: given a chat and now, send or why not', async (t) => {
  const NOON = at('2026-11-27T12:00:00Z');
  const rules: HeartbeatRules = { quietStart: 21, quietEnd: 8, cooldownMinutes: 5, timeZone: 'UTC', provider: 'claude', expiry: NO_EXPIRY };
  const idle = { providers: ['claude'], lastActiveMs: NOON - 60 * MIN, createdMs: NOON - 600 * MIN, messageCount: 3, busy: false };
  const cases: [string, HeartbeatChat, number, ReturnType<typeof heartbeatDecision>][] = [
    ['idle chat with a claude session', { session: idle, inFlight: false }, NOON, { send: true }],
    ['quiet hours win over everything', { session: idle, inFlight: false }, at('2026-11-27T22:00:00Z'), { send: false, skip: 'quiet' }],
    ['no session: never created', { session: null, inFlight: false }, NOON, { send: false, skip: 'no-session' }],
    ['the session holds another provider', { session: { ...idle, providers: ['codex'] }, inFlight: false }, NOON, { send: false, skip: 'provider-mismatch' }],
    ['a turn is running', { session: { ...idle, busy: true }, inFlight: false }, NOON, { send: false, skip: 'busy' }],
    ['our last heartbeat still runs', { session: idle, inFlight: true }, NOON, { send: false, skip: 'busy' }],
    ['active 4 minutes ago', { session: { ...idle, lastActiveMs: NOON - 4 * MIN }, inFlight: false }, NOON, { send: false, skip: 'cooldown' }],
    ['active exactly 5 minutes ago', { session: { ...idle, lastActiveMs: NOON - 5 * MIN }, inFlight: false }, NOON, { send: true }],
  ];
  for (const [name, chat, now, want] of cases) t.same(heartbeatDecision(chat, now, rules), want, name);
});

await t.test('heartbeatDecision: a session the next message would replace is not resumed (the existing expiry rule, not a copy)', async (t) => {
  const rules: HeartbeatRules = { quietStart: 21, quietEnd: 8, cooldownMinutes: 5, timeZone: 'UTC', provider: 'claude', expiry: NO_EXPIRY };
  const EIGHT = at('2026-11-28T08:00:00Z');
  const chat = (over: Partial<NonNullable<HeartbeatChat['session']>> = {}): HeartbeatChat => ({
    session: { providers: ['claude'], lastActiveMs: at('2026-11-27T20:00:00Z'), createdMs: at('2026-11-27T09:00:00Z'), messageCount: 3, busy: false, ...over },
    inFlight: false,
  });
  // Daily reset at 04:00 and quiet hours until 08:00: the first heartbeat of the day comes after the reset.
  const daily = { ...rules, expiry: { ...NO_EXPIRY, dailyResetEnabled: true, dailyResetHour: 4 } };
  t.same(heartbeatDecision(chat(), EIGHT, daily), { send: false, skip: 'session-expired' }, 'past the daily reset: the 08:00 heartbeat would open a new empty session');
  t.same(heartbeatDecision(chat({ lastActiveMs: at('2026-11-28T05:00:00Z') }), EIGHT, daily), { send: true }, 'active since the reset: resumed');
  t.same(heartbeatDecision(chat(), EIGHT, { ...rules, expiry: { ...NO_EXPIRY, idleTimeoutMinutes: 600 } }), { send: false, skip: 'session-expired' }, 'idle for 12 h with a 10 h idle timeout');
  t.same(heartbeatDecision(chat(), EIGHT, { ...rules, expiry: { ...NO_EXPIRY, idleTimeoutMinutes: 1440 } }), { send: true }, 'idle for 12 h with a day\'s idle timeout');
  t.same(heartbeatDecision(chat({ messageCount: 50 }), EIGHT, { ...rules, expiry: { ...NO_EXPIRY, maxSessionMessages: 50 } }), { send: false, skip: 'session-expired' }, 'at the message cap');
  t.same(heartbeatDecision(chat(), EIGHT, { ...rules, expiry: { ...NO_EXPIRY, maxSessionMessages: 50 } }), { send: true });
});

await t.test('only user chats get heartbeats: not task, workflow-run or inter-agent sessions', async (t) => {
  const s = (transport: string, key: string) => ({ transport, key, chat_id: 5, topic_id: null });
  for (const chat of [s('api', 'api:5'), s('admin', 'admin:5'), s('telegram', 'telegram:5'), s('matrix', 'matrix:5'), { ...s('api', 'api:5:7'), topic_id: 7 }]) {
    t.ok(isUserChatSession(chat), chat.key);
  }
  for (const other of [s('workflow', 'workflow:5'), s('internal', 'internal:5'), s('api', 'task:abc'), s('heartbeat', 'heartbeat:5'), s('webhook', 'webhook:5'), s('api', 'workflow:5')]) {
    t.notOk(isUserChatSession(other), `${other.transport} ${other.key}`);
  }
});

await t.test('ack detection', async (t) => {
  for (const a of ['HEARTBEAT_OK', '  HEARTBEAT_OK\n', '**HEARTBEAT_OK**.', '`HEARTBEAT_OK`', 'HEARTBEAT_OK HEARTBEAT_OK', '']) t.ok(isHeartbeatAck(a, 'HEARTBEAT_OK'), JSON.stringify(a));
  for (const a of ['HEARTBEAT_OK, but the nightly build failed', 'All fine', 'heartbeat_ok']) t.notOk(isHeartbeatAck(a, 'HEARTBEAT_OK'), JSON.stringify(a));
  t.ok(isHeartbeatAck('NOTHING', 'NOTHING'), 'per-target tokens');
});

await t.test('staleTurns: past twice the turn\'s own time limit, cli_timeout * 2 when it has none', async (t) => {
  const now = at('2026-11-27T12:00:00Z');
  const turns = [
    { turn_id: 'a', session_key: 'k', started_ms: now - 1200_000 },
    { turn_id: 'b', session_key: 'k', started_ms: now - 1200_001 },
  ];
  t.same(staleTurns(turns, now, 600).map((x) => x.turn_id), ['b']);
  const kinds = [
    { turn_id: 'cron', session_key: 'internal:0', started_ms: now - 1200_001, timeout_ms: 600_000 },
    { turn_id: 'task', session_key: 'task:x', started_ms: now - 1500_000, timeout_ms: 3600_000 },
    { turn_id: 'background', session_key: 'api:1', started_ms: now - 3000_000, timeout_ms: 1800_000 },
    { turn_id: 'task-stuck', session_key: 'task:y', started_ms: now - 7200_001, timeout_ms: 3600_000 },
    { turn_id: 'unknown', session_key: 'api:2', started_ms: now - 1200_001, timeout_ms: null },
  ];
  t.same(staleTurns(kinds, now, 600).map((x) => x.turn_id), ['cron', 'task-stuck', 'unknown'], 'a task or background turn gets twice its own limit, not cli_timeout * 2');
  t.equal(staleThresholdMs(kinds[1]!, 600), 7200_000);
  t.equal(staleThresholdMs(kinds[4]!, 600), 1200_000);
});

await t.test('the running-turns read model gives each turn the time limit it started with', async (t) => {
  const log = SqliteEventLog.open(join(t.testdir(), 'events.db'), { projections: PROJECTIONS });
  const bus = new Bus({ log, clock: () => NOON });
  t.teardown(() => {
    bus.close();
    log.close();
  });
  const start = (id: string, kind: 'task' | 'foreground', timeout_ms: number) =>
    bus.publish({ stream: `turn:${id}`, type: TURN_EVENTS.started, data: { agent: 'main', session_key: kind === 'task' ? 'task:x' : 'api:1', request_id: `r-${id}`, kind, prompt: 'p', provider: 'claude', model: null, resumed: false, timeout_ms } });
  await start('t1', 'task', 3600_000);
  await start('t2', 'foreground', 600_000);
  await start('t3', 'foreground', 600_000);
  await bus.publish({ stream: 'turn:t3', type: TURN_EVENTS.completed, data: { text: '', session_id: null, stream_fallback: false, files: [], usage: null, cost_usd: null, duration_ms: 1 } });
  t.same(agentTurnsReadModel(log.projectionDb()).running('main'), [
    { turn_id: 't1', session_key: 'task:x', started_ms: NOON, timeout_ms: 3600_000 },
    { turn_id: 't2', session_key: 'api:1', started_ms: NOON, timeout_ms: 600_000 },
  ]);
});

// ------------------------------------------------------------------ the actor on a bus

function session(chat_id: number, over: Partial<SessionSummary> = {}): SessionSummary {
  return {
    id: `main:api:${chat_id}`, agent: 'main', key: `api:${chat_id}`, transport: 'api', chat_id, topic_id: null,
    created_at: new Date(NOON - 600 * MIN).toISOString(), last_active: new Date(NOON - 60 * MIN).toISOString(),
    message_count: 3, providers: ['claude'], busy: false, ...over,
  };
}

function outcome(m: AgentMessage, text: string): TurnOutcome {
  return {
    request_id: m.request_id, turn_id: `t-${m.chat_id}`, agent: m.agent, session_key: `api:${m.chat_id}`, status: 'completed', text, is_error: false,
    stream_fallback: false, files: [], provider: 'claude', model: null, session_id: 's', usage: null, cost_usd: null, duration_ms: 1, reason: null,
  };
}

function rig(t: { teardown(f: () => unknown): void }, opts: { sessions: SessionSummary[]; answers: Record<number, string | Promise<string>>; heartbeat?: Partial<AgentConfig['heartbeat']>; config?: Partial<AgentConfig>; running?: LiveTurn[] }) {
  const clock = new TimerClock();
  clock.set(NOON);
  const log = new MemoryEventLog();
  const bus = new Bus({ log, clock: () => clock.now() });
  const asked: AgentMessage[] = [];
  const aborts: AgentAbort[] = [];
  const turnAborts: AgentTurnAbort[] = [];
  const delivered: HeartbeatDelivery[] = [];
  const skips: [number, HeartbeatSkip][] = [];
  let sessionQueries = 0;
  serveAgents(bus, 'fake', {
    accept: (m) => {
      asked.push(m);
      return { outcome: Promise.resolve(opts.answers[m.chat_id] ?? 'HEARTBEAT_OK').then((text) => outcome(m, text)) };
    },
    abort: (a) => {
      aborts.push(a);
      return { killed: 1 };
    },
    abortTurn: (a) => {
      turnAborts.push(a);
      return { killed: 1 };
    },
    list: () => [{ name: 'main', provider: 'claude', model: 'm', online: true, is_main: true }],
  });
  bus.handle(AGENT_COMMANDS.sessions, 'fake', () => {
    sessionQueries++;
    return opts.sessions;
  });
  const base = defaultConfig();
  const config = { ...base, cli_timeout: 600, ...opts.config, heartbeat: { ...base.heartbeat, enabled: true, ...opts.heartbeat } };
  const hb = new Heartbeat({
    bus,
    clock,
    agents: () => ['main'],
    configOf: () => config,
    timeZoneOf: () => 'UTC',
    runningTurns: () => opts.running ?? [],
    deliver: async (d) => void delivered.push(d),
    onSkip: (c, s) => void skips.push([c.chat_id, s]),
  });
  t.teardown(async () => {
    await hb.stop();
    bus.close();
  });
  /** Waits for the n-th heartbeat answer to be handled: delivered (or not) and recorded. */
  const answered = (n: number) => until(`${n} heartbeat answer(s) recorded`, () => log.read({ stream: 'heartbeat', types: [HEARTBEAT_EVENTS.answered] }).length >= n);
  return { clock, log, bus, hb, asked, aborts, turnAborts, delivered, skips, answered, sessionQueries: () => sessionQueries };
}

await t.test('one tick: skips, ack suppressed, anything else delivered, resume-only', async (t) => {
  const r = rig(t, {
    sessions: [
      session(1),
      session(2),
      session(3, { busy: true }),
      session(4, { providers: ['codex'] }),
      session(5, { last_active: new Date(NOON - 2 * MIN).toISOString() }),
      session(6, { key: 'task:abc' }),
      session(7, { key: 'workflow:7', transport: 'workflow' }),
      session(8, { key: 'internal:8', transport: 'internal' }),
    ],
    answers: { 1: 'HEARTBEAT_OK', 2: 'The nightly deploy failed; want me to look?' },
    heartbeat: { group_targets: [{ chat_id: 9, topic_id: null, prompt: 'group check', ack_token: null, interval_minutes: 60, quiet_start: null, quiet_end: null }] },
  });
  await r.hb.tick('main', null);
  await r.hb.tick('main', { chat_id: 9, topic_id: null, prompt: 'group check', ack_token: null, interval_minutes: 60, quiet_start: null, quiet_end: null });
  await r.answered(2);
  t.same(r.asked.map((m) => m.chat_id).sort(), [1, 2], 'only the idle chats with a claude session are asked');
  for (const m of r.asked) {
    t.equal(m.principal.kind, 'system');
    t.equal(m.principal.id, 'heartbeat');
    t.equal(m.text, defaultConfig().heartbeat.prompt);
    t.equal(m.transport, 'api');
  }
  t.same(r.skips.sort((a, b) => a[0] - b[0]), [[3, 'busy'], [4, 'provider-mismatch'], [5, 'cooldown'], [9, 'no-session']]);
  t.same(r.delivered.map((d) => [d.chat_id, d.text]), [[2, 'The nightly deploy failed; want me to look?']], 'the ack is not delivered');
  const facts = r.log.read({ stream: 'heartbeat' });
  t.same(facts.map((f) => [f.type, (f.data as { chat_id: number }).chat_id, (f.data as { delivered: boolean }).delivered]).sort(), [
    [HEARTBEAT_EVENTS.answered, 1, false],
    [HEARTBEAT_EVENTS.answered, 2, true],
  ]);
});

await t.test('a group target uses its own prompt and token, and is not asked by the chat loop', async (t) => {
  const target = { chat_id: 9, topic_id: null, prompt: 'group check', ack_token: 'NOTHING', interval_minutes: null, quiet_start: null, quiet_end: null };
  const r = rig(t, { sessions: [session(9)], answers: { 9: 'NOTHING' }, heartbeat: { group_targets: [target] } });
  await r.hb.tick('main', null);
  t.same(r.asked, [], 'claimed by its target');
  await r.hb.tick('main', target);
  await r.answered(1);
  t.same(r.asked.map((m) => m.text), ['group check'], 'asked once, by the target (the chat loop\'s tick came first)');
  t.same(r.delivered, [], 'the target\'s own token is the ack');
});

await t.test('a session the heartbeat would replace (daily reset before the quiet hours end) is skipped, not renewed', async (t) => {
  const EIGHT = at('2026-11-28T08:00:00Z');
  const r = rig(t, {
    sessions: [
      session(1, { last_active: '2026-11-27T20:00:00.000Z' }),
      session(2, { last_active: '2026-11-28T05:00:00.000Z' }),
    ],
    answers: {},
    config: { daily_reset_enabled: true, daily_reset_hour: 4 },
  });
  r.clock.set(EIGHT);
  await r.hb.tick('main', null);
  await r.answered(1);
  t.same(r.asked.map((m) => m.chat_id), [2], 'only the chat active since the 04:00 reset');
  t.same(r.skips, [[1, 'session-expired']]);
  t.ok(r.asked.every((m) => m.resume_only === true), 'the runtime is told never to open a session for it');
});

await t.test('quiet hours: nothing is asked', async (t) => {
  const r = rig(t, { sessions: [session(1)], answers: {} });
  r.clock.set(at('2026-11-27T23:00:00Z'));
  await r.hb.tick('main', null);
  t.same(r.asked, []);
  t.same(r.skips, [[1, 'quiet']]);
});

await t.test('stale sweep: a turn past twice its own limit is aborted once, alone, not through the chat abort', async (t) => {
  const running: LiveTurn[] = [
    { turn_id: 'old', session_key: 'api:1', started_ms: NOON - 1201_000, timeout_ms: 600_000 },
    { turn_id: 'young', session_key: 'api:2', started_ms: NOON - 60_000, timeout_ms: 600_000 },
    { turn_id: 'task', session_key: 'task:abc', started_ms: NOON - 1500_000, timeout_ms: 3600_000 },
    { turn_id: 'stuck-task', session_key: 'task:def', started_ms: NOON - 7201_000, timeout_ms: 3600_000 },
  ];
  const r = rig(t, { sessions: [session(1, { busy: true }), session(2), session(6, { key: 'task:def', busy: true })], answers: {}, running });
  const logs: string[] = [];
  r.bus.transient$.subscribe((m) => m.stream === 'log' && logs.push((m.data as { msg: string }).msg));
  await r.hb.tick('main', null);
  await r.hb.tick('main', null);
  t.same(r.aborts, [], 'the chat-wide abort (every topic, the queued messages) is not used');
  t.same(r.turnAborts.map((a) => [a.agent, a.turn_id, a.cause, a.principal.kind]), [['main', 'old', 'stale', 'system'], ['main', 'stuck-task', 'stale', 'system']], 'each stale turn once, by its id');
  t.same(logs.filter((l) => /not live|not aborted/.test(l)), [], 'a task turn within its own limit is left alone, without a warning');
  const facts = r.log.read({ stream: 'heartbeat' }).filter((f) => f.type === HEARTBEAT_EVENTS.stale_aborted);
  t.same(facts.map((f) => f.data), [
    { agent: 'main', turn_id: 'old', session_key: 'api:1', chat_id: 1, running_ms: 1201_000, threshold_ms: 1200_000, killed: 1 },
    { agent: 'main', turn_id: 'stuck-task', session_key: 'task:def', chat_id: 6, running_ms: 7201_000, threshold_ms: 7200_000, killed: 1 },
  ]);

  // Once a swept turn ends it is forgotten: the set holds only what still runs.
  running.splice(0, running.length);
  await r.hb.tick('main', null);
  running.push({ turn_id: 'old', session_key: 'api:1', started_ms: NOON - 1201_000, timeout_ms: 600_000 });
  await r.hb.tick('main', null);
  t.same(r.turnAborts.map((a) => a.turn_id), ['old', 'stuck-task', 'old'], 'not remembered after it stopped running');
});

await t.test('stop() resolves at once with an answer outstanding, ends that heartbeat\'s own turn, and delivers nothing after', async (t) => {
  let answer!: (text: string) => void;
  const r = rig(t, { sessions: [session(1)], answers: { 1: new Promise<string>((resolve) => (answer = resolve)) } });
  await r.hb.tick('main', null);
  await until('the heartbeat to be asked', () => r.asked.length === 1);
  t.equal(r.asked.length, 1, 'the heartbeat is running');
  // The answer never comes before stop() resolves, so a stop that waited for it would lose this race.
  let guard: NodeJS.Timeout | undefined;
  const stopped = await Promise.race([r.hb.stop().then(() => 'stopped'), new Promise<string>((res) => (guard = setTimeout(() => res('still waiting for the answer'), 10_000)))]);
  clearTimeout(guard);
  t.equal(stopped, 'stopped');
  t.same(r.turnAborts.map((a) => [a.agent, a.request_id, a.turn_id, a.cause]), [['main', r.asked[0]!.request_id, undefined, 'requester-stopped']], 'its turn is ended by its request id, not left for the agents\' shutdown');
  t.same(r.aborts, [], 'nothing else in the chat');
  answer('The deploy failed.');
  // The heartbeat has taken the late answer and dropped it: its send is over.
  await r.hb.idle();
  t.same(r.delivered, [], 'an answer arriving after stop is not delivered');
  t.same(r.log.read({ stream: 'heartbeat' }), [], 'nor recorded');
});

await t.test('a tick under way when stop() is called asks nothing', async (t) => {
  const r = rig(t, { sessions: [session(1)], answers: {} });
  const tick = r.hb.tick('main', null);
  await r.hb.stop();
  await tick;
  // Nothing sent is still going (a heartbeat sent by the tick would be waited for here).
  await r.hb.idle();
  t.same(r.asked, [], 'no heartbeat outlives stop()');
});

await t.test('loops tick on the injected clock, each on its own interval, and stop', async (t) => {
  const target = { chat_id: 9, topic_id: null, prompt: null, ack_token: null, interval_minutes: 10, quiet_start: null, quiet_end: null };
  const r = rig(t, { sessions: [session(9)], answers: {}, heartbeat: { interval_minutes: 30, group_targets: [target] } });
  t.equal(r.hb.start(), 2, 'the chat loop and the target loop');
  t.same(r.clock.pending(), [NOON + 10 * MIN, NOON + 30 * MIN]);
  // A loop sets its next timer once its tick has ended: two timers again means every tick fired so far is done.
  const ticked = (queries: number) => until(`${queries} session queries and both loops re-armed`, () => r.sessionQueries() === queries && r.clock.pending().length === 2);
  r.clock.increment(10 * MIN);
  await ticked(1);
  t.equal(r.sessionQueries(), 1, 'the 10-minute target ticked');
  await r.answered(1);
  t.equal(r.asked.length, 1);
  r.clock.increment(10 * MIN);
  await ticked(2);
  r.clock.increment(10 * MIN);
  await ticked(4);
  t.equal(r.sessionQueries(), 4, 'at 30 minutes both ticked (the target twice more)');
  t.same(r.clock.pending(), [NOON + 40 * MIN, NOON + 60 * MIN], 'each loop on its own interval');
  await r.hb.stop();
  t.same(r.clock.pending(), [], 'stop cleared both timers');
  r.clock.increment(60 * MIN);
  t.equal(r.sessionQueries(), 4, 'nothing after stop');
});
