import { readFileSync } from 'node:fs';

/*
 * What Linux's /proc tells about a process, enough to recognise it again later: a pid alone is
 * reused by the kernel, but (boot id, pid, start time) names one process for the life of a machine.
 * Every reader returns null where /proc is missing (not Linux) or the process is gone, so callers
 * decide what "unknown" means for them.
 */

export interface ProcStat {
  pid: number;
  /** R, S, D, Z (zombie), X (dead), T, ... */
  state: string;
  ppid: number;
  /** Process-group id. */
  pgid: number;
  /** Start time in clock ticks after boot (field 22): with the boot id, unique per process. */
  startTicks: number;
}

/** Parses one `/proc/<pid>/stat` line. The command name may hold spaces and ')' so fields start after the last ')'. */
export function parseProcStat(text: string): ProcStat | null {
  const open = text.indexOf('(');
  const close = text.lastIndexOf(')');
  if (open < 0 || close < open) return null;
  const pid = Number(text.slice(0, open).trim());
  // Fields from 3 (state) on; field n is at index n - 3.
  const rest = text.slice(close + 1).trim().split(/\s+/);
  const state = rest[0];
  const ppid = Number(rest[1]);
  const pgid = Number(rest[2]);
  const startTicks = Number(rest[19]);
  if (!state || ![pid, ppid, pgid, startTicks].every(Number.isSafeInteger)) return null;
  return { pid, state, ppid, pgid, startTicks };
}

export function readProcStat(pid: number): ProcStat | null {
  try {
    return parseProcStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return null;
  }
}

/** The kernel's id of this boot; start ticks only compare within one boot. */
export function readBootId(): string | null {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim() || null;
  } catch {
    return null;
  }
}

/** argv of a live process, or null. */
export function readProcCmdline(pid: number): string[] | null {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter((a) => a !== '');
  } catch {
    return null;
  }
}

/** A zombie has exited and only waits to be reaped: it holds a pid, nothing else. */
export const isExited = (stat: ProcStat): boolean => stat.state === 'Z' || stat.state === 'X';
