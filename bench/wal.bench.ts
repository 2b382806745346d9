import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import WebSocket from 'ws';
import { Bus } from '../bus/index.js';
import { openDirectApi, startApiServer, type DirectLimits } from '../edges/index.js';
import { connectionMachine } from '../machines/index.js';
import { defaultConfig } from '../schemas/index.js';
import { PROJECTIONS, SqliteEventLog, WAL_TRUNCATE_BYTES, homePaths } from '../store/index.js';
import type { BenchReport } from './report.js';
import { anyEvent } from '../test/fixtures/any-event.js';

const REJECTED = 10_000;
const ACCEPTED = 100_000;
const CONCURRENT_SOCKETS = 50;
const BATCH = 100;
const MB = 1024 * 1024;
const data = { turn_id: 't-1', status: 'completed', text: 'x'.repeat(200) };

function walBytes(db: string): number {
  try {
    return statSync(`${db}-wal`).size;
  } catch {
    return 0;
  }
}

/** The daemon's write path: SQLite log with the worker checkpointer, the bus, the projections. */
function openLog(db: string, truncateAtBytes?: number) {
  const log = SqliteEventLog.open(db, {
    projections: PROJECTIONS,
    backgroundCheckpoints: { onError: (m) => console.error(m), ...(truncateAtBytes ? { truncateAtBytes } : {}) },
  });
  return { log, bus: new Bus({ log }) };
}

/** `n` sockets that each send a wrong token and wait for the close, `CONCURRENT_SOCKETS` at a time. */
async function rejectedSockets(port: number, n: number): Promise<number> {
  let started = 0;
  let closed = 0;
  const one = () =>
    new Promise<void>((resolve) => {
      const ws = new WebSocket(`ws://127.0.0.1:${port}/ws`);
      ws.on('open', () => ws.send(JSON.stringify({ type: 'auth', token: 'wrong', e2e_pk: Buffer.alloc(32, 1).toString('base64') })));
      ws.on('unexpected-response', () => {
        ws.terminate();
        resolve();
      });
      ws.on('error', () => undefined);
      ws.on('close', () => {
        closed++;
        resolve();
      });
    });
  const lane = async () => {
    while (started < n) {
      started++;
      await one();
    }
  };
  await Promise.all(Array.from({ length: CONCURRENT_SOCKETS }, lane));
  return closed;
}

async function rejectedRun(report: BenchReport, dir: string, label: string, n: number, limits: Partial<DirectLimits>): Promise<void> {
  const db = join(dir, `${label}.db`);
  const { log, bus } = openLog(db);
  const home = homePaths(join(dir, `${label}-home`));
  mkdirSync(home.configDir, { recursive: true });
  writeFileSync(home.configFile, JSON.stringify({ api: { enabled: true, token: 'bench-token-0123456789' } }));
  const cfg = defaultConfig();
  cfg.api = { ...cfg.api, enabled: true, token: 'bench-token-0123456789' };
  const direct = openDirectApi({ bus, config: () => cfg, paths: home, providers: () => [], connectionMachine, limits, log: () => undefined })!;
  const server = (await startApiServer({ host: '127.0.0.1', port: 0, allowPublic: false, surfaces: [direct.surface], log: () => undefined }))!;
  const eventsBefore = log.lastSeq();
  const walBefore = walBytes(db);
  const t0 = performance.now();
  await rejectedSockets(server.port!, n);
  const secs = (performance.now() - t0) / 1000;
  await new Promise((r) => setImmediate(r));
  report.figure(`${label}: new events after ${n.toLocaleString('en-US')} rejected /ws connections`, log.lastSeq() - eventsBefore, 'events', { target: { op: '<=', value: 0 } });
  report.figure(`${label}: WAL growth (before the fix: 3 events + a stream head each, 178 MB per 10k)`, (walBytes(db) - walBefore) / MB, 'MB');
  report.figure(`${label}: failed authentications per second from one address`, n / secs, 'auth/s');
  report.figure(`${label}: waiting sockets closed to make room (the address past its share)`, direct.hub.unauthenticated.totals.get('evicted') ?? 0, 'sockets');
  server.close();
  bus.close();
  await log.stopCheckpoints();
  log.close();
}

/** ACCEPTED events through bus.publish in batches of BATCH; the WAL's size after every batch. */
async function acceptedRun(dir: string, name: string, truncateAtBytes?: number) {
  const db = join(dir, name);
  const { log, bus } = openLog(db, truncateAtBytes);
  let peak = 0;
  let slowestBatchMs = 0;
  const t0 = performance.now();
  for (let done = 0; done < ACCEPTED; done += BATCH) {
    const b0 = performance.now();
    await Promise.all(Array.from({ length: BATCH }, (_, i) => bus.publish(anyEvent({ stream: `turn:${(done + i) % 500}`, type: 'turn.completed', data }))));
    slowestBatchMs = Math.max(slowestBatchMs, performance.now() - b0);
    peak = Math.max(peak, walBytes(db));
  }
  const secs = (performance.now() - t0) / 1000;
  // What is left once the checkpointer has had its next look (bounded wait; PASSIVE alone never shrinks it).
  const settle = performance.now() + 3000;
  while (walBytes(db) > WAL_TRUNCATE_BYTES && performance.now() < settle) await new Promise((r) => setTimeout(r, 20));
  const result = { events: log.lastSeq(), walEnd: walBytes(db), peak, slowestBatchMs, perSecond: ACCEPTED / secs };
  bus.close();
  await log.stopCheckpoints();
  log.close();
  return result;
}

export async function benchWal(report: BenchReport): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-wal-'));
  try {
    report.section('Event log under hostile and sustained load (WAL size, event count)');
    // Limits raised so all 10,000 reach the auth check at full speed; then the defaults, under which
    // failures past the limit are answered a second late and the sockets waiting are capped: the
    // guess rate one address gets is the figure.
    await rejectedRun(report, dir, 'limits off', REJECTED, { authFailuresPerWindow: 1_000_000, maxPendingPerAddress: 1_000_000, maxPendingTotal: 1_000_000 });
    await rejectedRun(report, dir, 'default limits', 1_000, {});

    const bounded = await acceptedRun(dir, 'bounded.db');
    // The same load with the truncation threshold out of reach: PASSIVE checkpoints only, as before the fix.
    const unbounded = await acceptedRun(dir, 'unbounded.db', 1024 * 1024 * MB);
    const n = ACCEPTED.toLocaleString('en-US');
    report.figure(`events in the log after ${n} accepted events`, bounded.events, 'events');
    report.figure(`peak WAL during ${n} events (truncate at ${WAL_TRUNCATE_BYTES / MB} MB)`, bounded.peak / MB, 'MB', {
      ratio: bounded.peak / unbounded.peak,
      against: 'PASSIVE only',
    });
    report.figure(`WAL after ${n} events, once the checkpointer looked`, bounded.walEnd / MB, 'MB', {
      ratio: bounded.walEnd / Math.max(1, unbounded.walEnd),
      against: 'PASSIVE only',
      target: { op: '<=', value: WAL_TRUNCATE_BYTES / MB },
    });
    report.figure(`peak WAL during ${n} events, PASSIVE only (before the fix)`, unbounded.peak / MB, 'MB');
    report.figure('events per second through bus.publish, bounded WAL', bounded.perSecond, 'events/s', { ratio: bounded.perSecond / unbounded.perSecond, against: 'PASSIVE only' });
    report.figure('slowest batch of 100 publishes, bounded WAL (TRUNCATE holds the write lock)', bounded.slowestBatchMs, 'ms', {
      ratio: bounded.slowestBatchMs / unbounded.slowestBatchMs,
      against: 'PASSIVE only',
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
