import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import nacl from 'tweetnacl';
import WebSocket from 'ws';
import type { BenchReport } from './report.js';
import { FIXTURES, startServer, type ServerHandle } from './server-handle.js';
import { median, percentile, within } from './timing.js';

/*
 * What a direct-API user pays, with svc, a bare relay (the same key exchange and pure-JS secretbox,
 * nothing else: the cost of the job itself) and a bare uWS echo each in their own process (their
 * CPU is read from inside them) and the clients here. The fake CLI (bench/fixtures/bin/claude) is
 * started by the turn, reports in over a loopback control socket, and only then writes lines when
 * told, so its start-up is never counted.
 */
const CHUNK_BYTES = 200;
/**
 * Lock-step frames per CPU measurement, after WARMUP unmeasured ones; RUNS measurements each. A
 * running daemon's relay path is optimised code: the first few thousand frames are not (they cost
 * 3-4x more), so one JIT_WARMUP turn goes first and is not counted.
 */
const FRAMES = 4000;
const WARMUP = 200;
const JIT_WARMUP = 5000;
const RUNS = 5;
/** Latency: lines per stream, one every LINE_EVERY_MS (50 lines/s per stream: a fast model's pace). */
const LATENCY_LINES = 250;
const LINE_EVERY_MS = 20;
const BURST_LINES = 10_000;

type Frame = { type: string; data?: string; [k: string]: unknown };

/** The loopback socket the fake CLIs report to; each is known by the prompt it was started with. */
class Control {
  private readonly server: Server = createServer((s) => this.accept(s));
  private readonly waiting = new Map<string, (cli: Socket) => void>();
  port = 0;

  async listen(): Promise<void> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.port = (this.server.address() as { port: number }).port;
  }

  private accept(socket: Socket): void {
    const lines = createInterface({ input: socket });
    lines.once('line', (l) => {
      const { hello } = JSON.parse(l) as { hello: string };
      this.waiting.get(hello)?.(socket);
      this.waiting.delete(hello);
    });
  }

  /** Resolves with the CLI started for `prompt`, once it runs. */
  expect(prompt: string): Promise<(cmd: object) => void> {
    return within(
      new Promise((resolve) => this.waiting.set(prompt, (s) => resolve((cmd) => s.write(JSON.stringify(cmd) + '\n')))),
      `CLI for "${prompt}" (a bound on concurrent CLIs below the stream count would hold it back)`,
    );
  }

  close(): void {
    this.server.close();
  }
}

/** A direct-API client as examples/direct-client.mjs is: ws + tweetnacl. */
class Client {
  private shared: Uint8Array | null = null;
  onFrame: (f: Frame, wireChars: number) => void = () => undefined;

  private constructor(readonly ws: WebSocket) {}

  static async connect(port: number, token: string, chat: number): Promise<Client> {
    const c = new Client(new WebSocket(`ws://127.0.0.1:${port}/ws`));
    await within(new Promise((r) => c.ws.once('open', r)), 'connection');
    const keys = nacl.box.keyPair();
    const authed = new Promise<void>((resolve) => {
      c.ws.on('message', (raw) => {
        const text = raw.toString();
        if (!c.shared) {
          c.shared = nacl.box.before(Buffer.from(JSON.parse(text).e2e_pk, 'base64'), keys.secretKey);
          return resolve();
        }
        const buf = Buffer.from(text, 'base64');
        const plain = nacl.box.open.after(buf.subarray(24), buf.subarray(0, 24), c.shared)!;
        c.onFrame(JSON.parse(Buffer.from(plain).toString('utf8')) as Frame, text.length);
      });
    });
    c.ws.send(JSON.stringify({ type: 'auth', token, e2e_pk: Buffer.from(keys.publicKey).toString('base64'), chat_id: chat }));
    await within(authed, 'auth_ok');
    return c;
  }

  send(o: unknown): void {
    const nonce = nacl.randomBytes(24);
    this.ws.send(Buffer.concat([nonce, nacl.box.after(Buffer.from(JSON.stringify(o)), nonce, this.shared!)]).toString('base64'));
  }

  /** Sends a message and waits until its CLI runs. */
  async startTurn(control: Control, prompt: string): Promise<(cmd: object) => void> {
    const cli = control.expect(prompt);
    this.send({ type: 'message', text: prompt });
    return cli;
  }

  /** Ends the turn and waits for its result frame. */
  async endTurn(cli: (cmd: object) => void): Promise<void> {
    const done = new Promise<void>((r) => (this.onFrame = (f) => f.type === 'result' && r()));
    cli({ end: true });
    await within(done, 'result');
  }
}

/** `seq|t|xxx…` records in a delta's text; a merged frame holds several. */
const RECORD = /(\d+)\|(\d+)\|/g;

type Cpu = { user: number; system: number };
/** CPU used since `from`, per item: user + system, and the system (kernel) part alone. */
async function cpuPer(server: ServerHandle, from: Cpu, items: number) {
  const now = await server.cpu();
  const system = (now.system - from.system) / items;
  return { total: (now.user - from.user) / items + system, system };
}

/** One line per frame: each line is written only after the previous one's plaintext arrived. */
async function relayPerFrame(svc: ServerHandle, control: Control, client: Client, run: number, count = FRAMES) {
  const cli = await client.startTurn(control, `relay ${run}`);
  let frames = 0;
  let records = 0;
  let wireChars = 0;
  let arrived: () => void = () => undefined;
  client.onFrame = (f, chars) => {
    if (f.type !== 'text_delta') return;
    frames++;
    records += f.data!.match(RECORD)?.length ?? 0;
    wireChars = chars;
    arrived();
  };
  let cpu0: Cpu = { user: 0, system: 0 };
  for (let i = 0; i < WARMUP + count; i++) {
    if (i === WARMUP) {
      cpu0 = await svc.cpu();
      frames = records = 0;
    }
    const got = new Promise<void>((r) => (arrived = r));
    cli({ line: i });
    await within(got, 'frame');
  }
  const cpu = await cpuPer(svc, cpu0, frames);
  await client.endTurn(cli);
  return { cpu, frames, lines: count, records, wireChars };
}

/** The same lock-step exchange against a bare uWS echo, with frames of the relay's wire size. */
async function echoPerFrame(echo: ServerHandle, wireChars: number, count = FRAMES) {
  const ws = new WebSocket(`ws://127.0.0.1:${echo.port}/`);
  await within(new Promise((r) => ws.once('open', r)), 'echo connection');
  const payload = 'x'.repeat(wireChars);
  let arrived: () => void = () => undefined;
  ws.on('message', () => arrived());
  let cpu0: Cpu = { user: 0, system: 0 };
  for (let i = 0; i < WARMUP + count; i++) {
    if (i === WARMUP) cpu0 = await echo.cpu();
    const got = new Promise<void>((r) => (arrived = r));
    ws.send(payload);
    await within(got, 'echo');
  }
  const cpu = await cpuPer(echo, cpu0, count);
  ws.close();
  return cpu;
}

/**
 * `streams` CLIs already running, each writing LATENCY_LINES lines at its pace (starts spread over
 * one interval); latency = the client's clock when the plaintext is decoded minus the CLI's when
 * it wrote the line, both CLOCK_MONOTONIC.
 */
async function lineLatency(port: number, token: string, control: Control, streams: number) {
  const clients = await Promise.all(Array.from({ length: streams }, (_, i) => Client.connect(port, token, 100 * streams + i)));
  const clis = await Promise.all(clients.map((c, i) => c.startTurn(control, `latency ${streams} ${i}`)));
  const samples: number[] = [];
  let frames = 0;
  const finished = clients.map(
    (c) =>
      new Promise<void>((resolve) => {
        let got = 0;
        c.onFrame = (f) => {
          if (f.type !== 'text_delta') return;
          const now = process.hrtime.bigint();
          frames++;
          for (const m of f.data!.matchAll(RECORD)) {
            samples.push(Number(now - BigInt(m[2]!)) / 1e6);
            if (++got === LATENCY_LINES) resolve();
          }
        };
      }),
  );
  clis.forEach((cli, i) => setTimeout(() => cli({ paced: LATENCY_LINES, everyMs: LINE_EVERY_MS }), (i * LINE_EVERY_MS) / streams));
  await within(Promise.all(finished), 'paced lines');
  await Promise.all(clients.map((c, i) => c.endTurn(clis[i]!)));
  for (const c of clients) c.ws.close();
  return latencyStats(samples, frames);
}

function latencyStats(samples: number[], frames: number) {
  samples.sort((a, b) => a - b);
  return { p50: percentile(samples, 0.5), p99: percentile(samples, 0.99), max: samples.at(-1)!, n: samples.length, frames };
}

/**
 * The floor under that figure on this machine at this moment: the same CLIs and pacing, read
 * straight from their stdout pipes here, no svc in between. Its tail is the scheduler's.
 */
async function pipeLatency(control: Control, streams: number) {
  const samples: number[] = [];
  const clis = Array.from({ length: streams }, (_, i) => {
    const prompt = `pipe ${streams} ${i}`;
    const ready = control.expect(prompt);
    const child = spawn(process.execPath, [join(FIXTURES, 'bin', 'claude'), '--', prompt], {
      env: { ...process.env, BENCH_CONTROL: String(control.port), BENCH_CHUNK_BYTES: String(CHUNK_BYTES) },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const done = new Promise<void>((resolve) => {
      let got = 0;
      createInterface({ input: child.stdout }).on('line', (line) => {
        const now = process.hrtime.bigint();
        const m = RECORD.exec(line);
        RECORD.lastIndex = 0;
        if (!m) return;
        samples.push(Number(now - BigInt(m[2]!)) / 1e6);
        if (++got === LATENCY_LINES) resolve();
      });
    });
    const exited = new Promise((r) => child.once('exit', r));
    return { ready, done, exited };
  });
  const senders = await Promise.all(clis.map((c) => c.ready));
  senders.forEach((cli, i) => setTimeout(() => cli({ paced: LATENCY_LINES, everyMs: LINE_EVERY_MS }), (i * LINE_EVERY_MS) / streams));
  await within(Promise.all(clis.map((c) => c.done)), 'piped lines');
  for (const cli of senders) cli({ end: true });
  await within(Promise.all(clis.map((c) => c.exited)), 'piped CLIs to exit');
  return latencyStats(samples, samples.length);
}

/** The old figure, kept for what it shows: a burst is merged, so it is CPU per CLI line, not per frame. */
async function burst(svc: ServerHandle, client: Client) {
  let frames = 0;
  let chars = 0;
  const done = new Promise<void>((resolve) => {
    client.onFrame = (f) => {
      if (f.type === 'text_delta') {
        frames++;
        chars += f.data!.length;
      }
      if (f.type === 'result') resolve();
    };
  });
  const cpu0 = await svc.cpu();
  client.send({ type: 'message', text: 'burst' });
  await within(done, 'burst result');
  const lines = chars / CHUNK_BYTES;
  return { frames, lines, cpuPerLine: (await cpuPer(svc, cpu0, lines)).total };
}

export async function benchDirect(report: BenchReport): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-direct-'));
  const control = new Control();
  await control.listen();
  const env = { BENCH_CONTROL: String(control.port), BENCH_CHUNK_BYTES: String(CHUNK_BYTES), BENCH_CHUNKS: String(BURST_LINES) };
  const svc = await startServer('daemon', dir, env);
  const echo = await startServer('echo');
  const bare = await startServer('relay', '', env);
  try {
    const client = await Client.connect(svc.port, svc.token, 1);
    const bareClient = await Client.connect(bare.port, '', 1);
    const relay: Awaited<ReturnType<typeof relayPerFrame>>[] = [];
    const bares: Awaited<ReturnType<typeof relayPerFrame>>[] = [];
    const echoes: Awaited<ReturnType<typeof echoPerFrame>>[] = [];
    const warm = await relayPerFrame(svc, control, client, -1, JIT_WARMUP);
    await relayPerFrame(bare, control, bareClient, -1, JIT_WARMUP);
    await echoPerFrame(echo, warm.wireChars, JIT_WARMUP);
    // Interleaved, so all three see the same machine load.
    for (let run = 0; run < RUNS; run++) {
      relay.push(await relayPerFrame(svc, control, client, run));
      bares.push(await relayPerFrame(bare, control, bareClient, run + RUNS));
      echoes.push(await echoPerFrame(echo, relay.at(-1)!.wireChars));
    }
    bareClient.ws.close();
    const ratios = relay.map((r, i) => r.cpu.total / echoes[i]!.total);
    const bareRatios = bares.map((r, i) => r.cpu.total / echoes[i]!.total);
    const overBare = relay.map((r, i) => r.cpu.total / bares[i]!.cpu.total);
    const last = relay.at(-1)!;
    const kernel = (xs: { system: number }[]) => `${median(xs.map((x) => x.system)).toFixed(1)} µs of it in the kernel`;
    report.section(`direct API: one ${CHUNK_BYTES}-byte CLI line per frame (${last.wireChars}-char frames), lock-step, median of ${RUNS} runs`);
    report.note('lines written / frames received / lines in them, last run', `${last.lines} / ${last.frames} / ${last.records}${last.frames === last.lines ? ' (none merged)' : ' (MERGED: not one line per frame)'}`);
    report.figure(`raw uWS echo: server CPU per frame (${kernel(echoes)})`, median(echoes.map((e) => e.total)), 'µs');
    report.figure(`svc: CPU per frame, CLI line -> sealed frame (${kernel(relay.map((r) => r.cpu))})`, median(relay.map((r) => r.cpu.total)), 'µs');
    report.figure(`bare relay, same secretbox: CPU per frame (${kernel(bares.map((r) => r.cpu))})`, median(bares.map((r) => r.cpu.total)), 'µs');
    report.figure(`svc / echo CPU per frame (runs: ${ratios.map((r) => r.toFixed(2)).join(', ')})`, median(ratios), 'x');
    report.figure(`bare relay / echo CPU per frame (runs: ${bareRatios.map((r) => r.toFixed(2)).join(', ')})`, median(bareRatios), 'x');
    report.figure(`svc / bare relay CPU per frame (runs: ${overBare.map((r) => r.toFixed(2)).join(', ')})`, median(overBare), 'x', { target: { op: '<=', value: 1.3 } });

    for (const streams of [1, 10]) {
      const l = await lineLatency(svc.port, svc.token, control, streams);
      const floor = await pipeLatency(control, streams);
      report.section(`direct API: CLI line written -> plaintext at the client, ${streams} stream(s), ${1000 / LINE_EVERY_MS} lines/s each (${l.n} lines in ${l.frames} frames)`);
      report.figure('p50', l.p50, 'ms');
      report.figure('p99', l.p99, 'ms', streams === 10 ? { target: { op: '<=', value: 5 } } : {});
      report.figure('max', l.max, 'ms');
      report.figure('floor: the same lines read from the CLI pipe directly, p50', floor.p50, 'ms');
      report.figure('floor p99 (what this machine\'s scheduler adds by itself)', floor.p99, 'ms');
      // The target is about svc's own delay: when the machine alone already exceeds it, this run cannot judge it.
      if (streams === 10 && floor.p99 > 5) report.note('p99 target', `not judgeable in this run: the floor's own p99 (${floor.p99.toFixed(1)} ms) is over 5 ms`);
    }

    const b = await burst(svc, client);
    report.section(`direct API: a burst of ${BURST_LINES.toLocaleString('en-US')} CLI lines as fast as stdout takes them`);
    report.figure(`svc CPU per CLI line (merged into ${b.frames} frames: not per frame)`, b.cpuPerLine, 'µs');
    client.ws.close();
  } finally {
    await svc.stop();
    await echo.stop();
    await bare.stop();
    control.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
