import { createHash } from 'node:crypto';
import type { Bus } from '../../bus/index.js';
import { AUTOMATION_EVENTS, cronJobStream, describeError, type CronJobRecord } from '../../schemas/index.js';
import { isCronJobsSavedBySvc, readCronJobsFile, saveCronJobs, type HomePaths } from '../../store/index.js';

/*
 * The run fields the cron scheduler keeps in cron_jobs.json (last_run_at, next_run, last_status,
 * ...): patches collected in one turn of the event loop are written together, by load → merge → save
 * with no await between, so an admin edit made meanwhile is kept; the hash of svc's own last read or
 * write tells a hand edit from svc's writes.
 */

/** Fields the scheduler writes: a change of only these is not an edit of the job. */
const RUN_FIELDS = new Set(['last_run_at', 'next_run', 'last_status', 'last_result', 'last_fire_id', 'last_delivery_status', 'execution_count', 'avg_duration']);

export const sha = (text: string): string => createHash('sha1').update(text).digest('hex');

export interface CronRunFieldsDeps {
  paths: HomePaths;
  bus: Bus;
  track(p: Promise<unknown>): void;
  /** A flush met a hand edit: `before` are the records as svc last read or wrote them. */
  handEdited(before: ReadonlyMap<string, CronJobRecord>): void;
  /**
   * While true, patches wait and resume() writes them: a burst of fires handed out batch by batch
   * is one write of the whole file, not one per batch (each costs a read, a merge and an fsync).
   */
  held?: () => boolean;
}

export class CronRunFields {
  /** The hash of the file as svc last read or wrote it. */
  hash: string | null = null;
  /** The records as last read or written, so a run's end does not parse the whole file again. */
  records = new Map<string, CronJobRecord>();
  /** The hash of the text `records` were parsed from or written as: a flush of that same text does not parse it again. */
  private recordsHash: string | null = null;
  /** The hash of a cron_jobs.json flush() could not parse: its patches wait for the file to change. */
  private unreadableHash: string | null = null;
  /** The last write failure told, so a failure that lasts is told once. */
  private writeError: string | null = null;
  private pending = new Map<string, Partial<CronJobRecord>>();
  private flushQueued = false;

  constructor(private readonly d: CronRunFieldsDeps) {}

  /** What is patched and not yet written for a job (a next_run still pending counts as written). */
  pendingOf(id: string): Partial<CronJobRecord> | undefined {
    return this.pending.get(id);
  }

  /**
   * Patches run fields of the named jobs. Patches made in one turn of the event loop are written
   * together (1,000 jobs firing in one minute are one write, not 1,000 rewrites of the whole file);
   * the write itself is load → merge → save with no await between, so an admin edit made meanwhile
   * is kept. A job gone meanwhile is left gone.
   */
  patch(changes: Record<string, Partial<CronJobRecord>>): void {
    for (const [id, c] of Object.entries(changes)) this.pending.set(id, { ...this.pending.get(id), ...c });
    this.resume();
  }

  /** Queues the write of what is patched for the next turn, unless one is queued or held (see `held`). */
  resume(): void {
    if (this.pending.size === 0 || this.flushQueued || this.d.held?.()) return;
    this.flushQueued = true;
    // Tracked: idle() ends once the run fields are on disk. A hold begun since waits for resume().
    this.d.track(new Promise<void>((r) => setImmediate(() => r(this.d.held?.() ? void (this.flushQueued = false) : this.flush()))));
  }

  /** The records of cron_jobs.json as just read (its text hashed to `hash`). */
  took(hash: string, records: readonly CronJobRecord[]): void {
    this.hash = hash;
    this.recordsHash = hash;
    this.records = new Map(records.map((r) => [r.id, r]));
  }

  /** Writes what patch() collected; also called before anything reads the file back. */
  flush(): void {
    this.flushQueued = false;
    if (this.pending.size === 0) return;
    const changes = this.pending;
    this.pending = new Map();
    // The records before the merge below: a hand edit found here is told against them, as checkFile() tells one.
    const before = this.records;
    let edited = false;
    try {
      const file = readCronJobsFile(this.d.paths);
      const text = file.text;
      const hash = sha(text);
      // A hand edit since our last read or write must not be taken for ours once we write over it;
      // an admin API save whose event is still on its way is not a hand edit (the event reloads).
      edited = this.hash !== null && hash !== this.hash && !isCronJobsSavedBySvc(this.d.paths, text);
      // The file that could not be read at the last try, unchanged: tried again once it changes.
      if (hash === this.unreadableHash) {
        this.keep(changes);
        return;
      }
      let jobs: CronJobRecord[];
      try {
        // Parsing and checking 1,000 records costs more than the write; the file as svc left it is known.
        jobs = hash === this.recordsHash ? [...this.records.values()] : file.jobs();
      } catch (e) {
        this.unreadableHash = hash;
        this.keep(changes);
        this.d.bus.emitLog('warn', `cron_jobs.json cannot be read: run fields are kept until it can: ${describeError(e)}`);
        return;
      }
      this.unreadableHash = null;
      if (!jobs.some((j) => changes.has(j.id))) return;
      const merged = jobs.map((j) => (changes.has(j.id) ? ({ ...j, ...changes.get(j.id) } as CronJobRecord) : j));
      // Our own write: the watcher must not take it for a hand edit.
      this.took(sha(saveCronJobs(this.d.paths, merged)), merged);
      this.writeError = null;
    } catch (e) {
      // Kept, and tried again at the next flush (the watcher flushes at each check); told once per cause.
      this.keep(changes);
      const error = describeError(e);
      if (error !== this.writeError) this.d.bus.emitLog('error', `cron_jobs.json: run fields not written yet: ${error}`);
      this.writeError = error;
    } finally {
      if (edited) this.d.handEdited(before);
    }
  }

  /** Puts patches a flush could not write back under any made since, which are newer. */
  private keep(changes: Map<string, Partial<CronJobRecord>>): void {
    for (const [id, c] of changes) this.pending.set(id, { ...c, ...this.pending.get(id) });
  }

  /** A job's record as it will be once the pending patches are written. */
  current(id: string): CronJobRecord | undefined {
    const rec = this.records.get(id);
    return rec && ({ ...rec, ...this.pending.get(id) } as CronJobRecord);
  }
}

/** The facts a hand edit of cron_jobs.json makes (by nobody: the file was edited, not the API). */
export function handEditFacts(before: ReadonlyMap<string, CronJobRecord>, after: ReadonlyMap<string, CronJobRecord>): Parameters<Bus['publish']>[0][] {
  const facts: Parameters<Bus['publish']>[0][] = [];
  for (const [id, r] of after) {
    const old = before.get(id);
    if (!old) facts.push({ stream: cronJobStream(id), type: AUTOMATION_EVENTS.job_created, data: { id, agent: r.agent, by: null } });
    else {
      const fields = [...new Set([...Object.keys(old), ...Object.keys(r)])].filter((k) => !RUN_FIELDS.has(k) && JSON.stringify(old[k]) !== JSON.stringify(r[k])).sort();
      if (fields.length) facts.push({ stream: cronJobStream(id), type: AUTOMATION_EVENTS.job_updated, data: { id, agent: r.agent, fields, by: null } });
    }
  }
  for (const [id, r] of before) if (!after.has(id)) facts.push({ stream: cronJobStream(id), type: AUTOMATION_EVENTS.job_deleted, data: { id, agent: r.agent, by: null } });
  return facts;
}
