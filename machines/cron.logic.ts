import { Cron } from 'croner';
import {
  AUTOMATION_EVENTS,
  CRON_FIELDS,
  CRON_NICKNAMES,
  CRON_RUN_STATUS,
  ONESHOT_EVENTS,
  cliNotFoundStatus,
  exitStatus,
  type AnyEnvelope,
  type OneShotRequest,
  type TurnOutcome,
} from '../schemas/index.js';
import { canonicalTimeZone, inDailyWindow, resolveTimezone } from './time-zone.logic.js';

/*
 * When cron jobs fire (SPEC.md "Cron job and webhook records", "Model and timezone resolution").
 * Pure: time arrives as epoch ms. Parsing and next-fire computation are croner's (DESIGN.md §9),
 * never our own arithmetic, so names, ranges, steps, macros and DST are its rules: a 02:30 job on
 * a spring-forward day fires once, at 03:00; on a fall-back day the repeated 02:30 fires once.
 */

/** A fire missed while svc was down runs at start-up only when it was due this recently. */
export const MISSED_FIRE_WINDOW_MS = 60 * 60 * 1000;
/** How many older missed fires of one job are written down one by one; the rest are counted in the log line. */
export const MAX_RECORDED_MISSED = 100;

export interface CompiledSchedule {
  expr: string;
  zone: string;
  cron: Cron;
}

/**
 * Standard cron only: exactly 5 fields or a `@daily`-style macro. croner's '5-part' mode refuses 6
 * (seconds) and 7 (years) fields as well; the count is checked first so the reason names it.
 */
function compile(expr: string, zone: string): Cron {
  return new Cron(expr.trim(), { timezone: zone, paused: true, mode: '5-part' });
}

function fieldCountProblem(expr: string): string | null {
  const s = expr.trim();
  if (s.startsWith('@')) return CRON_NICKNAMES.has(s.toLowerCase()) ? null : `${JSON.stringify(s)} is not one of ${[...CRON_NICKNAMES].join(', ')}`;
  const n = s === '' ? 0 : s.split(/\s+/).length;
  if (n === CRON_FIELDS.length) return null;
  const seconds = n === 6 ? ' (a seconds field is not accepted)' : '';
  return `a cron expression has exactly 5 fields (${CRON_FIELDS.join(', ')}), not ${n}${seconds}`;
}

/** Why an expression (in a zone) cannot be scheduled, or null when it can. */
export function scheduleProblem(expr: string, zone: string): string | null {
  const count = fieldCountProblem(expr);
  if (count !== null) return count;
  try {
    const c = compile(expr, zone);
    // A zone croner cannot convert into only shows when it computes a time.
    c.nextRun(new Date(0));
    return null;
  } catch (e) {
    return e instanceof Error ? e.message.replace(/^CronPattern: /, '') : String(e);
  }
}

export function compileSchedule(expr: string, zone: string): CompiledSchedule | { error: string } {
  const problem = scheduleProblem(expr, zone);
  return problem === null ? { expr, zone, cron: compile(expr, zone) } : { error: problem };
}

/** The first scheduled time strictly after `afterMs`, or null when the pattern never fires again. */
export function nextFireAfter(s: CompiledSchedule, afterMs: number): number | null {
  const next = s.cron.nextRun(new Date(afterMs));
  return next ? next.getTime() : null;
}

/** Scheduled times in (fromMs, toMs], oldest first, at most `limit` of the newest. */
export function firesBetween(s: CompiledSchedule, fromMs: number, toMs: number, limit = 10_000): number[] {
  const out: number[] = [];
  let at = fromMs;
  for (;;) {
    const next = nextFireAfter(s, at);
    if (next === null || next > toMs) break;
    out.push(next);
    if (out.length > limit) out.shift();
    at = next;
  }
  return out;
}

/** SPEC.md: the job's zone, then `user_timezone`, then `TZ`, the host's zone, UTC. */
export function cronTimeZone(jobZone: string | null | undefined, userTimezone: string | null | undefined, envTZ: string | null | undefined, hostZone: string | null | undefined): string {
  return canonicalTimeZone(jobZone) ?? resolveTimezone(userTimezone, envTZ, hostZone);
}

/** Deterministic, so a restart that meets the same scheduled time knows it already fired. */
export function fireIdOf(jobId: string, scheduledMs: number): string {
  return `${jobId}@${new Date(scheduledMs).toISOString()}`;
}

/** Minutes since local midnight in `zone`. */
const minutesOf = (hhmm: string) => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));

/**
 * Quiet hours apply only when the job sets both ends (no fallback to heartbeat's). A window whose
 * start is after its end wraps midnight (21:00 → 08:00); equal ends mean no window.
 */
export function jobInQuietHours(quietStart: string | null | undefined, quietEnd: string | null | undefined, atMs: number, zone: string): boolean {
  if (!quietStart || !quietEnd) return false;
  return inDailyWindow(atMs, minutesOf(quietStart), minutesOf(quietEnd), zone);
}

/**
 * What to do at start-up with the fires a job missed in (sinceMs, nowMs]: the newest runs once when
 * it is at most MISSED_FIRE_WINDOW_MS old; every other one is recorded `skipped:missed`.
 */
export function missedFires(s: CompiledSchedule, sinceMs: number, nowMs: number): { run: number | null; skipped: number[]; skippedTotal: number } {
  const limit = MAX_RECORDED_MISSED + 1;
  const fires = firesBetween(s, sinceMs, nowMs, limit);
  const last = fires.at(-1);
  const run = last !== undefined && nowMs - last <= MISSED_FIRE_WINDOW_MS ? last : null;
  const skipped = run === null ? fires : fires.slice(0, -1);
  // firesBetween keeps only the newest `limit`: count the rest without keeping them.
  const skippedTotal = fires.length >= limit ? countFires(s, sinceMs, nowMs) - (run === null ? 0 : 1) : skipped.length;
  return { run, skipped: skipped.slice(-MAX_RECORDED_MISSED), skippedTotal };
}

function countFires(s: CompiledSchedule, fromMs: number, toMs: number): number {
  let n = 0;
  for (let at = nextFireAfter(s, fromMs); at !== null && at <= toMs; at = nextFireAfter(s, at)) n++;
  return n;
}

/** A one-shot run's status from how its turn ended (the run statuses of the issue). */
export function runStatusOf(o: TurnOutcome): string {
  if (o.status === 'completed' && !o.is_error) return CRON_RUN_STATUS.success;
  if (o.status === 'timed_out') return CRON_RUN_STATUS.timeout;
  if (o.reason === 'spawn-failed') return cliNotFoundStatus(o.provider ?? 'unknown');
  if (typeof o.exit_code === 'number') return exitStatus(o.exit_code);
  if (o.status === 'aborted') return 'error:aborted';
  return `error:${(o.reason ?? 'failed').replace(/-/g, '_')}`;
}

export const isSuccessStatus = (status: string): boolean => status === CRON_RUN_STATUS.success;

/** The mean of `count` durations after one more, in seconds (the record's `avg_duration`). */
export function nextAverage(avg: number | null | undefined, count: number, durationS: number): number {
  const prev = typeof avg === 'number' && Number.isFinite(avg) && count > 0 ? avg : 0;
  const n = Math.max(0, count);
  return Math.round(((prev * n + durationS) / (n + 1)) * 1000) / 1000;
}

/** What the log says about one job's fires. */
export interface CronJobLogState {
  /** The newest scheduled (not manual) fire or skip: a scheduled time at or before it has been handled. */
  lastScheduledMs: number | null;
  /** Fired and not finished: cut by a stop of svc. `correlation` is the fire's, which its run's facts carry too. */
  unfinished: { fire_id: string; agent: string; correlation: string | null }[];
  /** Finished with a result to deliver and no delivery yet. */
  undelivered: { fire_id: string; agent: string; status: string; result: string; attempts: number; gaveUp: boolean }[];
}

/** Folds `cron:*` facts into what a start-up needs, per job id. */
export function foldCronLog(events: Iterable<AnyEnvelope>): Map<string, CronJobLogState> {
  const out = new Map<string, CronJobLogState>();
  const open = new Map<string, Map<string, { agent: string; correlation: string | null }>>();
  const pending = new Map<string, Map<string, CronJobLogState['undelivered'][number]>>();
  const of = (id: string) => {
    let s = out.get(id);
    if (!s) out.set(id, (s = { lastScheduledMs: null, unfinished: [], undelivered: [] }));
    if (!open.has(id)) open.set(id, new Map());
    if (!pending.has(id)) pending.set(id, new Map());
    return s;
  };
  for (const e of events) {
    const d = e.data as Record<string, unknown>;
    const id = typeof d.id === 'string' ? d.id : null;
    if (id === null) continue;
    const fire = String(d.fire_id ?? '');
    switch (e.type) {
      case AUTOMATION_EVENTS.fired:
      case AUTOMATION_EVENTS.fire_skipped: {
        const s = of(id);
        if (e.type === AUTOMATION_EVENTS.fired) open.get(id)!.set(fire, { agent: String(d.agent), correlation: e.correlation ?? null });
        if (d.trigger !== 'manual') {
          const at = Date.parse(String(d.scheduled_at));
          if (Number.isFinite(at) && (s.lastScheduledMs === null || at > s.lastScheduledMs)) s.lastScheduledMs = at;
        }
        break;
      }
      case AUTOMATION_EVENTS.run_finished:
        of(id);
        open.get(id)!.delete(fire);
        if (d.deliver === true) pending.get(id)!.set(fire, { fire_id: fire, agent: String(d.agent), status: String(d.status), result: String(d.result ?? ''), attempts: 0, gaveUp: false });
        break;
      case AUTOMATION_EVENTS.delivered:
        of(id);
        pending.get(id)!.delete(fire);
        break;
      case AUTOMATION_EVENTS.delivery_failed: {
        of(id);
        const p = pending.get(id)!.get(fire);
        if (p) {
          p.attempts = Math.max(p.attempts, Number(d.attempt) || 0);
          p.gaveUp = d.retry_at === null;
        }
        break;
      }
      case AUTOMATION_EVENTS.job_deleted:
        out.delete(id);
        open.delete(id);
        pending.delete(id);
        break;
    }
  }
  for (const [id, s] of out) {
    s.unfinished = [...open.get(id)!].map(([fire_id, f]) => ({ fire_id, ...f }));
    s.undelivered = [...pending.get(id)!.values()];
  }
  return out;
}

/** A one-shot run a stop of svc cut: queued (and maybe started), never finished. */
export interface CutOneShot {
  run_id: string;
  /** The correlation its facts carry: the cron fire's or the webhook call's. */
  correlation: string | null;
  /** A CLI was asked: the run must not start again. */
  started: boolean;
  /** The request its `queued` fact holds; null in facts written before requests were kept. */
  request: OneShotRequest | null;
}

/** Cut one-shot runs in the order they were queued (the order a dependency queue ran them in). */
export function cutOneShots(events: Iterable<AnyEnvelope>): CutOneShot[] {
  const open = new Map<string, CutOneShot>();
  for (const e of events) {
    const d = e.data as { run_id?: unknown; request?: OneShotRequest };
    if (typeof d.run_id !== 'string') continue;
    if (e.type === ONESHOT_EVENTS.queued) open.set(d.run_id, { run_id: d.run_id, correlation: e.correlation ?? null, started: false, request: d.request ?? null });
    else if (e.type === ONESHOT_EVENTS.started) {
      const run = open.get(d.run_id);
      if (run) run.started = true;
    } else if (e.type === ONESHOT_EVENTS.finished) open.delete(d.run_id);
  }
  return [...open.values()];
}

/** Whether a cut run starts again after the restart: only one that never asked a CLI and whose request is known. */
export const restartsAfterCut = (run: CutOneShot): run is CutOneShot & { request: OneShotRequest } => !run.started && run.request !== null;

/** The delay before delivery attempt `attempt + 1` (1-based attempts), or null when there is none. */
export function deliveryRetryDelayMs(attempt: number): number | null {
  const delays = [30_000, 120_000, 600_000, 1_800_000];
  return attempt >= 1 && attempt <= delays.length ? delays[attempt - 1]! : null;
}

/**
 * The start of a run's result that cron_jobs.json keeps in `last_result`. Every flush rewrites the
 * whole file, so 1,000 jobs with long results must stay far below the JSON file read limit; the
 * whole result (to MAX_CRON_RESULT_CHARS) is in the run's `cron.run_finished` fact and its delivery.
 */
const MAX_RECORD_RESULT_CHARS = 2_000;

/** `last_result`: the result as it is when short, else its start and `…`, MAX_RECORD_RESULT_CHARS in all. */
export function recordResultPreview(result: string): string {
  if (result.length <= MAX_RECORD_RESULT_CHARS) return result;
  let end = MAX_RECORD_RESULT_CHARS - 1;
  // Never half of a surrogate pair.
  const last = result.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return `${result.slice(0, end)}…`;
}

/** The message a chat gets: a header naming the job, then the result (or why there is none). */
export function cronDeliveryText(title: string, status: string, result: string): string {
  const head = `TASK: ${title}`;
  if (isSuccessStatus(status)) return `${head}\n\n${result}`;
  return `${head}\n\n(run ended ${status})${result.trim() ? `\n\n${result}` : ''}`;
}
