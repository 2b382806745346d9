import { readFileSync, readdirSync, readlinkSync } from 'node:fs';
import { parseProcStat, type ProcEntry, type ProcSnapshot } from '../schemas/index.js';

/*
 * Readers of Linux's /proc (schemas/proc-stat.ts says why svc reads it). Each answers null or empty
 * where /proc is missing (not Linux) or the process is gone, so callers decline to act rather than guess.
 */

let cachedBootId: string | null | undefined;

/** This boot's id; start times count from boot, so they compare only within one. */
export function readBootId(): string | null {
  if (cachedBootId !== undefined) return cachedBootId;
  try {
    cachedBootId = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim() || null;
  } catch {
    cachedBootId = null;
  }
  return cachedBootId;
}

export function readProcStat(pid: number): ProcEntry | null {
  try {
    return parseProcStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return null;
  }
}

/**
 * Every process visible now (ones that exit mid-scan are skipped), and this daemon's own start
 * time: whatever a crashed run left behind started before it.
 */
export function procSnapshot(): ProcSnapshot {
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return { bootId: readBootId(), procs: [], selfStartTime: null };
  }
  const procs: ProcEntry[] = [];
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    const entry = readProcStat(Number(name));
    if (entry) procs.push(entry);
  }
  return { bootId: readBootId(), procs, selfStartTime: readProcStat(process.pid)?.startTime ?? null };
}

/**
 * When a process started, in ms since the epoch: boot time plus its start ticks. /proc counts
 * those in USER_HZ, which Linux fixes at 100 for what it reports to user space.
 */
export function processStartedAtMs(stat: ProcEntry): number | null {
  try {
    const m = /^btime (\d+)$/m.exec(readFileSync('/proc/stat', 'utf8'));
    return m ? Number(m[1]) * 1000 + stat.startTime * 10 : null;
  } catch {
    return null;
  }
}

/** argv of a process, or null once it is gone. */
export function readProcCmdline(pid: number): string[] | null {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter((a) => a !== '');
  } catch {
    return null;
  }
}

/** Another program's argv is arbitrary: one line, bounded, so a message naming it stays one line. */
export function oneLineCommand(argv: readonly string[]): string {
  const line = argv.slice(0, 3).join(' ').replace(/[\u0000-\u001f\u007f]+/g, ' ');
  return (line.length > 80 ? `${line.slice(0, 79)}…` : line) || '?';
}

/** Inodes of sockets listening on TCP `port` (any address, v4 or v6), from /proc/net/tcp{,6}. */
function listeningSocketInodes(port: number): Set<string> {
  const inodes = new Set<string>();
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      // local_address is HEXIP:HEXPORT; state 0A is LISTEN; column 9 is the socket's inode.
      if (cols.length > 9 && cols[1]!.endsWith(`:${hexPort}`) && cols[3] === '0A' && cols[9] !== '0') inodes.add(cols[9]!);
    }
  }
  return inodes;
}

/**
 * Which process listens on TCP `port`, so "port in use" can name it. Null when nothing visible does
 * (another user's process shows its socket but not its descriptors) or without /proc.
 */
export function listeningPortHolder(port: number): { pid: number; command: string } | null {
  const inodes = listeningSocketInodes(port);
  if (inodes.size === 0) return null;
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((n) => /^\d+$/.test(n));
  } catch {
    return null;
  }
  for (const pid of pids) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      let target: string;
      try {
        target = readlinkSync(`/proc/${pid}/fd/${fd}`);
      } catch {
        continue;
      }
      const m = /^socket:\[(\d+)\]$/.exec(target);
      if (m && inodes.has(m[1]!)) {
        return { pid: Number(pid), command: oneLineCommand(readProcCmdline(Number(pid)) ?? []) };
      }
    }
  }
  return null;
}
