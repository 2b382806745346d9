import { Agent, request } from 'node:http';
import { performance } from 'node:perf_hooks';
import { parentPort, workerData } from 'node:worker_threads';

/*
 * The load generator of the webhooks bench, on a worker thread: its own event loop, so the
 * servers measured on the main thread do not also pay for the client's parsing and timers.
 */
export interface LoadJob {
  port: number;
  path: string;
  headers: Record<string, string>;
  body: string;
  requests: number;
  concurrency: number;
  /** Stop issuing after this, whatever is left. */
  budgetMs: number;
}
export interface LoadResult {
  /** Milliseconds from writing each request to its 202 having arrived whole, in completion order. */
  latencies: number[];
  elapsedMs: number;
  /** Answers other than 202 (none expected). */
  other: number;
}

async function run(job: LoadJob): Promise<LoadResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: job.concurrency });
  const latencies: number[] = [];
  let other = 0;
  let issued = 0;
  const start = performance.now();
  const one = () =>
    new Promise<void>((resolve, reject) => {
      const t0 = performance.now();
      const req = request({ host: '127.0.0.1', port: job.port, path: job.path, method: 'POST', agent, headers: { ...job.headers, 'content-length': Buffer.byteLength(job.body) } }, (res) => {
        res.resume();
        res.on('end', () => {
          if (res.statusCode === 202) latencies.push(performance.now() - t0);
          else other++;
          resolve();
        });
      });
      req.on('error', reject);
      req.end(job.body);
    });
  const lane = async () => {
    while (issued < job.requests && performance.now() - start < job.budgetMs) {
      issued++;
      await one();
    }
  };
  await Promise.all(Array.from({ length: job.concurrency }, lane));
  const elapsedMs = performance.now() - start;
  agent.destroy();
  return { latencies, elapsedMs, other };
}

if (parentPort && workerData) {
  const result = await run(workerData as LoadJob);
  parentPort.postMessage(result);
}
