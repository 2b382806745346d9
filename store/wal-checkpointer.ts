import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/** How often the worker folds the WAL back into the database. */
export const CHECKPOINT_INTERVAL_MS = 1000;

/**
 * WAL size past which the worker checkpoints with TRUNCATE. A PASSIVE checkpoint copies pages but
 * never resets the WAL while commits keep arriving (the writer only wraps to the start when every
 * frame was copied when its transaction began), so under sustained writes the file grew without
 * end: 126 MB to 304 MB in one probe. TRUNCATE briefly holds the write lock; it runs right after a
 * PASSIVE pass, so only the frames committed since are left to copy.
 */
export const WAL_TRUNCATE_BYTES = 32 * 1024 * 1024;

/**
 * How often the worker looks at the WAL's size (a stat). A burst of appends writes hundreds of MB
 * per second (100,000 events in one second made a 316 MB WAL), so waiting for the next PASSIVE
 * tick to notice would let the file overshoot its bound by a second's worth of writes.
 */
export const WAL_SIZE_CHECK_MS = 100;

// Plain CommonJS run by the worker: its own connection to the same file, checkpointing PASSIVE
// (never waits for, nor blocks, the writer) every intervalMs, and PASSIVE then TRUNCATE as soon as
// a size check finds the WAL past its bound.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { statSync } = require('node:fs');
const Database = require(workerData.driver);
const db = new Database(workerData.path);
db.pragma('busy_timeout = 1000');
db.pragma('journal_size_limit = ' + workerData.truncateAtBytes);
const walSize = () => { try { return statSync(workerData.path + '-wal').size; } catch { return 0; } };
let lastPassive = Date.now();
const tick = () => {
  try {
    const over = walSize() > workerData.truncateAtBytes;
    if (!over && Date.now() - lastPassive < workerData.intervalMs) return;
    db.pragma('wal_checkpoint(PASSIVE)');
    lastPassive = Date.now();
    if (over) {
      const [r] = db.pragma('wal_checkpoint(TRUNCATE)');
      parentPort.postMessage({ truncated: r.busy === 0 });
    }
  } catch (e) { parentPort.postMessage({ error: String(e && e.message || e) }); }
};
const timer = setInterval(tick, workerData.sizeCheckMs);
parentPort.on('message', (m) => {
  if (m === 'stop') { clearInterval(timer); db.close(); parentPort.postMessage({ stopped: true }); }
});
`;

export interface WalCheckpointerOptions {
  intervalMs?: number;
  truncateAtBytes?: number;
  /** Each TRUNCATE attempt; `done` is false when a reader kept the WAL from being reset (retried next tick). */
  onTruncate?(done: boolean): void;
}

/**
 * Checkpoints the event log's WAL on a worker thread. SQLite's automatic checkpoint runs inside
 * whichever commit crosses the threshold, so on the daemon's event loop, and its fsync showed up
 * as 4 ms tail latency on every delivery; moving it here took p99 back under half a millisecond.
 */
export class WalCheckpointer {
  private readonly worker: Worker;
  private stopped = false;
  private readonly exited: Promise<void>;

  constructor(path: string, onError: (message: string) => void, opts: WalCheckpointerOptions = {}) {
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    const intervalMs = opts.intervalMs ?? CHECKPOINT_INTERVAL_MS;
    const workerData = { path, driver, intervalMs, sizeCheckMs: Math.min(intervalMs, WAL_SIZE_CHECK_MS), truncateAtBytes: opts.truncateAtBytes ?? WAL_TRUNCATE_BYTES };
    // execArgv: [] so the parent's flags (an ESM input type, a test runner's loaders) do not turn
    // this CommonJS snippet into something else.
    this.worker = new Worker(WORKER_SOURCE, { eval: true, execArgv: [], workerData });
    this.exited = new Promise((resolve) => this.worker.once('exit', () => resolve()));
    this.worker.on('message', (m: { error?: string; truncated?: boolean }) => {
      if (m.error) onError(m.error);
      if (m.truncated !== undefined) opts.onTruncate?.(m.truncated);
    });
    this.worker.on('error', (e) => onError(e.message));
    this.worker.unref();
  }

  /** Stop checkpointing and close the worker's connection before the writer's final checkpoint. */
  stop(): Promise<void> {
    if (!this.stopped) {
      this.stopped = true;
      // Unref'd so it never keeps the daemon alive; while we wait for it, it must.
      this.worker.ref();
      this.worker.on('message', (m: { stopped?: boolean }) => m.stopped && void this.worker.terminate());
      this.worker.postMessage('stop');
    }
    return this.exited;
  }
}
