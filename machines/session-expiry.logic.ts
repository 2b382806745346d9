import { SvcError, type AgentConfig } from '../schemas/index.js';
import { checkTime, isValidTimeZone, latestDailyBoundary } from './time-zone.logic.js';

/*
 * When a chat session ends on its own: idle timeout, the daily reset hour in the user's zone, the
 * message cap.
 */

export interface SessionActivity {
  createdAt: number;
  lastActiveAt: number;
  /** Messages already in the session, before the one about to be handled. */
  messageCount: number;
}

export interface ExpiryRules {
  /** 0 disables idle expiry. */
  idleTimeoutMinutes: number;
  dailyResetEnabled: boolean;
  /** Hour 0..23 in `timezone`. */
  dailyResetHour: number;
  /** A valid IANA name (see resolveTimezone). */
  timezone: string;
  /** null (or 0) disables the cap. */
  maxSessionMessages: number | null;
}

export type ExpiryReason = 'idle' | 'daily_reset' | 'max_messages';


function checkRules(rules: ExpiryRules): void {
  const bad = (field: string, value: unknown, allowed: string): never => {
    throw new SvcError('invalid-session-rules', `session rules ${field} = ${JSON.stringify(value) ?? String(value)} is not allowed (${allowed})`);
  };
  const r = rules as Partial<Record<keyof ExpiryRules, unknown>>;
  if (typeof r.idleTimeoutMinutes !== 'number' || !Number.isFinite(r.idleTimeoutMinutes) || r.idleTimeoutMinutes < 0) bad('idleTimeoutMinutes', r.idleTimeoutMinutes, 'a number >= 0');
  if (typeof r.dailyResetEnabled !== 'boolean') bad('dailyResetEnabled', r.dailyResetEnabled, 'true or false');
  if (typeof r.dailyResetHour !== 'number' || !Number.isInteger(r.dailyResetHour) || r.dailyResetHour < 0 || r.dailyResetHour > 23) bad('dailyResetHour', r.dailyResetHour, 'a whole number from 0 to 23');
  if (r.dailyResetEnabled && !isValidTimeZone(r.timezone)) bad('timezone', r.timezone, 'an IANA time zone name; resolve it with resolveTimezone first');
  if (r.maxSessionMessages !== null && (typeof r.maxSessionMessages !== 'number' || !Number.isInteger(r.maxSessionMessages) || r.maxSessionMessages < 0)) {
    bad('maxSessionMessages', r.maxSessionMessages, 'null or a whole number >= 0');
  }
}

/** The expiry rules of an agent config, with the timezone already resolved by the caller. */
export function expiryRulesFromConfig(
  config: Pick<AgentConfig, 'idle_timeout_minutes' | 'daily_reset_enabled' | 'daily_reset_hour' | 'max_session_messages'>,
  timezone: string,
): ExpiryRules {
  return {
    idleTimeoutMinutes: config.idle_timeout_minutes,
    dailyResetEnabled: config.daily_reset_enabled,
    dailyResetHour: config.daily_reset_hour,
    timezone,
    maxSessionMessages: config.max_session_messages,
  };
}

/**
 * Whether a session must be replaced before the next message, and why. Asked when a message arrives
 * (`now`), before it is counted. Reported in this order when several apply: idle, daily reset, cap.
 * A `lastActiveAt` later than `now` (clock moved back) expires nothing by time.
 */
export function shouldExpire(session: SessionActivity, now: number, rules: ExpiryRules): ExpiryReason | null {
  checkTime(now, 'now');
  const last = checkTime(session.lastActiveAt, 'lastActiveAt');
  checkTime(session.createdAt, 'createdAt');
  checkRules(rules);
  const elapsed = now - last;
  if (rules.idleTimeoutMinutes > 0 && elapsed >= rules.idleTimeoutMinutes * 60_000) return 'idle';
  if (rules.dailyResetEnabled && elapsed > 0) {
    const boundary = latestDailyBoundary(now, rules.dailyResetHour, rules.timezone);
    if (boundary > last) return 'daily_reset';
  }
  const cap = rules.maxSessionMessages;
  if (cap !== null && cap > 0 && session.messageCount >= cap) return 'max_messages';
  return null;
}
