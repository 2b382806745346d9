import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { startDaemon, type RunningDaemon } from '../bin/daemon.js';
import { TASK_EVENTS, TURN_EVENTS } from '../schemas/index.js';
import { homePaths } from '../store/index.js';
import type { BenchReport } from './report.js';
import { percentile, within } from './timing.js';

/*
 * Delegated tasks through the internal API of a real daemon (SQLite log, task hub, agent runtime)
 * running the test suite's fake claude, which answers at once. A task's whole path is measured:
 * `POST /tasks/create` (checks, folder seeded, `task.created` committed, the run queued, tasks.json
 * rewritten once for the facts that arrived together) and
 * on to its CLI spawned (`turn.spawned` of the run whose correlation is `task:<id>`); each finished
 * task also hands its parent a turn, as in use. The baseline is `GET /interagent/agents` on the
 * same API, same connections and token: the cost of the route and auth alone. The daemon runs in
 * this process (its events are read off the bus, same clock), so the client's work is in every
 * figure alike. Bounded: CREATES tasks per throughput run, LATENCY_SAMPLES one at a time, each
 * phase within PHASE_BUDGET_MS.
 */
const CREATES = 120;
const LATENCY_SAMPLES = 40;
const BASELINE_REQUESTS = 2000;
const CONCURRENCY = 8;
const BURST_CHAT = 1;
const PHASE_BUDGET_MS = 45_000;
const REQUEST_DEADLINE_MS = 15_000;
const FAKE_BIN = fileURLToPath(new URL('../../test/fixtures/bin', import.meta.url));

const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });

function call(port: number, token: string, method: string, path: string, body?: unknown): Promise<{ status: number; json: unknown }> {
  let req: ReturnType<typeof request>;
  const answered = new Promise<{ status: number; json: unknown }>((resolve, reject) => {
    const headers: Record<string, string> = { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) };
    req = request({ host: '127.0.0.1', port, method, path, agent, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, json: JSON.parse(Buffer.concat(chunks).toString('utf8') || 'null') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
  return within(answered, `answer to ${method} ${path}`, REQUEST_DEADLINE_MS).catch((e: unknown) => {
    req.destroy();
    throw e;
  });
}

/** `n` calls from CONCURRENCY workers, stopping early at the budget; each call's latency and answer. */
async function drive<T>(n: number, one: (i: number) => Promise<T>): Promise<{ elapsedMs: number; latencies: number[]; results: T[] }> {
  const latencies: number[] = [];
  const results: T[] = [];
  let next = 0;
  const t0 = performance.now();
  const worker = async () => {
    while (next < n && performance.now() - t0 < PHASE_BUDGET_MS) {
      const i = next++;
      const s = performance.now();
      results.push(await one(i));
      latencies.push(performance.now() - s);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return { elapsedMs: performance.now() - t0, latencies, results };
}

const TURN_ENDS = new Set<string>([TURN_EVENTS.completed, TURN_EVENTS.failed, TURN_EVENTS.timed_out, TURN_EVENTS.aborted]);

/**
 * When each task's CLI was spawned (performance.now()), from the turn facts as the bus hands them
 * out; and when no turn at all is running (a task's own, or its parent's turn on the result).
 */
function watchSpawns(d: RunningDaemon) {
  const taskOfTurn = new Map<string, string>();
  const spawnedAt = new Map<string, number>();
  const waiters = new Map<string, () => void>();
  const finished = new Set<string>();
  const running = new Set<string>();
  const sub = d.bus.events$.subscribe((e) => {
    if (e.type === TURN_EVENTS.started) running.add(e.stream);
    else if (TURN_ENDS.has(e.type)) running.delete(e.stream);
    if (e.type === TURN_EVENTS.started && e.correlation?.startsWith('task:')) taskOfTurn.set(e.stream, e.correlation.slice(5));
    else if (e.type === TURN_EVENTS.spawned) {
      const id = taskOfTurn.get(e.stream);
      if (id && !spawnedAt.has(id)) {
        spawnedAt.set(id, performance.now());
        waiters.get(id)?.();
      }
    } else if (e.type === TASK_EVENTS.completed || e.type === TASK_EVENTS.failed) finished.add(e.stream.slice(5));
  });
  return {
    spawnedAt,
    finished,
    spawned: (id: string) => (spawnedAt.has(id) ? Promise.resolve() : within(new Promise<void>((r) => waiters.set(id, r)), `spawn of task ${id}`)),
    /** Resolves once every task in `ids` has ended and no turn runs (the parents' turns on their results included). */
    settled: (ids: string[]) =>
      within(
        new Promise<void>((resolve) => {
          const quiet = () => running.size === 0 && ids.every((id) => finished.has(id));
          if (quiet()) return resolve();
          const each = d.bus.events$.subscribe(() => {
            if (!quiet()) return;
            each.unsubscribe();
            resolve();
          });
        }),
        `${ids.length} task(s) and every turn they started to end`,
        PHASE_BUDGET_MS,
      ),
    stop: () => sub.unsubscribe(),
  };
}

export async function benchTasks(report: BenchReport): Promise<void> {
  report.section(`tasks: ${CREATES} creates from ${CONCURRENCY} connections, ${LATENCY_SAMPLES} one at a time, fake claude, baseline GET /interagent/agents`);
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-tasks-'));
  const root = join(dir, 'home');
  const paths = homePaths(root);
  mkdirSync(paths.configDir, { recursive: true });
  // The shipped task settings: a burst from one chat runs max_parallel (5) at a time, the rest queue.
  writeFileSync(paths.configFile, JSON.stringify({ api: { enabled: false }, memory: { enabled: false } }));
  const d = await startDaemon({ paths, logToStderr: false, internalPort: 0, env: { PATH: `${FAKE_BIN}:${process.env.PATH}`, HOME: root, FAKE_CLI_REPLY: 'ok' } });
  const token = (JSON.parse(readFileSync(paths.mainAgentTokenFile, 'utf8')) as { token: string }).token;
  const port = d.internalPort;
  const watch = watchSpawns(d);
  const create = async (i: number, chat: number) => {
    const r = await call(port, token, 'POST', '/tasks/create', { from: 'main', prompt: `bench task ${i}`, name: `bench ${i}`, chat_id: chat });
    if (r.status !== 200) throw new Error(`bench: /tasks/create answered ${r.status}: ${JSON.stringify(r.json)}`);
    return (r.json as { task_id: string }).task_id;
  };
  try {
    // Warm-up: both routes, and a few tasks through to their end.
    await drive(200, async () => call(port, token, 'GET', '/interagent/agents'));
    const warm = await Promise.all([0, 1, 2, 3].map((i) => create(i, 1000 + i)));
    await Promise.all(warm.map((id) => watch.spawned(id)));

    const base = await drive(BASELINE_REQUESTS, async () => (await call(port, token, 'GET', '/interagent/agents')).status);
    const baseRate = (base.latencies.length / base.elapsedMs) * 1000;
    const baseP99 = percentile([...base.latencies].sort((a, b) => a - b), 0.99);

    // Throughput: an agent in one chat delegating as fast as the API takes it, from every worker.
    const sentAt = new Map<string, number>();
    const burst = await drive(CREATES, async (i) => {
      const s = performance.now();
      const id = await create(i, BURST_CHAT);
      sentAt.set(id, s);
      return id;
    });
    const createRate = (burst.latencies.length / burst.elapsedMs) * 1000;
    await within(Promise.all(burst.results.map((id) => watch.spawned(id))), 'every burst task spawned', PHASE_BUDGET_MS * 2);
    const burstToRunning = burst.results.map((id) => watch.spawnedAt.get(id)! - sentAt.get(id)!).sort((a, b) => a - b);

    // Latency alone: one task at a time on a quiet daemon, the next once the last one and the
    // parent's turn on its result have ended (so no fake CLI is starting beside the one measured).
    await watch.settled(burst.results);
    const alone: number[] = [];
    const t0 = performance.now();
    for (let i = 0; i < LATENCY_SAMPLES && performance.now() - t0 < PHASE_BUDGET_MS; i++) {
      const s = performance.now();
      const id = await create(10_000 + i, 2000 + i);
      await watch.spawned(id);
      alone.push(watch.spawnedAt.get(id)! - s);
      await watch.settled([id]);
    }
    alone.sort((a, b) => a - b);

    report.figure('baseline GET /interagent/agents: calls/s', baseRate, 'calls/s');
    report.figure('POST /tasks/create: tasks created/s', createRate, 'tasks/s', { ratio: createRate / baseRate, against: 'baseline', target: { op: '>=', value: 200 } });
    report.figure('baseline GET /interagent/agents: p99', baseP99, 'ms');
    report.figure('POST /tasks/create: p99 to its answer', percentile([...burst.latencies].sort((a, b) => a - b), 0.99), 'ms', {
      ratio: percentile([...burst.latencies].sort((a, b) => a - b), 0.99) / baseP99,
      against: 'baseline',
    });
    report.figure('create -> running under the burst (queued behind max_parallel): p50', percentile(burstToRunning, 0.5), 'ms');
    report.figure('create -> running under the burst (queued behind max_parallel): p99', percentile(burstToRunning, 0.99), 'ms');
    report.figure('create -> running (CLI spawned), one at a time: p50', percentile(alone, 0.5), 'ms');
    report.figure('create -> running (CLI spawned), one at a time: p99', percentile(alone, 0.99), 'ms', { target: { op: '<=', value: 100 } });
    report.note('tasks created (burst + one at a time)', `${burst.results.length} + ${alone.length}`);
  } finally {
    watch.stop();
    agent.destroy();
    await d.stop('bench');
    rmSync(dir, { recursive: true, force: true });
  }
}
