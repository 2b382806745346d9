import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import { dirname } from 'node:path';
import { SvcError, hasExited } from '../schemas/index.js';
import { oneLineCommand, processStartedAtMs, readBootId, readProcCmdline, readProcStat } from './proc.js';

export interface PidLock {
  readonly pidFile: string;
  /** Why a leftover pid file was taken over (for the start-up log); null when there was none. */
  readonly tookOver: string | null;
  /** Removes the file only while it still names this process; safe to call twice. */
  release(): void;
}

/**
 * What a pid file records: the pid on the first line (what scripts read), then the holder's start
 * time and boot id, so a later starter can tell the daemon from a process that reused its pid.
 */
interface PidRecord {
  pid: number;
  startTime: number | null;
  bootId: string | null;
}

function parseRecord(text: string | undefined): PidRecord | undefined {
  if (text === undefined) return undefined;
  const [first = '', ...rest] = text.split('\n');
  const m = /^\s*(\d{1,10})\s*$/.exec(first);
  const pid = m ? Number(m[1]) : Number.NaN;
  // 0 and negatives would make kill() signal a whole process group.
  if (!Number.isSafeInteger(pid) || pid <= 0) return undefined;
  const fields = new Map<string, string>();
  for (const line of rest) {
    const eq = line.indexOf('=');
    if (eq > 0) fields.set(line.slice(0, eq), line.slice(eq + 1));
  }
  const start = Number(fields.get('start'));
  return { pid, startTime: Number.isSafeInteger(start) && start >= 0 ? start : null, bootId: fields.get('boot')?.trim() || null };
}

function recordFor(pid: number): string {
  const start = readProcStat(pid)?.startTime;
  const boot = readBootId();
  return `${pid}\n${start === undefined ? '' : `start=${start}\n`}${boot === null ? '' : `boot=${boot}\n`}`;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists but belongs to someone else — still alive.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Null when the recorded holder is a running daemon; otherwise why its file is stale. */
function staleness(rec: PidRecord, writtenAtMs: number | null): string | null {
  if (rec.pid === process.pid) return `it names this process (pid ${rec.pid}), left by an earlier run`;
  if (!isAlive(rec.pid)) return `pid ${rec.pid} is not running`;
  const stat = readProcStat(rec.pid);
  // Without /proc (not Linux) a live pid is all there is to go on.
  if (stat === null) return null;
  if (hasExited(stat)) return `pid ${rec.pid} has exited (a zombie)`;
  const boot = readBootId();
  if (rec.bootId !== null && boot !== null && rec.bootId !== boot) return `it was written before the machine restarted`;
  if (rec.startTime !== null) return rec.startTime === stat.startTime ? null : `pid ${rec.pid} now belongs to a process started later`;
  // A file from a version (or another tool) that recorded only the pid: its process is the holder
  // unless it started after the file was written (the second of slack covers the clock ticks'
  // rounding), or its command line is not svc's, the test `svc stop` applies before it signals.
  const startedAt = processStartedAtMs(stat);
  if (startedAt !== null && writtenAtMs !== null && startedAt > writtenAtMs + 1000) return `pid ${rec.pid} belongs to a process started after the file was written`;
  const argv = readProcCmdline(rec.pid);
  if (argv !== null && !looksLikeSvc(argv)) return `pid ${rec.pid} is not svc (${oneLineCommand(argv)})`;
  return null;
}

/** An svc daemon runs as `node …/bin/svc.js start`, or through an installed `svc` link. */
function looksLikeSvc(argv: readonly string[]): boolean {
  return argv.some((a) => /(^|\/)svc(\.js)?$/.test(a));
}

function mtimeOrNull(path: string): number | null {
  try {
    return fs.statSync(path).mtimeMs;
  } catch {
    return null;
  }
}

function readOrUndefined(path: string): string | undefined {
  try {
    return fs.readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/**
 * One daemon per home. The pid file appears atomically with its content (hard link of a complete
 * temp file, which fails if the name exists) so a second starter never reads a half-written pid
 * and mistakes it for garbage. A stale file (dead pid, zombie, a pid reused by another process,
 * another boot, garbage) is moved aside and re-checked before the takeover, so two starters racing
 * over it cannot both win.
 */
export function acquirePidLock(pidFile: string): PidLock {
  const home = dirname(pidFile);
  // A file naming our own pid is taken over below (a restarted container often reuses the pid),
  // so a second daemon inside this very process has to be caught here.
  if (heldHere.has(pidFile)) {
    throw new SvcError('daemon-running', `another svc daemon (pid ${process.pid}) is already running on ${home}; stop it first`, { pid: process.pid, home, pidFile });
  }
  fs.mkdirSync(home, { recursive: true, mode: 0o700 });
  const tag = `${process.pid}.${randomBytes(4).toString('hex')}`;
  const tmp = `${pidFile}.${tag}.tmp`;
  fs.writeFileSync(tmp, recordFor(process.pid), { mode: 0o644, flag: 'wx' });
  let tookOver: string | null = null;
  try {
    for (let attempt = 0; attempt < 10; attempt++) {
      try {
        fs.linkSync(tmp, pidFile);
        return makeLock(pidFile, tookOver);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
      const content = readOrUndefined(pidFile);
      if (content === undefined) continue; // released between our link and read
      const holder = parseRecord(content);
      const stale = holder === undefined ? 'its content is not a pid' : staleness(holder, mtimeOrNull(pidFile));
      if (stale === null) {
        throw new SvcError('daemon-running', `another svc daemon (pid ${holder!.pid}) is already running on ${home}; stop it first`, { pid: holder!.pid, home, pidFile });
      }
      tookOver = `took over a stale ${pidFile}: ${stale}`;
      const aside = `${pidFile}.${tag}.stale`;
      try {
        fs.renameSync(pidFile, aside);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
        throw err;
      }
      const moved = readOrUndefined(aside);
      if (moved !== content) {
        // Another starter replaced the stale file between our read and rename: give its lock back.
        try {
          fs.linkSync(aside, pidFile);
        } catch {
          // a third starter already holds the name; whoever it is, the next round checks it
        }
      }
      fs.rmSync(aside, { force: true });
    }
    throw new SvcError('pid-lock-contended', `${pidFile}: could not take the pid lock after 10 attempts; several svc daemons are starting at once on ${home}`, { pidFile });
  } finally {
    fs.rmSync(tmp, { force: true });
  }
}

/** Lock files this process holds right now. */
const heldHere = new Set<string>();

function makeLock(pidFile: string, tookOver: string | null): PidLock {
  let released = false;
  heldHere.add(pidFile);
  return {
    pidFile,
    tookOver,
    release() {
      if (released) return;
      released = true;
      heldHere.delete(pidFile);
      if (parseRecord(readOrUndefined(pidFile))?.pid === process.pid) fs.rmSync(pidFile, { force: true });
    },
  };
}

/**
 * The pid of the daemon holding `pidFile` right now, or null when none does (no file, or a stale one).
 * `svc stop` signals what this names, so a record without a start time (an older svc wrote only
 * the pid) must also look like svc on its command line: a reused pid is never taken for the daemon.
 */
export function runningDaemonPid(pidFile: string): number | null {
  const content = readOrUndefined(pidFile);
  const rec = parseRecord(content);
  if (!rec || rec.pid === process.pid) return null;
  if (staleness(rec, mtimeOrNull(pidFile)) !== null) return null;
  // Without /proc staleness cannot read the command line; a bare pid is then never signalled.
  if (rec.startTime === null && !looksLikeSvc(readProcCmdline(rec.pid) ?? [])) return null;
  return rec.pid;
}
