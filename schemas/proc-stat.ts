/*
 * What Linux's /proc says about a process, as svc uses it to recognise a process again after a
 * restart (its own pid lock, a crashed turn's CLI group). A pid alone names nothing once its
 * process is gone — the kernel hands it out again — but (boot id, pid, start time) names one
 * process for the life of a boot. Readers live in store/proc.ts; the rules that use it are pure.
 */

/** One line of /proc/<pid>/stat, the fields svc needs. */
export interface ProcEntry {
  pid: number;
  /** Field 3: R, S, D, Z (zombie), X (dead), T, ... */
  state: string;
  /** Field 5: the process-group id. */
  pgid: number;
  /** Field 22: clock ticks since boot. */
  startTime: number;
}

/** Every process visible at one moment, with the boot they belong to. */
export interface ProcSnapshot {
  bootId: string | null;
  procs: readonly ProcEntry[];
  /** The reading process's own start time: whatever a crashed run left behind started before it. */
  selfStartTime?: number | null;
}

/**
 * `/proc/<pid>/stat` is `pid (comm) state ppid pgrp ...`; comm is the program's own choice and may
 * hold spaces and `)`, so fields are counted from the last `)`. Null for anything else.
 */
export function parseProcStat(line: string): ProcEntry | null {
  const open = line.indexOf(' (');
  const close = line.lastIndexOf(')');
  if (open <= 0 || close < open) return null;
  const pid = Number(line.slice(0, open));
  // After ") ": state is field 3, so field n sits at index n - 3.
  const rest = line.slice(close + 2).split(' ');
  const state = rest[0] ?? '';
  const pgid = Number(rest[2]);
  const startTime = Number(rest[19]);
  if (!/^[A-Za-z]$/.test(state) || ![pid, pgid, startTime].every((n) => Number.isSafeInteger(n) && n >= 0) || pid === 0) return null;
  return { pid, state, pgid, startTime };
}

/** A zombie has exited and only waits to be reaped: it holds a pid, nothing else. */
export const hasExited = (p: ProcEntry): boolean => p.state === 'Z' || p.state === 'X';
