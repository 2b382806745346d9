import { Subscription } from 'rxjs';
import { createActor, type Actor } from 'xstate';
import * as v from 'valibot';
import { REAL_CLOCK, type Bus, type Cause } from '../../bus/index.js';
import {
  canonicalTimeZone,
  compileSchedule,
  cronScheduleMachine,
  type CronDue,
  type CronScheduleJob,
  cronTimeZone,
  fireIdOf,
  foldCronLog,
  missedFires,
  type CompiledSchedule,
} from '../../machines/index.js';
import {
  AUTOMATION_EVENTS,
  CONFIG_EVENTS,
  CRON_RUN_STATUS,
  CronJobSettingsSchema,
  SvcError,
  cronJobStream,
  describeError,
  type CronJobRecord,
  type CronJobSettings,
} from '../../schemas/index.js';
import { isCronJobsSavedBySvc, readCronJobsFile, type EventLog, type HomePaths } from '../../store/index.js';
import type { ActorClock } from '../host/actor-host.js';
import { ensureCronTaskFolder, type OneShotRuns } from './one-shot-runner.js';
import { cronRunRequest } from './cron-run-request.js';
import { deliverCronResult, finishCronRun, type CronDeliveryContext } from './cron-delivery.js';
import { CronRunFields, handEditFacts, sha } from './cron-run-fields.js';

/*
 * The cron scheduler: fires each enabled job of cron_jobs.json at the times croner computes in the
 * job's zone (machines/cron.logic.ts), on an injected clock (tests drive it; nothing here sleeps),
 * runs it through the one-shot runner and tells its chat. Every fire is a fact whose id is the job
 * id plus the scheduled time, so a restart never fires again what the log already holds; a fire the
 * log holds unfinished was cut by a stop: run after the restart if its CLI had not started, else
 * recorded `error:interrupted` (never run twice).
 *
 * It owns the run fields of cron_jobs.json (last_run_at, next_run, last_status, execution_count,
 * avg_duration, last_result, last_delivery_status): each change is load → patch → save with no
 * await between, as the admin records do for theirs, so neither loses the other's writes. It polls
 * the file's hash and reloads on a hand edit; its own writes leave the hash it expects. Jobs with
 * no zone of their own follow user_timezone as it is now (a hot setting), not as it was at a reload.
 */

export const CRON_WATCH_INTERVAL_MS = 2_000;

export interface CronSchedulerDeps {
  bus: Bus;
  log: EventLog;
  paths: HomePaths;
  runner: OneShotRuns;
  /** The zone of a job without one: user_timezone → TZ → host → UTC. */
  defaultZone: () => string;
  clock?: ActorClock;
  watchIntervalMs?: number;
  /** Most fires handed out per turn of the event loop (CRON_FIRE_BATCH unless told). */
  fireBatch?: number;
}

interface Job {
  settings: CronJobSettings;
  schedule: CompiledSchedule | null;
  zone: string;
  /** The job's own `timezone` when it names a zone; null: it follows user_timezone. */
  ownZone: string | null;
  /** What a change must differ in to recompute `next`. */
  key: string;
  /** Why the record is not valid (then `settings` are the last valid ones, or only the id): it is neither scheduled nor run. */
  problem: string | null;
}



const iso = (ms: number) => new Date(ms).toISOString();

export class CronScheduler {
  private readonly jobs = new Map<string, Job>();
  /** Per job, the newest scheduled time handled (fired or skipped): nothing at or before it fires again. */
  private readonly lastScheduled = new Map<string, number>();
  private readonly subs = new Subscription();
  private readonly clock: ActorClock;
  /** Which job fires when (machines/cron-schedule.machine.ts); null until start() and after stop(). */
  private plan: Actor<typeof cronScheduleMachine> | null = null;
  private watchTimer: unknown = null;
  private readonly retryTimers = new Set<unknown>();
  /** defaultZone() when the jobs were last scheduled: jobs without a zone of their own are in it. */
  private zoneUsed: string | null = null;
  private readonly file: CronRunFields;
  private readonly delivery: CronDeliveryContext;
  private stopped = false;
  /** Runs and deliveries still going, so a test (or stop) can wait for them. */
  private readonly inflight = new Set<Promise<unknown>>();

  constructor(private readonly d: CronSchedulerDeps) {
    this.clock = d.clock ?? REAL_CLOCK;
    this.file = new CronRunFields({ paths: d.paths, bus: d.bus, track: (p) => this.track(p), handEdited: (before) => this.handEdited(before), held: () => this.draining() });
    this.delivery = {
      bus: d.bus,
      clock: this.clock,
      retryTimers: this.retryTimers,
      stopped: () => this.stopped,
      settingsOf: (id) => this.jobs.get(id)?.settings,
      patch: (changes) => this.file.patch(changes),
      current: (id) => this.file.current(id),
      track: (p) => this.track(p),
    };
  }

  /** Writes the run fields patched so far; also called before anything reads the file back. */
  flush(): void {
    this.file.flush();
  }

  private patch(changes: Record<string, Partial<CronJobRecord>>): void {
    this.file.patch(changes);
  }

  async start(correlation: string): Promise<void> {
    const { bus } = this.d;
    const cause: Cause = { correlation };
    // The runner's recovery first: a cut fire whose run it queued again finishes when that run does.
    const recovered = await this.d.runner.recover(correlation);
    const logged = foldCronLog(this.d.log.read({ streamPrefix: 'cron:' }));
    for (const [id, s] of logged) if (s.lastScheduledMs !== null) this.lastScheduled.set(id, s.lastScheduledMs);
    // The plan holds next fires after now; the catch-up below decides the ones missed before it.
    this.plan = createActor(cronScheduleMachine, { input: { now: bus.now(), ...(this.d.fireBatch === undefined ? {} : { batch: this.d.fireBatch }) }, clock: this.clock });
    this.plan.on('due', (e) => this.onDue(e.fires));
    this.plan.on('wake', () => this.plan?.send({ type: 'clock', now: this.d.bus.now() }));
    // The run fields patched while the plan hands out a burst are written once it is done.
    this.plan.subscribe((s) => {
      if (!s.matches('draining')) this.file.resume();
    });
    this.plan.start();
    this.reload();
    const again = new Map(recovered.restarted.map((r) => [r.correlation, r]));
    // A fire the log holds unfinished was cut by a stop (or a SIGKILL). Its run waiting in a queue
    // was queued again; one never queued is queued now; one that had started failed and is not run again.
    for (const [id, s] of logged) {
      for (const f of s.unfinished) {
        const job = this.jobs.get(id);
        const fireCause = f.correlation === null ? cause : { correlation: f.correlation };
        const run = f.correlation === null ? undefined : again.get(f.correlation);
        if (run) {
          void run.done.then((r) => this.track(finishCronRun(this.delivery, id, f.agent, f.fire_id, null, r, job?.settings ?? null, fireCause, run.run_id)));
          continue;
        }
        if (job?.schedule && f.correlation !== null && !recovered.queued.has(f.correlation)) {
          bus.emitLog('info', `cron job ${id}: fire ${f.fire_id} was cut by a stop of svc before its run was queued: running it now`);
          await this.startRun(job, f.fire_id, fireCause);
          continue;
        }
        await finishCronRun(this.delivery, id, f.agent, f.fire_id, null, { run_id: '', status: CRON_RUN_STATUS.interrupted, text: 'svc stopped while this run was going; it was not run again', duration_ms: null, turn_id: null }, job ? job.settings : null, cause, null);
      }
    }
    for (const [id, s] of logged) {
      const job = this.jobs.get(id);
      for (const u of s.undelivered) if (!u.gaveUp && job) deliverCronResult(this.delivery, job.settings, u.fire_id, u.status, u.result, u.attempts + 1, { correlation: `cron:${u.fire_id}` });
    }
    await this.catchUp(bus.now());
    this.subs.add(
      bus.subscribe('cron-scheduler', () => this.reload(), (e) => e.type === AUTOMATION_EVENTS.job_created || e.type === AUTOMATION_EVENTS.job_updated || e.type === AUTOMATION_EVENTS.job_deleted),
    );
    // The config is applied when its reload is told: a new user_timezone moves jobs at once.
    this.subs.add(bus.subscribe('cron-scheduler-zone', () => this.followZone(), (e) => e.type === CONFIG_EVENTS.reloaded));
    this.watch();
    this.flush();
  }

  stop(): void {
    this.stopped = true;
    this.subs.unsubscribe();
    this.plan?.stop();
    if (this.watchTimer !== null) this.clock.clearTimeout(this.watchTimer as never);
    for (const t of this.retryTimers) this.clock.clearTimeout(t as never);
    this.retryTimers.clear();
    this.flush();
  }

  /**
   * Resolves once everything started so far has ended or is held (tests wait on this): every fire,
   * every run (but one its agent has not answered yet, or one queued behind such a run), the record
   * of each finished run, each delivery attempt and the write of the run fields, and what any of
   * these started meanwhile. The runner's idle() ends after its reactions ran, so a run that ended
   * has its record tracked here by then.
   */
  async idle(): Promise<void> {
    for (;;) {
      await this.d.runner.idle();
      if (!this.inflight.size) return;
      await Promise.allSettled([...this.inflight]);
    }
  }

  /**
   * Whether the plan still has fires due to hand out, batch by batch (each after a 0-ms delay on
   * the clock): a test on a SimulatedClock advances it by 0 until this is false.
   */
  draining(): boolean {
    return this.plan?.getSnapshot().matches('draining') ?? false;
  }

  /** The next fire of each job, epoch ms (null: none). */
  nextRuns(): Map<string, number | null> {
    const next = this.plan?.getSnapshot().context.next ?? {};
    return new Map([...this.jobs.keys()].map((id) => [id, next[id] ?? null]));
  }

  /** `POST /api/cron/{id}/run`: a fire now, outside the schedule (it does not move the next one). */
  async runNow(id: string, cause: Cause): Promise<{ started: boolean; fire_id: string }> {
    // A hand edit the watcher has not met yet: the job runs as the file says now, not as it said.
    this.checkFile();
    const job = this.jobs.get(id) ?? (this.reload(), this.jobs.get(id));
    if (!job) throw new SvcError('not-found', `cron job ${JSON.stringify(id)} does not exist`);
    if (job.problem !== null) throw new SvcError('cron-job-invalid', `cron job ${JSON.stringify(id)} was not run: its record in cron_jobs.json is not valid (${job.problem}); fix it first`);
    const now = this.d.bus.now();
    const fireId = `${id}@manual-${iso(now)}`;
    await this.fire(job, now, fireId, 'manual', cause);
    // The caller's 202 means the fire is in the log, its run queued and the record says so.
    this.flush();
    return { started: true, fire_id: fireId };
  }

  // ------------------------------------------------------------------ schedule

  /** Reads cron_jobs.json again; jobs whose schedule, zone or enabled changed get a new next fire. */
  reload(): void {
    this.flush();
    let records: CronJobRecord[];
    let file: ReturnType<typeof readCronJobsFile>;
    try {
      file = readCronJobsFile(this.d.paths);
    } catch (e) {
      this.d.bus.emitLog('warn', `cron_jobs.json not reloaded (the jobs as they were keep running): ${describeError(e)}`);
      return;
    }
    const hash = sha(file.text);
    try {
      records = file.jobs();
    } catch (e) {
      // Told once per content: its hash is kept, so the watcher does not take the same broken file
      // for a new edit at each check. The next change of the file is read again.
      if (hash !== this.file.hash) this.d.bus.emitLog('warn', `cron_jobs.json not reloaded (the jobs as they were keep running): ${describeError(e)}`);
      this.file.hash = hash;
      return;
    }
    this.file.took(hash, records);
    this.schedule(records);
  }

  /**
   * `user_timezone` is hot (SPEC.md): when the zone of jobs without one of their own is no longer
   * the one they were scheduled in, they are scheduled again. Checked on a config reload, at each
   * watch check and at each tick, so no fire is taken in the old zone once the config changed.
   */
  private followZone(): void {
    if (this.stopped || this.d.defaultZone() === this.zoneUsed) return;
    this.schedule([...this.file.records.values()]);
  }

  /** Jobs whose schedule, zone or enabled changed get a new next fire; jobs not in `records` are dropped. */
  private schedule(records: readonly CronJobRecord[]): void {
    const now = this.d.bus.now();
    const defaultZone = this.d.defaultZone();
    this.zoneUsed = defaultZone;
    const seen = new Set<string>();
    const changed: CronJobRecord[] = [];
    for (const r of records) {
      seen.add(r.id);
      const parsed = v.safeParse(CronJobSettingsSchema, r);
      if (!parsed.success) {
        const problem = parsed.issues.map((i) => `${v.getDotPath(i) ?? 'record'}: ${i.message}`).join('; ');
        if (!this.jobs.has(r.id) || this.jobs.get(r.id)!.schedule !== null) this.d.bus.emitLog('warn', `cron job ${r.id} is not run: ${problem}`);
        this.jobs.set(r.id, { settings: { ...(this.jobs.get(r.id)?.settings ?? ({} as CronJobSettings)), id: r.id }, schedule: null, zone: 'UTC', ownZone: null, key: 'invalid', problem });
        continue;
      }
      const s = parsed.output;
      const zone = cronTimeZone(s.timezone, defaultZone, null, null);
      const ownZone = canonicalTimeZone(s.timezone);
      const key = `${s.schedule}|${zone}|${s.enabled}`;
      const old = this.jobs.get(r.id);
      if (old && old.key === key && old.schedule) {
        // Same fires; but a job that now names the zone it was following no longer follows user_timezone.
        old.settings = s;
        old.ownZone = ownZone;
        continue;
      }
      const compiled = compileSchedule(s.schedule, zone);
      if ('error' in compiled) this.d.bus.emitLog('warn', `cron job ${r.id} is not run: schedule ${JSON.stringify(s.schedule)}: ${compiled.error}`);
      const schedule = 'error' in compiled ? null : compiled;
      this.jobs.set(r.id, { settings: s, schedule, zone, ownZone, key, problem: null });
      changed.push(r);
    }
    for (const id of [...this.jobs.keys()]) if (!seen.has(id)) this.jobs.delete(id);
    if (!this.plan || this.stopped) return;
    const planned: CronScheduleJob[] = [];
    for (const j of this.jobs.values()) if (j.schedule) planned.push({ id: j.settings.id, expr: j.settings.schedule, zone: j.zone, enabled: j.settings.enabled });
    this.plan.send({ type: 'jobs.set', jobs: planned, now });
    const next = this.plan.getSnapshot().context.next;
    const moved: Record<string, Partial<CronJobRecord>> = {};
    for (const r of changed) {
      const at = next[r.id] ?? null;
      const nextRun = at === null ? null : iso(at);
      // Against what will be written: a next_run still pending (an unreadable file) counts.
      if ({ ...r, ...this.file.pendingOf(r.id) }.next_run !== nextRun) moved[r.id] = { next_run: nextRun };
    }
    if (Object.keys(moved).length) this.patch(moved);
  }

  /** Start-up: for each job, the fires it missed since it was last handled (or made). */
  private async catchUp(now: number): Promise<void> {
    for (const job of this.jobs.values()) {
      if (!job.schedule || !job.settings.enabled) continue;
      const id = job.settings.id;
      const record = job.settings as CronJobSettings & { created_at?: unknown; updated_at?: unknown };
      const made = Math.max(Number(record.created_at) || 0, Number(record.updated_at) || 0) * 1000;
      const since = Math.max(this.lastScheduled.get(id) ?? 0, made);
      if (since === 0) continue;
      const missed = missedFires(job.schedule, since, now);
      for (const at of missed.skipped) {
        const fire_id = fireIdOf(id, at);
        await this.d.bus.publish({ stream: cronJobStream(id), type: AUTOMATION_EVENTS.fire_skipped, data: { id, agent: job.settings.agent, fire_id, scheduled_at: iso(at), status: CRON_RUN_STATUS.missed }, correlation: `cron:${fire_id}` });
        this.lastScheduled.set(id, Math.max(at, this.lastScheduled.get(id) ?? 0));
      }
      if (missed.skippedTotal > missed.skipped.length) this.d.bus.emitLog('info', `cron job ${id}: ${missed.skippedTotal - missed.skipped.length} older missed fires not recorded one by one`);
      if (missed.skipped.length) this.patch({ [id]: { last_status: CRON_RUN_STATUS.missed } });
      if (missed.run !== null) await this.fire(job, missed.run, fireIdOf(id, missed.run), 'missed', { correlation: `cron:${fireIdOf(id, missed.run)}` });
    }
  }

  /** A check now, outside the plan's own timer: fires what is due by the clock. Returns how many fired now (the first batch; the rest follow on the clock). */
  tick(): number {
    if (this.stopped || !this.plan) return 0;
    let fired = 0;
    const count = this.plan.on('due', (e) => void (fired += e.fires.length));
    this.plan.send({ type: 'clock', now: this.d.bus.now() });
    count.unsubscribe();
    return fired;
  }

  /**
   * The plan decided these fires are due (one batch of at most CRON_FIRE_BATCH: the plan hands out
   * the rest on later turns of the event loop): each job's next_run moves on, and the fires start.
   */
  private onDue(fires: readonly CronDue[]): void {
    if (this.stopped) return;
    // A user_timezone changed without a config reload: jobs following it are planned again first.
    const zoneMoved = this.d.defaultZone() !== this.zoneUsed;
    if (zoneMoved) queueMicrotask(() => this.followZone());
    const moved: Record<string, Partial<CronJobRecord>> = {};
    const due: { job: Job; at: number }[] = [];
    for (const f of fires) {
      const job = this.jobs.get(f.id);
      if (!job?.schedule) continue;
      moved[f.id] = { next_run: f.next === null ? null : iso(f.next) };
      if (zoneMoved && job.ownZone === null) continue;
      due.push({ job, at: f.at });
    }
    if (Object.keys(moved).length) this.patch(moved);
    for (const { job, at } of due) {
      const fireId = fireIdOf(job.settings.id, at);
      this.track(this.fire(job, at, fireId, 'schedule', { correlation: `cron:${fireId}` }));
    }
  }

  /** The fact first (so a crash after it is known), then the run; a fire already handled is dropped. */
  private async fire(job: Job, scheduledMs: number, fireId: string, trigger: 'schedule' | 'missed' | 'manual', cause: Cause): Promise<void> {
    const s = job.settings;
    if (trigger !== 'manual') {
      const last = this.lastScheduled.get(s.id);
      if (last !== undefined && scheduledMs <= last) return;
      this.lastScheduled.set(s.id, scheduledMs);
    }
    await this.d.bus.publish({ stream: cronJobStream(s.id), type: AUTOMATION_EVENTS.fired, data: { id: s.id, agent: s.agent, fire_id: fireId, scheduled_at: iso(scheduledMs), trigger }, ...cause });
    await this.startRun(job, fireId, cause);
  }

  /** Queues a fire's run (its `cron.fired` is in the log) and records its end when it comes. */
  private async startRun(job: Job, fireId: string, cause: Cause): Promise<void> {
    const s = job.settings;
    const route = s.chat_id !== null ? { transport: s.transport ?? 'internal', chat_id: s.chat_id, topic_id: s.topic_id } : null;
    const startedAt = this.d.bus.now();
    const run = this.d.runner.run(cronRunRequest(s, job.ownZone, fireId, cause, route));
    this.patch({ [s.id]: { last_run_at: iso(startedAt), last_status: 'running', last_fire_id: fireId } });
    // The run itself is the runner's (its idle() waits for it unless its agent holds it); what follows it is tracked here.
    void run.done.then((r) => this.track(finishCronRun(this.delivery, s.id, s.agent, fireId, startedAt, r, s, cause, run.run_id)));
    await run.queued;
  }

  // ------------------------------------------------------------------ the file

  /**
   * A hand edit is reloaded and recorded as facts (by nobody: the file was edited, not the API).
   * `before`: the records as svc last read or wrote them, before anything of the edited file.
   */
  private handEdited(before: ReadonlyMap<string, CronJobRecord> = this.file.records): void {
    this.d.bus.emitLog('info', 'cron_jobs.json changed on disk: jobs reloaded');
    this.reload();
    const after = this.file.records;
    const facts = handEditFacts(before, after);
    for (const f of facts) this.track(this.d.bus.publish(f).catch((e: unknown) => this.d.bus.emitLog('warn', `cron_jobs.json hand edit not recorded: ${describeError(e)}`)));
  }

  private watch(): void {
    if (this.stopped) return;
    this.watchTimer = this.clock.setTimeout(() => {
      this.watchTimer = null;
      this.checkFile();
      this.watch();
    }, this.d.watchIntervalMs ?? CRON_WATCH_INTERVAL_MS);
  }

  /** A content change not written by svc is a hand edit: reload. */
  checkFile(): boolean {
    this.flush();
    this.followZone();
    let text: string;
    try {
      text = readCronJobsFile(this.d.paths).text;
    } catch {
      return false;
    }
    if (sha(text) === this.file.hash || isCronJobsSavedBySvc(this.d.paths, text)) return false;
    this.handEdited();
    return true;
  }

  private track(p: Promise<unknown>): void {
    const q = p.catch((e: unknown) => this.d.bus.emitLog('error', `cron scheduler: ${describeError(e)}`)).finally(() => this.inflight.delete(q));
    this.inflight.add(q);
  }
}

/** A new job's folder and memory file; the admin records call this on create. */
export { cronPrincipal } from './cron-run-request.js';

export function prepareCronJobFolder(paths: HomePaths, jobId: string): string {
  return ensureCronTaskFolder(paths, jobId);
}
