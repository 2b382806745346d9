import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { filter } from 'rxjs';
import { toPromise } from 'xstate';
import { ActorHost, AgentRuntime, claudeAdapter, cliTurnLogic, type StreamEvent } from '../actors/index.js';
import { Bus } from '../bus/index.js';
import { agentMachine, sessionStream, turnMachine } from '../machines/index.js';
import { defaultConfig, type Principal } from '../schemas/index.js';
import { MemoryEventLog, homePaths, initWorkspace } from '../store/index.js';
import type { BenchReport } from './report.js';
import { anyChunk } from '../test/fixtures/any-event.js';

const SCRIPT = fileURLToPath(new URL('../../bench/fixtures/timed-claude.mjs', import.meta.url));
const wall = () => performance.timeOrigin + performance.now();
const LINES = 6000;
const RATE = 3000;

function percentiles(xs: number[]) {
  xs.sort((a, b) => a - b);
  const at = (p: number) => xs[Math.min(xs.length - 1, Math.floor(xs.length * p))] ?? NaN;
  return { p50: at(0.5), p99: at(0.99), n: xs.length };
}

/** Baseline: the same child, read with readline and JSON.parse, nothing else. */
async function readlineLatency() {
  const child = spawn(process.execPath, [SCRIPT], { env: { ...process.env, BENCH_RATE: String(RATE), BENCH_LINES: String(LINES) } });
  const lat: number[] = [];
  for await (const line of createInterface({ input: child.stdout })) {
    const o = JSON.parse(line) as { type: string; message?: { content: { text: string }[] } };
    if (o.type === 'assistant') lat.push(wall() - Number(o.message!.content[0]!.text.split('|')[0]));
  }
  return percentiles(lat);
}

/** svc: process group, line splitter, provider parser, the cli actor's live hand-off (its turn machine running alongside), transient message on the bus. */
async function svcLatency() {
  const bus = new Bus({ log: new MemoryEventLog() });
  const host = new ActorHost(bus);
  const lat: number[] = [];
  bus.transient$.pipe(filter((m) => m.type === 'turn.text_delta')).subscribe((m) => {
    lat.push(wall() - Number((m.data as { text: string }).text.split('|')[0]));
  });
  const tempDir = mkdtempSync(join(tmpdir(), 'svc-bench-'));
  const adapter = { ...claudeAdapter, buildInvocation: () => ({ command: process.execPath, args: [SCRIPT], stdin: null, env: {}, tempFiles: [] }) };
  const cli = cliTurnLogic({
    adapter,
    request: { provider: 'claude', prompt: 'x', permissionMode: 'bypassPermissions', additionalDirectories: [], cliParameters: [], cwd: tempDir },
    env: { ...(process.env as Record<string, string>), BENCH_RATE: String(RATE), BENCH_LINES: String(LINES) },
    tempDir,
    live: (events: StreamEvent[]) => {
      for (const e of events) if (e.kind === 'text') bus.emitTransient(anyChunk({ stream: 'turn:b', type: 'turn.text_delta', data: { text: e.text } }));
    },
  });
  const machine = turnMachine.provide({ actors: { cli } });
  const actor = host.spawn('turn:b', machine, {
    stream: 'turn:b',
    input: {
      turn_id: 'b', request_id: 'b', agent: 'main', session_key: 'bench', kind: 'foreground', prompt: 'bench', provider: 'claude', model: null,
      resumeSessionId: null, timeoutMs: 600_000, extendOnActivity: true, extensionMs: 120_000, maxExtensions: 3,
    },
  });
  await toPromise(actor);
  bus.close();
  rmSync(tempDir, { recursive: true, force: true });
  return percentiles(lat);
}

function heapAfterGc(): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc) {
    gc();
    gc();
  }
  return process.memoryUsage().heapUsed;
}

/** Idle agents and idle sessions: what each costs while nothing runs. */
async function idleMemory() {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-mem-'));
  const paths = homePaths(dir);
  const { workspace } = initWorkspace(paths, 'main');
  const bus = new Bus({ log: new MemoryEventLog() });
  const host = new ActorHost(bus);
  const config = defaultConfig();
  const make = (name: string) => {
    host.spawn(`agent:${name}`, agentMachine, { stream: `agent:${name}`, input: { name, is_main: false, provider: 'claude', model: 'opus', workspace }, childStream: (key) => sessionStream(name, key) });
    return new AgentRuntime({
      bus, host, log: bus.log, paths, name, isMain: false, workspace, config: () => config, users: () => [], hostEnv: {},
      discoveredGemini: () => [], interagentToken: () => null, saveModel: () => undefined,
    });
  };
  const before = heapAfterGc();
  const agents: AgentRuntime[] = [];
  for (let i = 0; i < 500; i++) agents.push(make(`a${i}`));
  const perAgent = (heapAfterGc() - before) / agents.length;

  const one = make('sessions');
  const beforeSessions = heapAfterGc();
  const N = 2000;
  for (let i = 0; i < N; i++) {
    const principal: Principal = { kind: 'user', id: null, acting_for: null, role: null, allowed_agents: [], origin: { transport: 'api', chat_id: i + 1, topic_id: null } };
    await one.accept({ request_id: `s${i}`, agent: 'sessions', transport: 'api', chat_id: i + 1, topic_id: null, text: '/new', principal, kind: 'foreground' }, { cmd: 'new' }).outcome;
  }
  const perSession = (heapAfterGc() - beforeSessions) / N;
  bus.close();
  rmSync(dir, { recursive: true, force: true });
  return { perAgent, perSession, gc: typeof (globalThis as { gc?: unknown }).gc === 'function', keep: agents.length };
}

export async function benchRuntime(report: BenchReport): Promise<void> {
  report.section(`runtime: CLI stdout line -> normalised event on the bus (${LINES} lines at ${RATE}/s)`);
  const base = await readlineLatency();
  const ours = await svcLatency();
  report.figure('readline + JSON.parse (baseline) p50', base.p50, 'ms');
  report.figure('readline + JSON.parse (baseline) p99', base.p99, 'ms');
  report.figure('svc turn pipeline -> bus p50', ours.p50, 'ms', { ratio: ours.p50 / base.p50, against: 'readline p50' });
  report.figure('svc turn pipeline -> bus p99', ours.p99, 'ms', { ratio: ours.p99 / base.p99, against: 'readline p99' });
  const mem = await idleMemory();
  report.section(`runtime: memory while idle${mem.gc ? '' : ' (run with --expose-gc for stable figures)'}`);
  report.figure('heap per idle agent (runtime + agent actor)', mem.perAgent / 1024, 'KiB');
  report.figure('heap per idle session', mem.perSession / 1024, 'KiB');
}
