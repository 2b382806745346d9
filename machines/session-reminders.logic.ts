import { SvcError } from '../schemas/index.js';
import { checkTime } from './time-zone.logic.js';

/*
 * How often a session is reminded of things: the age warning and the memory hook cadence (SPEC.md
 * Limits).
 */

/** SPEC.md Limits "session warning": every 10 messages once the session is old. */
export const AGE_WARNING_EVERY = 10;
/** SPEC.md Limits "memory hook": every 6 messages. */
export const MEMORY_HOOK_EVERY = 6;

export interface AgeWarningSession {
  createdAt: number;
  /** Messages in the session including the one just handled. */
  messageCount: number;
  /** `messageCount` when the first message past the threshold was handled; null/absent until then. */
  countAtThreshold?: number | null;
}

function checkCount(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new SvcError('invalid-message-count', `${field} = ${JSON.stringify(value) ?? String(value)} is not allowed (a whole number >= 0)`);
  }
  return value;
}

function isOld(session: AgeWarningSession, now: number, warningHours: number): boolean {
  checkTime(now, 'now');
  checkTime(session.createdAt, 'createdAt');
  if (typeof warningHours !== 'number' || !Number.isFinite(warningHours) || warningHours < 0) {
    throw new SvcError('invalid-session-rules', `session_age_warning_hours = ${String(warningHours)} is not allowed (a number >= 0; 0 disables)`);
  }
  return warningHours > 0 && now - session.createdAt >= warningHours * 3_600_000;
}

/**
 * Whether to append the "/new" reminder to this reply: on the first message handled once the session
 * is `warningHours` old, then on every 10th message after that one. 0 hours disables the reminder.
 */
export function ageWarningDue(session: AgeWarningSession, now: number, warningHours: number): boolean {
  const count = checkCount(session.messageCount, 'messageCount');
  if (!isOld(session, now, warningHours)) return false;
  const base = session.countAtThreshold;
  if (base === undefined || base === null) return true;
  const since = count - checkCount(base, 'countAtThreshold');
  return since > 0 && since % AGE_WARNING_EVERY === 0;
}

/** The `countAtThreshold` to store after handling a message (unchanged once set). */
export function nextCountAtThreshold(session: AgeWarningSession, now: number, warningHours: number): number | null {
  const count = checkCount(session.messageCount, 'messageCount');
  const base = session.countAtThreshold ?? null;
  if (base !== null) return base;
  return isOld(session, now, warningHours) ? count : null;
}

/** Whether the memory reminder hook runs for this message (`messageCount` includes it). */
export function memoryHookDue(messageCount: number): boolean {
  const count = checkCount(messageCount, 'messageCount');
  return count > 0 && count % MEMORY_HOOK_EVERY === 0;
}
