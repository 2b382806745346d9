import { hasExited, type ProcEntry, type ProcSnapshot } from '../schemas/index.js';

/*
 * Which processes of a CLI's process group a restarted daemon may end. A pid alone names nothing
 * once its process is gone (the kernel hands it out again), so a group is recorded at spawn as
 * (pgid, the leader's start time, the boot id) and matched against a snapshot of /proc. Pure: the
 * snapshot arrives as data; store/proc.ts reads it.
 */

/** What `turn.spawned` recorded about a CLI's group. */
export interface RecordedGroup {
  /** The leader's pid, which is the group id. */
  pgid: number;
  /** Null for turns recorded before start times were (then only the command line can vouch). */
  startTime: number | null;
  bootId: string | null;
}

export type GroupVerdict =
  /** Every pid here is a live member of the recorded group: end them. */
  | { end: true; pids: number[] }
  | { end: false; why: 'gone' | 'other-boot' | 'pid-reused' | 'unverifiable' }
  /** Recorded without a start time (an older svc): the caller falls back to what it can check. */
  | { end: false; why: 'legacy' };

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
  // A member started after the daemon reading this cannot be a crashed run's: once the old group
  // emptied, its id may lead a new group (a double fork elsewhere), which is not ours to end.
  const until = now.selfStartTime ?? Number.POSITIVE_INFINITY;
  const ours = (p: ProcEntry) => p.pid === recorded.pgid || (p.pgid === recorded.pgid && p.startTime >= since && p.startTime <= until);
  const pids = now.procs.filter((p) => !hasExited(p) && ours(p)).map((p) => p.pid);
  return pids.length > 0 ? { end: true, pids } : { end: false, why: 'gone' };
}
