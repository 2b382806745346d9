import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { SimulatedClock, createActor } from 'xstate';
import { CronScheduler, OneShotRuns, prepareCronJobFolder } from '../actors/index.js';
import { Bus, serveAgents } from '../bus/index.js';
import { compileSchedule, cronScheduleMachine, type CompiledSchedule } from '../machines/index.js';
import { AUTOMATION_EVENTS, CHAT_SESSION_COMMANDS, defaultConfig, type CronJobRecord, type TurnOutcome } from '../schemas/index.js';
import { PROJECTIONS, SqliteEventLog, homePaths, saveCronJobs } from '../store/index.js';
import type { BenchReport } from './report.js';
import { median, percentile, within } from './timing.js';

/*
 * 1,000 cron jobs: what a tick of the plan (machines/cron-schedule.machine.ts) costs when nothing is
 * due and when a minute's jobs are (croner recomputes only the fired jobs' next fires), and
 * how long the event loop stalls while all of them fire in the same minute through the real
 * scheduler, one-shot runner, SQLite log and cron_jobs.json writes (the agent answers at once, so
 * this is svc's own cost, not a CLI's), against the idle loop measured in the same run.
 */

const JOBS = 1_000;
const SCHEDULES = ['* * * * *', '*/5 * * * *', '0 * * * *', '30 2 * * *', '0 9 * * MON-FRI', '@daily', '15 */2 * * *', '0 0 1 JAN,JUL *'];
const ZONES = ['UTC', 'Europe/Berlin', 'America/New_York', 'Asia/Tokyo', 'Australia/Sydney'];
const FIRING_MINUTES = 5;
/** CRON_FIRE_BATCH=<n> in the environment tries another batch size (the plan's bound, machines/cron-schedule.machine.ts). */
const fireBatch = process.env.CRON_FIRE_BATCH ? { fireBatch: Number(process.env.CRON_FIRE_BATCH) } : {};

function jobs(allEveryMinute: boolean, created: number): CronJobRecord[] {
  return Array.from({ length: JOBS }, (_, i) => ({
    id: `job${i}`,
    title: `Job ${i}`,
    schedule: allEveryMinute ? '* * * * *' : SCHEDULES[i % SCHEDULES.length]!,
    timezone: ZONES[i % ZONES.length]!,
    agent: 'main',
    enabled: true,
    description: `do thing ${i}`,
    created_at: Math.floor(created / 1000),
  })) as unknown as CronJobRecord[];
}

function tickFigures(report: BenchReport): void {
  const t0 = performance.now();
  const list = jobs(false, 0);
  for (const j of list) compileSchedule(j.schedule, String(j.timezone)) as CompiledSchedule;
  report.figure(`compile ${JOBS} schedules (a reload)`, performance.now() - t0, 'ms');
  const clock = new SimulatedClock();
  let at = Date.parse('2026-03-28T00:00:30Z');
  clock.set(at);
  const plan = createActor(cronScheduleMachine, { input: { now: at }, clock });
  let fired = 0;
  plan.on('due', (e) => void (fired += e.fires.length));
  plan.start();
  plan.send({ type: 'jobs.set', jobs: list.map((j) => ({ id: j.id, expr: j.schedule, zone: String(j.timezone), enabled: true })), now: at });
  // Idle: a check a second inside a minute where nothing is due (what the old scheduler paid in full at every tick).
  const idle: number[] = [];
  for (let i = 1; i <= 29; i++) {
    const s = performance.now();
    plan.send({ type: 'clock', now: at + i * 1_000 });
    idle.push(performance.now() - s);
  }
  if (fired !== 0) throw new Error(`${fired} fires in an idle half minute`);
  // Busy: one tick a minute for an hour, each firing that minute's jobs.
  const busy: number[] = [];
  const dueCounts: number[] = [];
  for (let minute = 1; minute <= 60; minute++) {
    at = Date.parse('2026-03-28T00:00:00Z') + minute * 60_000;
    const before = fired;
    const s = performance.now();
    plan.send({ type: 'clock', now: at });
    // The rest of the minute's fires, batch by batch (the daemon lets the loop turn between them).
    while (plan.getSnapshot().matches('draining')) clock.increment(0);
    busy.push(performance.now() - s);
    dueCounts.push(fired - before);
  }
  plan.stop();
  if (fired === 0) throw new Error('no job fired in an hour');
  const idleSorted = [...idle].sort((a, b) => a - b);
  report.figure(`idle tick, ${JOBS} jobs, none due (median of 29)`, median(idle), 'ms', { target: { op: '<=', value: 1 } });
  report.figure(`  p99 idle tick`, percentile(idleSorted, 0.99), 'ms', { target: { op: '<=', value: 1 } });
  const perDue = busy.map((ms, i) => (dueCounts[i]! > 0 ? (ms * 1000) / dueCounts[i]! : 0)).filter((x) => x > 0);
  report.note('ticks with fires', `${median(dueCounts)} jobs due in the median minute, ${Math.max(...dueCounts)} at most`);
  report.figure(`tick with fires (median of 60 minutes)`, median(busy), 'ms');
  report.figure(`  per due job`, median(perDue), 'µs');
}

/**
 * Simulated time (a minute passes when the bench says so) whose 0-ms timers are real macrotasks, as
 * the daemon's clock's are: the plan hands out a burst batch by batch after 0-ms delays, and on a bare
 * SimulatedClock those would run inside the same increment(), so the loop would never turn between them.
 */
function minuteClock(sim: SimulatedClock) {
  type Handle = { real: NodeJS.Timeout } | { sim: unknown };
  return {
    now: () => sim.now(),
    setTimeout: (fn: () => void, ms: number): Handle => (ms <= 0 ? { real: setTimeout(fn, 0) } : { sim: sim.setTimeout(fn, ms) }),
    clearTimeout: (h: Handle) => ('real' in h ? clearTimeout(h.real) : sim.clearTimeout(h.sim as number)),
  };
}

async function loopDelay(during: () => Promise<void>): Promise<{ p99: number; max: number; mean: number }> {
  const h = monitorEventLoopDelay({ resolution: 1 });
  h.enable();
  await during();
  h.disable();
  return { p99: h.percentile(99) / 1e6, max: h.max / 1e6, mean: h.mean / 1e6 };
}

async function firingFigures(report: BenchReport): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-cron-'));
  const paths = homePaths(join(dir, 'home'));
  const start = Date.parse('2026-03-28T00:00:30Z');
  const list = jobs(true, start);
  saveCronJobs(paths, list);
  for (const j of list) prepareCronJobFolder(paths, j.id);
  const log = SqliteEventLog.open(join(dir, 'events.db'), { projections: PROJECTIONS, backgroundCheckpoints: { onError: (m) => console.error(m) } });
  const clock = new SimulatedClock();
  clock.set(start);
  const bus = new Bus({ log, clock: () => clock.now() });
  let answered = 0;
  serveAgents(bus, 'bench-agent', {
    accept: (m) => {
      answered++;
      const o: TurnOutcome = {
        request_id: m.request_id, turn_id: `t${answered}`, agent: m.agent, session_key: 'k', status: 'completed', text: 'ok', is_error: false, stream_fallback: false,
        files: [], provider: 'claude', model: null, session_id: null, usage: null, cost_usd: null, duration_ms: 1, reason: null,
      };
      return { outcome: Promise.resolve(o) };
    },
    abort: () => ({ killed: 0 }),
    list: () => [],
  });
  let delivered = 0;
  bus.handle(CHAT_SESSION_COMMANDS.recordEnvelope, 'bench-chat', () => (delivered++, { session_id: null }));
  const runner = new OneShotRuns({ bus, log, paths, config: defaultConfig, timezone: () => 'UTC' });
  const scheduler = new CronScheduler({ bus, log, paths, runner, defaultZone: () => 'UTC', clock: minuteClock(clock), watchIntervalMs: 2_000, ...fireBatch });
  await scheduler.start('bench');

  const finished = () => log.read({ streamPrefix: 'cron:', types: [AUTOMATION_EVENTS.delivered] }).length;
  let firingMs = 0;
  const firing = await loopDelay(async () => {
    const t0 = performance.now();
    for (let minute = 1; minute <= FIRING_MINUTES; minute++) {
      clock.increment(60_000);
      await within(
        (async () => {
          while (delivered < minute * JOBS) {
            await new Promise((r) => setImmediate(r));
            await scheduler.idle();
          }
        })(),
        `${JOBS} fires in minute ${minute}`,
      );
    }
    firingMs = performance.now() - t0;
  });
  if (finished() !== FIRING_MINUTES * JOBS) throw new Error(`delivered ${finished()} of ${FIRING_MINUTES * JOBS}`);
  // The same wall time with nothing to do: what the loop measures on this machine at rest.
  const idle = await loopDelay(() => new Promise((r) => setTimeout(r, Math.max(500, firingMs))));
  scheduler.stop();
  runner.stop();
  bus.close();
  await log.stopCheckpoints();
  log.close();
  rmSync(dir, { recursive: true, force: true });

  const fires = FIRING_MINUTES * JOBS;
  report.note(`${JOBS} jobs on * * * * *, ${FIRING_MINUTES} simulated minutes`, `${fires} fires, each: fact, one-shot run, record, delivery`);
  report.figure('fires per second (fact → run → record → delivered)', fires / (firingMs / 1000), 'fires/s');
  report.figure(`wall time for ${JOBS} fires of one minute`, firingMs / FIRING_MINUTES, 'ms');
  report.figure('event-loop p99 while firing', firing.p99, 'ms', { ratio: firing.p99 / Math.max(idle.p99, 0.001), against: 'idle loop p99', target: { op: '<=', value: 20 } });
  report.figure('event-loop max while firing', firing.max, 'ms');
  report.figure('event-loop p99 idle (baseline, same run)', idle.p99, 'ms');
}

export async function benchCron(report: BenchReport): Promise<void> {
  report.section(`cron: ${JOBS} jobs`);
  tickFigures(report);
  await firingFigures(report);
}
