import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BenchReport } from './report.js';
import { FIXTURES, startServer } from './server-handle.js';

const CONNECTIONS = 1000;
const RUNS = 3;

/**
 * The young generation is held at V8's initial size. A burst of 1,000 authentications grows it
 * (up to 32 MB, whatever the burst allocates) and V8's memory reducer gives that back after some
 * 10-20 idle seconds; reading before then would charge a fixed, transient cost to the connections.
 * Pinning it reads what an idle daemon holds without the wait (both ways agreed within 0.3 KB).
 */
const SERVER_FLAGS = ['--max-semi-space-size=1'];

/**
 * One fresh daemon process per run; the clients live in a third process, so only the daemon's
 * growth is counted. Both readings follow full collections. Resident memory, not heap: uWS's
 * native per-socket state and the allocator's overhead are what a user pays too.
 */
async function rssPerConnection(home: string) {
  const server = await startServer('daemon', home, {}, SERVER_FLAGS);
  const before = await server.rss();
  const clients = spawn(process.execPath, [join(FIXTURES, 'idle-clients.mjs'), `ws://127.0.0.1:${server.port}/ws`, server.token, String(CONNECTIONS)], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    clients.stdout.on('data', (b) => /ready/.test(String(b)) && resolve());
    clients.once('exit', () => reject(new Error('idle clients exited before all authenticated')));
  });
  const after = await server.rss();
  const exited = new Promise((r) => clients.once('exit', r));
  clients.stdin.end();
  await exited;
  await server.stop();
  return (after - before) / CONNECTIONS;
}

export async function benchConnections(report: BenchReport): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-conn-'));
  try {
    const runs: number[] = [];
    for (let i = 0; i < RUNS; i++) runs.push(await rssPerConnection(join(dir, `run${i}`)));
    const sorted = [...runs].sort((a, b) => a - b);
    report.section(`direct API: ${CONNECTIONS.toLocaleString('en-US')} idle authenticated /ws connections, daemon in its own process`);
    report.figure(`RSS per connection, median of ${RUNS} runs (${runs.map((r) => (r / 1000).toFixed(1)).join(', ')} KB)`, sorted[RUNS >> 1]! / 1000, 'KB', {
      target: { op: '<=', value: 16 },
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
