import { randomUUID } from 'node:crypto';
import { followsFrom, type Bus, type Cause } from '../../bus/index.js';
import { decideGroup, type RecordedGroup } from '../../machines/index.js';
import { INTERRUPTED_REASON, PROCESS_EVENTS, describeError, hasExited, type AnyEnvelope, type Fact, type TypesOf, type ProcSnapshot } from '../../schemas/index.js';
import { procSnapshot, readBootId, readProcCmdline, type EventLog } from '../../store/index.js';

/*
 * Process groups svc starts outside a turn (a transcription backend, ...) are recorded on a
 * `proc:<id>` stream while they run, so a daemon killed meanwhile can end them at its next start
 * the way it ends a crashed turn's CLI: by group id, leader start time and boot id.
 */

const CLI_NAMES = ['claude', 'codex', 'gemini', 'docker'];

/**
 * Records a started group; the returned function records its end. Both are best effort: a group
 * that could not be recorded still runs, it only cannot be recovered after a crash.
 */
export function trackProcessGroup(bus: Bus, purpose: string, pid: number, startTime: number | null, cause: Cause = {}): () => void {
  const stream = `proc:${randomUUID()}`;
  const record = (fact: Fact<TypesOf<typeof PROCESS_EVENTS>>, why: Cause) =>
    bus.publish({ ...fact, stream, ...why }).catch((e) => {
      bus.emitLog('warn', `could not record ${fact.type} of ${purpose} pid ${pid}: ${describeError(e)}`);
      return undefined;
    });
  const spawned = record({ type: PROCESS_EVENTS.spawned, data: { purpose, pid, start_time: startTime, boot_id: readBootId() } }, cause);
  let ended = false;
  return () => {
    if (ended) return;
    ended = true;
    // After the spawn fact, so the stream never reads exited-then-spawned.
    void spawned.then((e) => record({ type: PROCESS_EVENTS.exited, data: { reason: 'exited' } }, e ? { ...cause, ...followsFrom(e) } : cause));
  };
}

/** At start: end what is left of every recorded group that never recorded its end. */
export async function recoverOrphanProcesses(
  log: EventLog,
  bus: Bus,
  /** Tests recover in the process that made the "orphans", so it started before them: null lifts that bound. */
  opts: {
    selfStartTime?: number | null;
    /** Stamped where the spawn fact has no correlation of its own (recorded by an older svc). */
    cause?: Cause;
  } = {},
): Promise<{ groupsEnded: number; processesEnded: number }> {
  const open = new Map<string, { purpose: string; group: RecordedGroup; spawned: AnyEnvelope }>();
  for (const e of log.read({ streamPrefix: 'proc:', types: [PROCESS_EVENTS.spawned, PROCESS_EVENTS.exited] })) {
    if (e.type === PROCESS_EVENTS.exited) {
      open.delete(e.stream);
      continue;
    }
    const d = e.data as { purpose?: unknown; pid?: unknown; start_time?: unknown; boot_id?: unknown };
    if (typeof d.pid !== 'number') continue;
    open.set(e.stream, {
      purpose: String(d.purpose ?? 'process'),
      group: { pgid: d.pid, startTime: typeof d.start_time === 'number' ? d.start_time : null, bootId: typeof d.boot_id === 'string' ? d.boot_id : null },
      spawned: e,
    });
  }
  const report = { groupsEnded: 0, processesEnded: 0 };
  if (open.size === 0) return report;
  const snapshot = { ...procSnapshot(), ...(opts.selfStartTime !== undefined ? { selfStartTime: opts.selfStartTime } : {}) };
  for (const [stream, { purpose, group, spawned }] of open) {
    const n = endGroup(group, snapshot, (why) => bus.emitLog('info', `${purpose} pid ${group.pgid}: left alone (${why})`));
    if (n > 0) report.groupsEnded++;
    report.processesEnded += n;
    await bus.publish({ stream, type: PROCESS_EVENTS.exited, data: { reason: INTERRUPTED_REASON, ended_processes: n }, ...opts.cause, ...followsFrom(spawned) });
  }
  if (report.groupsEnded > 0) {
    bus.emitLog('warn', `ended ${report.groupsEnded} orphaned process group(s) (${report.processesEnded} process(es)) that svc had started before it stopped`);
  }
  return report;
}

/** SIGKILLs what is left of one recorded group; returns how many processes that ended. */
export function endGroup(group: RecordedGroup, snapshot: ProcSnapshot, skipped: (why: string) => void): number {
  const verdict = decideGroup(group, snapshot);
  if (!verdict.end) {
    if (verdict.why === 'legacy') return endLegacyGroup(group.pgid, snapshot);
    if (verdict.why !== 'gone') skipped(verdict.why === 'pid-reused' ? 'the pid now belongs to another process' : verdict.why === 'other-boot' ? 'recorded in another boot' : 'no /proc to verify it');
    return 0;
  }
  signal(-group.pgid);
  // A leader that moved to a group of its own is still ours by its start time.
  for (const pid of verdict.pids) if (snapshot.procs.find((p) => p.pid === pid)?.pgid !== group.pgid) signal(pid);
  return verdict.pids.length;
}

/** Turns recorded before start times: only a provider CLI still under the pid can vouch for it. */
function endLegacyGroup(pgid: number, snapshot: ProcSnapshot): number {
  const argv = readProcCmdline(pgid);
  if (!argv || !argv.slice(0, 3).some((a) => CLI_NAMES.includes(a.slice(a.lastIndexOf('/') + 1)))) return 0;
  if (!signal(-pgid)) return 0;
  return Math.max(1, snapshot.procs.filter((p) => p.pgid === pgid && !hasExited(p)).length);
}

function signal(target: number): boolean {
  try {
    process.kill(target, 'SIGKILL');
    return true;
  } catch {
    // ESRCH: already gone between the snapshot and the kill.
    return false;
  }
}
