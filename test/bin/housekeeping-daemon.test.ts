// Heartbeat, memory maintenance and cleanup in the real daemon: a real SQLite log in a temp home,
// the fake claude, and the loops driven by a SimulatedClock passed as the daemon's turn clock.
import t from 'tap';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startDaemon } from '../../bin/daemon.js';
import { agentsOf } from '../../bus/index.js';
import { CHAT_SESSION_EVENTS, HEARTBEAT_EVENTS, MEMORY_MAINTENANCE_EVENTS, NOTIFICATION_EVENTS, type Principal } from '../../schemas/index.js';
import { homePaths, loadCronJobs } from '../../store/index.js';
import { tempHome } from '../fixtures/temp-home.js';
import { TimerClock } from '../fixtures/timer-clock.js';
import { until } from './cli-helpers.js';

const BIN = fileURLToPath(new URL('../fixtures/bin', import.meta.url));
const ANN: Principal = { kind: 'user', id: 'ann', acting_for: null, role: 'admin', allowed_agents: [], origin: { transport: 'api', chat_id: 7, topic_id: null } };

await t.test('the daemon runs heartbeats resume-only, suppresses the ack, delivers the rest, seeds the review job and stops', async (t) => {
  const scratch = tempHome(t);
  const root = join(scratch.dir, 'home');
  mkdirSync(join(root, 'config'), { recursive: true });
  writeFileSync(
    join(root, 'config', 'config.json'),
    JSON.stringify({
      heartbeat: {
        enabled: true, interval_minutes: 1, cooldown_minutes: 0, quiet_start: 0, quiet_end: 0, prompt: 'ping', ack_token: 'echo: ping',
        group_targets: [{ chat_id: 8, prompt: 'news' }],
      },
    }),
  );
  const paths = homePaths(root);
  const clock = new TimerClock();
  const d = await startDaemon({ paths, logToStderr: false, internalPort: 0, killGraceMs: 200, turnClock: clock, env: { PATH: `${BIN}:${process.env.PATH}`, HOME: root } });
  let running = true;
  scratch.beforeRemove(() => (running ? d.stop('test') : undefined));

  t.same(loadCronJobs(paths).map((j) => j.id), ['memory-review'], 'the monthly review record is seeded at the first start');
  t.equal(d.log.read({ stream: 'housekeeping', types: [MEMORY_MAINTENANCE_EVENTS.review_seeded] }).length, 1);

  // Chats 7 and 8 get sessions the way any surface opens them; chat 9 never talks, so it has none.
  for (const chat of [7, 8]) {
    const asked = agentsOf(d.bus).ask({ agent: 'main', transport: 'api', chat_id: chat, topic_id: null, text: 'hello', kind: 'foreground' }, { ...ANN, origin: { ...ANN.origin, chat_id: chat } });
    t.equal((await asked.outcome).status, 'completed');
  }
  clock.increment(60_000);
  const answered = await until('both heartbeats answered', () => {
    const facts = d.log.read({ stream: 'heartbeat', types: [HEARTBEAT_EVENTS.answered] });
    return facts.length >= 2 && facts;
  });
  const byChat = new Map(answered.map((f) => [(f.data as { chat_id: number }).chat_id, (f.data as { delivered: boolean }).delivered]));
  t.same([...byChat.entries()].sort(), [[7, false], [8, true]], 'the ack is dropped; the group target\'s answer is delivered');
  const merged = d.log.read({ types: [CHAT_SESSION_EVENTS.messages_merged] }).flatMap((e) => (e.data as { messages: { content: string; meta?: { source?: string } }[] }).messages);
  t.same(merged.filter((m) => m.meta?.source === 'heartbeat').map((m) => m.content), ['echo: news'], 'only the non-ack answer reaches the chat');
  const turns = d.log.read({ types: ['turn.started'] }).map((e) => e.data as { session_key: string; prompt: string });
  t.notOk(turns.some((x) => x.session_key === 'api:9'), 'no session was created by a heartbeat');

  // Stopping ends the loops (and any heartbeat still running, without waiting for its answer); a tick after it would write to a closed log and throw.
  await d.stop('test');
  running = false;
  t.same(clock.pending(), [], 'no loop left a timer on the clock');
  const after: string[] = [];
  d.bus.events$.subscribe((e) => void after.push(e.type));
  clock.increment(10 * 60_000);
  t.same(after, [], 'ten minutes later nothing ran');
});

await t.test('svc stops at once while a heartbeat turn runs: that turn is ended as the heartbeat\'s own, owed no restart notice', async (t) => {
  const scratch = tempHome(t);
  const root = join(scratch.dir, 'home');
  mkdirSync(join(root, 'config'), { recursive: true });
  // `[[hold]]`: the fake CLI answers nothing and waits to be killed (a turn that would run for timeouts.background).
  writeFileSync(join(root, 'config', 'config.json'), JSON.stringify({ heartbeat: { enabled: true, interval_minutes: 1, cooldown_minutes: 0, quiet_start: 0, quiet_end: 0, prompt: 'check [[hold]]' } }));
  const paths = homePaths(root);
  const clock = new TimerClock();
  const d = await startDaemon({ paths, logToStderr: false, internalPort: 0, killGraceMs: 200, turnClock: clock, env: { PATH: `${BIN}:${process.env.PATH}`, HOME: root } });
  let running = true;
  scratch.beforeRemove(() => (running ? d.stop('test') : undefined));
  const asked = agentsOf(d.bus).ask({ agent: 'main', transport: 'api', chat_id: 7, topic_id: null, text: 'hello', kind: 'foreground' }, ANN);
  t.equal((await asked.outcome).status, 'completed');
  clock.increment(60_000);
  const started = await until('the heartbeat turn runs', () => d.log.read({ types: ['turn.started'] }).find((e) => (e.data as { request_id: string }).request_id.startsWith('heartbeat:')));
  await until('its CLI spawned', () => d.log.read({ stream: started.stream, types: ['turn.spawned'] }).length > 0);

  // The log closes with the daemon: what the stop records is seen on the bus.
  const seen: { stream: string; type: string; data: unknown }[] = [];
  d.bus.events$.subscribe((e) => void seen.push(e));
  // Before, stop waited for the heartbeat's answer, and nothing ended its turn until timeouts.background.
  let guard: NodeJS.Timeout | undefined;
  const stopped = await Promise.race([
    d.stop('test').then(() => 'stopped'),
    new Promise<string>((r) => (guard = setTimeout(() => r('still waiting after 20 s'), 20_000))),
  ]);
  clearTimeout(guard);
  running = stopped !== 'stopped';
  t.equal(stopped, 'stopped');
  t.match(seen.filter((e) => e.stream === started.stream && e.type === 'turn.aborted').map((e) => e.data), [{ cause: 'requester-stopped' }], 'ended as the heartbeat\'s, not cut by the shutdown');
  t.same(seen.filter((e) => e.type === NOTIFICATION_EVENTS.created), [], 'no "answer interrupted" notice for a heartbeat');
});
