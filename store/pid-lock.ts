import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import { dirname } from 'node:path';
import { SvcError } from '../schemas/index.js';

export interface PidLock {
  readonly pidFile: string;
  /** Removes the file only while it still names this process; safe to call twice. */
  release(): void;
}

function parsePid(text: string | undefined): number | undefined {
  const m = text === undefined ? null : /^\s*(\d{1,10})\s*$/.exec(text);
  const pid = m ? Number(m[1]) : Number.NaN;
  // 0 and negatives would make kill() signal a whole process group.
  return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
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
 * and mistakes it for garbage. A stale file (dead pid or garbage) is moved aside and re-checked
 * before the takeover, so two starters racing over it cannot both win.
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
  fs.writeFileSync(tmp, `${process.pid}\n`, { mode: 0o644, flag: 'wx' });
  try {
    for (let attempt = 0; attempt < 10; attempt++) {
      try {
        fs.linkSync(tmp, pidFile);
        return makeLock(pidFile);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
      const content = readOrUndefined(pidFile);
      if (content === undefined) continue; // released between our link and read
      const holder = parsePid(content);
      if (holder !== undefined && holder !== process.pid && isAlive(holder)) {
        throw new SvcError('daemon-running', `another svc daemon (pid ${holder}) is already running on ${home}; stop it first`, { pid: holder, home, pidFile });
      }
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

function makeLock(pidFile: string): PidLock {
  let released = false;
  heldHere.add(pidFile);
  return {
    pidFile,
    release() {
      if (released) return;
      released = true;
      heldHere.delete(pidFile);
      if (parsePid(readOrUndefined(pidFile)) === process.pid) fs.rmSync(pidFile, { force: true });
    },
  };
}
