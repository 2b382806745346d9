import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SqliteEventLog, PROJECTIONS, readProcStat } from '../../store/index.js';
import type { AnyEnvelope } from '../../schemas/index.js';

/** The built CLI, as a user runs it; `npm test` builds dist/ before tap starts. */
export const SVC = fileURLToPath(new URL('../../bin/svc.js', import.meta.url));

export function svc(home: string, args: string[], env: NodeJS.ProcessEnv = {}) {
  const r = spawnSync(process.execPath, [SVC, ...args], {
    env: { ...process.env, SVC_HOME: home, ...env },
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** A home whose config asks for any free internal-API port, so parallel test daemons never collide; `config` adds keys. */
export function freePortHome(home: string, config: Record<string, unknown> = {}): string {
  mkdirSync(join(home, 'config'), { recursive: true });
  writeFileSync(join(home, 'config', 'config.json'), JSON.stringify({ interagent_port: 0, ...config }));
  return home;
}

export function startSvc(home: string, args: string[] = ['start'], env: NodeJS.ProcessEnv = {}): ChildProcess & { output: () => string } {
  const child = spawn(process.execPath, [SVC, ...args], { env: { ...process.env, SVC_HOME: home, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  return Object.assign(child, { output: () => out });
}

/** The suite's one poll helper, re-exported for the daemon tests that import it from here. */
export { until } from '../fixtures/until.js';

export function exited(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve(child.exitCode);
    child.once('exit', (code) => resolve(code));
  });
}

/** Events on disk right now, read as a separate process would (read-only). */
export function readEvents(db: string, stream?: string): AnyEnvelope[] {
  try {
    const log = SqliteEventLog.open(db, { readonly: true });
    try {
      return log.read(stream ? { stream } : {});
    } finally {
      log.close();
    }
  } catch {
    return [];
  }
}

/** Imports a golden log into a new database; `alter` edits it first (to prove a check catches the change). */
export function loadGolden(name: string, db: string, alter: (events: AnyEnvelope[]) => AnyEnvelope[] = (e) => e): AnyEnvelope[] {
  const file = fileURLToPath(new URL(`../fixtures/golden/${name}`, import.meta.url));
  const events = alter(
    readFileSync(file, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as AnyEnvelope),
  );
  copyLog(events, db);
  return events;
}

/** A new log holding exactly `events` (seqs as given), its read models built from them. */
export function copyLog(events: readonly AnyEnvelope[], db: string): void {
  mkdirSync(dirname(db), { recursive: true });
  const log = SqliteEventLog.open(db, { projections: PROJECTIONS });
  log.appendRaw(events);
  log.close();
}

/** A process that still runs: a zombie counts as dead (PID 1 here may not reap it). */
export function processAlive(pid: number): boolean {
  const s = readProcStat(pid);
  return s !== null && s.state !== 'Z';
}
