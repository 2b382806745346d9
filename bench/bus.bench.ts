import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { Bus } from '../bus/index.js';
import { anyEvent } from '../test/fixtures/any-event.js';
import { PROJECTIONS, SqliteEventLog } from '../store/index.js';
import type { BenchReport } from './report.js';

const N = 50_000;
const data = { task_id: 't-1', status: 'running', note: 'x'.repeat(120) };

/**
 * Raw better-sqlite3: the same row shape and the log's own durability settings (WAL,
 * synchronous=NORMAL), no bus, no projections: the floor we compare against.
 */
function rawInserts(dir: string, batch: number): number {
  const db = new Database(join(dir, `raw-${batch}.db`));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec('CREATE TABLE events (seq INTEGER PRIMARY KEY AUTOINCREMENT, at TEXT, stream TEXT, type TEXT, data TEXT)');
  const insert = db.prepare('INSERT INTO events (at, stream, type, data) VALUES (?, ?, ?, ?)');
  const many = db.transaction((n: number) => {
    for (let i = 0; i < n; i++) insert.run(new Date().toISOString(), 'task:1', 'task.progressed', JSON.stringify(data));
  });
  const t0 = performance.now();
  for (let done = 0; done < N; done += batch) many(Math.min(batch, N - done));
  const secs = (performance.now() - t0) / 1000;
  db.close();
  return N / secs;
}

function openBus(dir: string, name: string): { bus: Bus; log: SqliteEventLog } {
  // As the daemon opens it: WAL checkpoints on a worker thread, off the event loop.
  const log = SqliteEventLog.open(join(dir, name), { projections: PROJECTIONS, backgroundCheckpoints: { onError: (m) => console.error(m) } });
  return { bus: new Bus({ log }), log };
}

/** Each publish awaited before the next: one transaction per event. */
async function busSingle(dir: string): Promise<number> {
  const { bus, log } = openBus(dir, 'single.db');
  let delivered = 0;
  bus.subscribe('count', () => void delivered++);
  const n = N / 5;
  const t0 = performance.now();
  for (let i = 0; i < n; i++) await bus.publish(anyEvent({ stream: 'task:1', type: 'task.progressed', data }));
  const secs = (performance.now() - t0) / 1000;
  if (delivered !== n) throw new Error(`delivered ${delivered} of ${n}`);
  bus.close();
  await log.stopCheckpoints();
  log.close();
  return n / secs;
}

/** Many publishes in one tick: the bus commits them in one transaction. */
async function busBatched(dir: string, batch: number): Promise<number> {
  const { bus, log } = openBus(dir, `batched-${batch}.db`);
  let delivered = 0;
  bus.subscribe('count', () => void delivered++);
  const t0 = performance.now();
  for (let done = 0; done < N; done += batch) {
    const pending: Promise<unknown>[] = [];
    for (let i = 0; i < batch; i++) pending.push(bus.publish(anyEvent({ stream: `task:${i % 50}`, type: 'task.progressed', data })));
    await Promise.all(pending);
  }
  const secs = (performance.now() - t0) / 1000;
  if (delivered !== N) throw new Error(`delivered ${delivered} of ${N}`);
  bus.close();
  await log.stopCheckpoints();
  log.close();
  return N / secs;
}

/** A steady 5k events/s for `seconds`: publish→subscriber latency and the longest event-loop stall. */
async function steadyLatency(dir: string, rate: number, seconds: number) {
  const { bus, log } = openBus(dir, 'steady.db');
  const latencies: number[] = [];
  const sentAt = new Map<number, number>();
  let next = 0;
  bus.subscribe('latency', (e) => {
    const t = sentAt.get((e.data as { i?: number }).i ?? -1);
    if (t !== undefined) latencies.push(performance.now() - t);
  });
  const stall = monitorEventLoopDelay({ resolution: 1 });
  stall.enable();
  const total = rate * seconds;
  const start = performance.now();
  await new Promise<void>((resolve) => {
    const tick = () => {
      const due = Math.min(total, Math.floor(((performance.now() - start) / 1000) * rate));
      while (next < due) {
        const i = next++;
        sentAt.set(i, performance.now());
        void bus.publish(anyEvent({ stream: `task:${i % 50}`, type: 'task.progressed', data: { ...data, i } }));
      }
      if (next >= total) setImmediate(resolve);
      else setTimeout(tick, 1);
    };
    tick();
  });
  await bus.publish(anyEvent({ stream: 'bench', type: 'bench.done', data: {} }));
  stall.disable();
  bus.close();
  await log.stopCheckpoints();
  log.close();
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))] ?? NaN;
  return { p50: pct(0.5), p99: pct(0.99), maxStallMs: stall.max / 1e6, count: latencies.length };
}

export async function benchBus(report: BenchReport): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-bus-'));
  try {
    const rawSingle = rawInserts(dir, 1);
    const rawBatched = rawInserts(dir, 1000);
    const single = await busSingle(dir);
    const batched = await busBatched(dir, 1000);
    report.section('spine: event log + bus');
    report.figure('raw better-sqlite3 insert, 1 per transaction', rawSingle, 'rows/s');
    report.figure('raw better-sqlite3 insert, 1000 per transaction', rawBatched, 'rows/s');
    report.figure('bus publish→deliver, awaited one by one', single, 'events/s', { ratio: single / rawSingle, against: 'raw 1/tx' });
    report.figure('bus publish→deliver, 1000 per tick (batched)', batched, 'events/s', {
      ratio: batched / rawBatched,
      against: 'raw 1000/tx',
      target: { op: '>=', value: 50_000 },
    });
    const steady = await steadyLatency(dir, 5000, 3);
    report.figure(`publish→subscriber latency p50 at 5k events/s (${steady.count} events)`, steady.p50, 'ms');
    report.figure('publish→subscriber latency p99 at 5k events/s', steady.p99, 'ms', { target: { op: '<=', value: 2 } });
    report.figure('longest event-loop stall during the steady run', steady.maxStallMs, 'ms', { target: { op: '<=', value: 20 } });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
