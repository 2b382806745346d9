import { SvcError } from '../schemas/index.js';

/*
 * Time zones and local wall-clock instants. Pure: time arrives as epoch ms, the zone as an IANA
 * name; `Intl` is the only source of calendar facts.
 */

/** IANA names start with a letter; this also keeps offset strings ("+01:00") out, which newer engines accept. */
const ZONE_NAME = /^[A-Za-z][A-Za-z0-9_+\-/]{0,63}$/;

/** The canonical spelling of an IANA zone name, or null when the runtime does not know it. */
export function canonicalTimeZone(name: unknown): string | null {
  if (typeof name !== 'string') return null;
  const trimmed = name.trim();
  if (!ZONE_NAME.test(trimmed)) return null;
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: trimmed }).resolvedOptions().timeZone;
  } catch {
    return null;
  }
}

export function isValidTimeZone(name: unknown): boolean {
  return canonicalTimeZone(name) !== null;
}

/**
 * SPEC.md "Model and timezone resolution": configured name, then `TZ`, then the host's zone, then UTC;
 * the first one the runtime knows wins. `TZ` may carry POSIX's leading ':'; the host zone may be given
 * as the `/etc/localtime` link target (`/usr/share/zoneinfo/Europe/Berlin`).
 */
export function resolveTimezone(configured: string | null | undefined, envTZ: string | null | undefined, hostZone: string | null | undefined): string {
  const env = typeof envTZ === 'string' ? envTZ.trim().replace(/^:/, '') : envTZ;
  const host = typeof hostZone === 'string' ? hostZone.trim().replace(/^.*\/zoneinfo\//, '') : hostZone;
  for (const candidate of [configured, env, host]) {
    const zone = canonicalTimeZone(candidate);
    if (zone !== null) return zone;
  }
  return 'UTC';
}

interface WallClock {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
}

const DAY_MS = 86_400_000;
const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterFor(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric',
    });
    formatters.set(timeZone, f);
  }
  return f;
}

function wallClock(ms: number, timeZone: string): WallClock {
  const out: Record<string, number> = {};
  for (const part of formatterFor(timeZone).formatToParts(ms)) {
    if (part.type !== 'literal') out[part.type] = Number(part.value);
  }
  return { year: out.year!, month: out.month!, day: out.day!, hour: out.hour!, minute: out.minute!, second: out.second! };
}

/** The wall-clock reading at `ms`, encoded as if it were a UTC instant (seconds precision). */
function wallAsUtc(ms: number, timeZone: string): number {
  const w = wallClock(ms, timeZone);
  return Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second);
}

function offsetAt(ms: number, timeZone: string): number {
  return wallAsUtc(ms, timeZone) - Math.floor(ms / 1000) * 1000;
}

/**
 * The instant the wall clock in `timeZone` first reads `hour`:00 on the given local date. When DST
 * repeats that hour, the first occurrence; when DST skips it, the instant the clock jumps over it
 * (so a day without 02:00 still gets its reset, at 03:00).
 */
function localHourInstant(year: number, month: number, day: number, hour: number, timeZone: string): number {
  const target = Date.UTC(year, month - 1, day, hour);
  // Offsets a day either side bracket any one transition near the target.
  const offsets = new Set([offsetAt(target - DAY_MS, timeZone), offsetAt(target, timeZone), offsetAt(target + DAY_MS, timeZone)]);
  const candidates = [...offsets].map((o) => target - o);
  const exact = candidates.filter((t) => wallAsUtc(t, timeZone) === target);
  if (exact.length > 0) return Math.min(...exact);
  // Skipped hour: find the first second whose wall reading is at or past the target.
  let lo = Math.min(...candidates);
  let hi = Math.max(...candidates);
  while (hi - lo > 1000) {
    const mid = lo + Math.floor((hi - lo) / 2000) * 1000;
    if (wallAsUtc(mid, timeZone) >= target) hi = mid;
    else lo = mid;
  }
  return hi;
}

/** The latest daily boundary (`hour`:00 local) at or before `now`. */
export function latestDailyBoundary(now: number, hour: number, timeZone: string): number {
  const w = wallClock(now, timeZone);
  const today = localHourInstant(w.year, w.month, w.day, hour, timeZone);
  if (today <= now) return today;
  const y = wallClock(Date.UTC(w.year, w.month - 1, w.day) - DAY_MS, 'UTC');
  return localHourInstant(y.year, y.month, y.day, hour, timeZone);
}

/** Epoch milliseconds from outside, checked: a finite number. */
export function checkTime(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new SvcError('invalid-time', `${field} = ${JSON.stringify(value) ?? String(value)} is not allowed (epoch milliseconds, a finite number)`);
  }
  return value;
}

/** Minutes past midnight of `atMs` on the clock of `zone`. */
export function localMinutes(atMs: number, zone: string): number {
  const parts = new Intl.DateTimeFormat('en-GB', { timeZone: zone, hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).formatToParts(new Date(atMs));
  const get = (t: string) => Number(parts.find((p) => p.type === t)?.value ?? 0);
  return (get('hour') % 24) * 60 + get('minute');
}

/**
 * Whether `atMs` falls in the daily window [start, end) (minutes past midnight, local to `zone`):
 * the one rule for every quiet-hours setting (heartbeat, cron jobs). A window whose start is after
 * its end wraps midnight (21:00 -> 08:00); equal ends are no window.
 */
export function inDailyWindow(atMs: number, startMinute: number, endMinute: number, zone: string): boolean {
  if (startMinute === endMinute) return false;
  const now = localMinutes(atMs, zone);
  return startMinute < endMinute ? now >= startMinute && now < endMinute : now >= startMinute || now < endMinute;
}
