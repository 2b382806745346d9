/*
 * Which processes of a CLI's process group a restarted daemon may end. A pid alone names nothing
 * once its process is gone (the kernel hands it out again), so a group is recorded at spawn as
 * (pgid, the leader's start time, the boot id) and matched against a snapshot of /proc. Pure: the
 * snapshot arrives as data; actors/procfs.ts reads it.
 */

/** One line of /proc/<pid>/stat, the fields recovery needs. */
export interface ProcEntry {
  pid: number;
  /** Field 3: R, S, D, Z (zombie), ... */
  state: string;
  /** Field 5. */
  pgid: number;
  /** Field 22: clock ticks since boot. */
  startTime: number;
}

/** What `turn.spawned` recorded about a CLI's group. */
export interface RecordedGroup {
  /** The leader's pid, which is the group id. */
  pgid: number;
  /** Null for turns recorded before start times were (then only the command line can vouch). */
  startTime: number | null;
  bootId: string | null;
}

export interface ProcSnapshot {
  bootId: string | null;
  procs: readonly ProcEntry[];
}

export type GroupVerdict =
  /** Every pid here is a live member of the recorded group: end them. */
  | { end: true; pids: number[] }
  | { end: false; why: 'gone' | 'other-boot' | 'pid-reused' | 'unverifiable' }
  /** Recorded without a start time (an older svc): the caller falls back to what it can check. */
  | { end: false; why: 'legacy' };

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

const live = (p: ProcEntry) => p.state !== 'Z' && p.state !== 'X';

/**
 * Given the recorded group and the processes alive now, which to end. Another boot, or a leader pid
 * now held by a younger process, means the pid was reused: touch nothing. Otherwise the group is
 * ours — a pid still serving as a group's id is never handed to a new process — and every live
 * member started at or after the leader is ended; so is the leader itself, even if it left the group.
 * Zombies are already dead and only wait to be reaped; they are not counted.
 */
export function decideGroup(recorded: RecordedGroup, now: ProcSnapshot): GroupVerdict {
  if (recorded.startTime === null) return { end: false, why: 'legacy' };
  if (recorded.bootId === null || now.bootId === null) return { end: false, why: 'unverifiable' };
  if (recorded.bootId !== now.bootId) return { end: false, why: 'other-boot' };
  const since = recorded.startTime;
  const leader = now.procs.find((p) => p.pid === recorded.pgid);
  if (leader && leader.startTime !== since) return { end: false, why: 'pid-reused' };
  const pids = now.procs.filter((p) => live(p) && (p.pid === recorded.pgid || (p.pgid === recorded.pgid && p.startTime >= since))).map((p) => p.pid);
  return pids.length > 0 ? { end: true, pids } : { end: false, why: 'gone' };
}
