import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import nacl from 'tweetnacl';
import uWS from 'uWebSockets.js';
import WebSocket from 'ws';
import { startDaemon, type RunningDaemon } from '../bin/daemon.js';
import { homePaths } from '../store/index.js';
import type { BenchReport } from './report.js';

const FIXTURES = fileURLToPath(new URL('../../bench/fixtures', import.meta.url));
// Enough chunks per turn to amortise per-turn work (spawning the CLI, session facts), few enough
// that a burst stays under the 4 MiB per-connection buffer cap even before the client reads.
const CHUNKS = 10_000;
const CHUNK_BYTES = 200;

async function bootDaemon(dir: string, env: Record<string, string>): Promise<{ d: RunningDaemon; token: string }> {
  mkdirSync(join(dir, 'config'), { recursive: true });
  writeFileSync(join(dir, 'config', 'config.json'), JSON.stringify({ api: { enabled: true, host: '127.0.0.1', port: 0 }, memory: { enabled: false } }));
  const d = await startDaemon({
    paths: homePaths(dir),
    logToStderr: false,
    internalPort: 0,
    apiPort: 0,
    env: { PATH: `${join(FIXTURES, 'bin')}:${process.env.PATH}`, HOME: dir, ...env },
  });
  const token = JSON.parse(readFileSync(join(dir, 'config', 'config.json'), 'utf8')).api.token as string;
  return { d, token };
}

interface Client {
  ws: WebSocket;
  send(o: unknown): void;
  onFrame(f: (frame: { type: string; [k: string]: unknown }) => void): void;
}

async function client(port: number, token: string, chat: number): Promise<Client> {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/ws`);
  const keys = nacl.box.keyPair();
  let shared: Uint8Array | null = null;
  let handler: (f: { type: string }) => void = () => undefined;
  await new Promise((r) => ws.once('open', r));
  const authed = new Promise<void>((resolve) => {
    ws.on('message', (raw) => {
      const text = raw.toString();
      if (!shared) {
        shared = nacl.box.before(Buffer.from(JSON.parse(text).e2e_pk, 'base64'), keys.secretKey);
        return resolve();
      }
      const buf = Buffer.from(text, 'base64');
      const plain = nacl.box.open.after(buf.subarray(24), buf.subarray(0, 24), shared)!;
      handler(JSON.parse(Buffer.from(plain).toString('utf8')));
    });
  });
  ws.send(JSON.stringify({ type: 'auth', token, e2e_pk: Buffer.from(keys.publicKey).toString('base64'), chat_id: chat }));
  await authed;
  return {
    ws,
    send: (o) => {
      const nonce = nacl.randomBytes(24);
      ws.send(Buffer.concat([Buffer.from(nonce), Buffer.from(nacl.box.after(Buffer.from(JSON.stringify(o)), nonce, shared!))]).toString('base64'));
    },
    onFrame: (f) => (handler = f as (f: { type: string }) => void),
  };
}

/**
 * Drives a client process (bench/fixtures/relay-client.mjs) round by round and measures this
 * process's CPU over each round: the server side alone, client crypto excluded.
 */
async function measureRounds(args: string[], rounds: number) {
  const child = spawn(process.execPath, [join(FIXTURES, 'relay-client.mjs'), ...args], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines: string[] = [];
  let wake: (() => void) | null = null;
  let buf = '';
  child.stdout.on('data', (b) => {
    buf += String(b);
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      lines.push(buf.slice(0, nl));
      buf = buf.slice(nl + 1);
      wake?.();
    }
  });
  const results: { frames: number; chars: number; secs: number; cpuUs: number }[] = [];
  for (let i = 0; i < rounds; i++) {
    const cpu = process.cpuUsage();
    const t0 = performance.now();
    child.stdin.write('go\n');
    while (lines.length === 0) await new Promise<void>((r) => (wake = r));
    const { frames, chars } = JSON.parse(lines.shift()!) as { frames: number; chars: number };
    const used = process.cpuUsage(cpu);
    results.push({ frames, chars, secs: (performance.now() - t0) / 1000, cpuUs: used.user + used.system });
  }
  child.stdin.end();
  await new Promise((r) => child.once('exit', r));
  // The first round warms up the JIT (and, for the relay, the first CLI spawn).
  // Per CLI chunk: svc may merge a burst of chunks into fewer frames, and that saving is the point.
  const r = results.at(-1)!;
  const chunks = r.chars / CHUNK_BYTES;
  return { perSec: chunks / r.secs, cpuUs: r.cpuUs / chunks, frames: r.frames, chunks };
}

/** CLI line → parser → turn → bus → hub → NaCl box → socket, CHUNKS chunks per turn. */
async function encryptedRelay(dir: string) {
  const { d, token } = await bootDaemon(dir, { BENCH_CHUNKS: String(CHUNKS), BENCH_CHUNK_BYTES: String(CHUNK_BYTES) });
  const r = await measureRounds(['relay', `ws://127.0.0.1:${d.apiPort}/ws`, token, '3'], 3);
  await d.stop('bench');
  return r;
}

/** The floor: a uWS WebSocket echoing the same payloads, no crypto, no bus. */
async function rawEcho() {
  const app = uWS.App().ws('/*', { message: (ws, msg) => void ws.send(msg, false) });
  const token = await new Promise<uWS.us_listen_socket>((r) => app.listen('127.0.0.1', 0, (t) => r(t)));
  const r = await measureRounds(['echo', `ws://127.0.0.1:${uWS.us_socket_local_port(token)}/`, String(CHUNKS), String(CHUNK_BYTES)], 2);
  uWS.us_listen_socket_close(token);
  return r;
}

/** Ten clients send at once; time from send to the first text_delta of each. */
async function firstDelta(dir: string) {
  const { d, token } = await bootDaemon(dir, { BENCH_CHUNKS: '20', BENCH_CHUNK_BYTES: '50' });
  const clients = await Promise.all(Array.from({ length: 10 }, (_, i) => client(d.apiPort!, token, i + 1)));
  const samples: number[] = [];
  for (let round = 0; round < 8; round++) {
    await Promise.all(
      clients.map(
        (c) =>
          new Promise<void>((resolve) => {
            const t0 = performance.now();
            let first = true;
            c.onFrame((f) => {
              if (f.type === 'text_delta' && first) {
                first = false;
                samples.push(performance.now() - t0);
              }
              if (f.type === 'result') resolve();
            });
            c.send({ type: 'message', text: `round ${round}` });
          }),
      ),
    );
  }
  for (const c of clients) c.ws.close();
  await d.stop('bench');
  samples.sort((a, b) => a - b);
  return { p50: samples[Math.floor(samples.length * 0.5)]!, p99: samples[Math.min(samples.length - 1, Math.floor(samples.length * 0.99))]!, n: samples.length };
}

export async function benchDirect(report: BenchReport): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-direct-'));
  try {
    const relay = await encryptedRelay(join(dir, 'relay'));
    const echo = await rawEcho();
    report.section(`direct API: ${CHUNKS} streamed ${CHUNK_BYTES}-byte chunks`);
    report.figure('raw uWS echo (baseline)', echo.perSec, 'msgs/s');
    report.figure('raw uWS echo CPU per message (server side)', echo.cpuUs, 'µs');
    report.figure(`encrypted relay: CLI line -> client plaintext (${relay.frames} frames)`, relay.perSec, 'chunks/s', { ratio: echo.perSec / relay.perSec, against: 'slower than echo' });
    report.figure('encrypted relay CPU per chunk (svc side)', relay.cpuUs, 'µs', {
      ratio: relay.cpuUs / echo.cpuUs,
      against: 'echo CPU',
      target: { op: '<=', value: echo.cpuUs * 3 },
    });
    const fd = await firstDelta(join(dir, 'first'));
    report.figure(`first-delta latency p50, 10 concurrent streams (${fd.n} turns, CLI spawn included)`, fd.p50, 'ms');
    report.figure('first-delta latency p99, 10 concurrent streams', fd.p99, 'ms');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Just the relay, for profiling (`node --cpu-prof`). */
export async function benchRelayOnly(report: BenchReport): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-relay-'));
  try {
    const relay = await encryptedRelay(join(dir, 'relay'));
    report.figure('encrypted relay CPU per chunk (svc side)', relay.cpuUs, 'µs');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
