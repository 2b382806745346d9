import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BenchReport } from './report.js';

const SVC = fileURLToPath(new URL('../../bin/svc.js', import.meta.url));
const RUNS = 5;

/** Milliseconds from spawning `./bin/svc.js start` to its first line, and to the whole banner. */
async function startOnce(home: string): Promise<{ first: number; banner: number }> {
  const t0 = performance.now();
  const child = spawn(process.execPath, [SVC, 'start'], { env: { ...process.env, SVC_HOME: home }, stdio: ['ignore', 'pipe', 'ignore'] });
  let out = '';
  let first = 0;
  const banner = await new Promise<number>((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => {
      if (!out) first = performance.now() - t0;
      out += d.toString();
      if (/\n {2}next /.test(out)) resolve(performance.now() - t0);
    });
    child.once('exit', (code) => reject(new Error(`svc start exited (${code}) before its banner`)));
  });
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
  return { first, banner };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Issue 11: the README's start command speaks within 3 s on every run (no per-start install or compile). */
export async function benchStart(report: BenchReport): Promise<void> {
  report.section('svc start (the README command), median of ' + RUNS + ' runs');
  const root = mkdtempSync(join(tmpdir(), 'svc-start-bench-'));
  try {
    const firsts: number[] = [];
    const banners: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      // A fresh home each run: the first start, which creates the config and the log, is the slow one.
      const home = join(root, `h${i}`);
      mkdirSync(join(home, 'config'), { recursive: true });
      writeFileSync(join(home, 'config', 'config.json'), JSON.stringify({ interagent_port: 0 }));
      const r = await startOnce(home);
      firsts.push(r.first);
      banners.push(r.banner);
    }
    report.figure('first line printed', median(firsts), 'ms', { target: { op: '<=', value: 3000 } });
    report.figure('banner complete (listeners, transports, next step)', median(banners), 'ms', { target: { op: '<=', value: 3000 } });
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}
