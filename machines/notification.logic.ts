import {
  AUTOMATION_EVENTS,
  CRON_RUN_STATUS,
  NOTIFICATION_OUTCOMES,
  NOTIFICATION_SEVERITIES,
  NOTIFICATION_SOURCES,
  SvcError,
  TASK_EVENTS,
  type CreateNotification,
  type NotificationOutcome,
  type NotificationSource,
  type NotificationType,
  type Severity,
} from '../schemas/index.js';

/*
 * Notification rules (SPEC.md "Notification"): which outcomes become notifications and how loud
 * they are, what counts toward the unread badge, and the throttle helper. Pure: time arrives as
 * an argument and the throttle's memory is passed in and handed back.
 */

/** SPEC.md Limits: "throttle window 60 seconds". */
export const THROTTLE_WINDOW_MS = 60_000;

/** Bodies a job prints when it has nothing to say; compared trimmed and case-insensitively. */
export const EMPTY_BODIES: readonly string[] = ['', 'done', 'ok', 'success', 'completed'];
const EMPTY_BODY_SET = new Set(EMPTY_BODIES);

/**
 * Longest body kept. A failing job can print megabytes; the notification is a pointer to the
 * problem, and the full output stays in the task or cron record.
 */
export const MAX_NOTIFICATION_BODY_CHARS = 20_000;
export const TRUNCATION_MARK = '\n… (truncated)';

export interface NotificationOccurrence {
  source: NotificationSource;
  outcome: NotificationOutcome;
  body?: string | null;
}

export type Classification = { persist: false } | { persist: true; severity: Severity; type: NotificationType };

export function isEmptyBody(body: string | null | undefined): boolean {
  return EMPTY_BODY_SET.has((body ?? '').trim().toLowerCase());
}

/**
 * The severity table. Rows SPEC.md leaves out are settled here: for cron, task and webhook both
 * `failed` and `error` are the table's failure row; `system` (not in the table) is `info` on
 * success, `critical` when something failed and `warning` on an error, so a caller picks the
 * loudness by the outcome it reports.
 */
export function classify(occurrence: NotificationOccurrence): Classification {
  const { source, outcome } = occurrence;
  if (!(NOTIFICATION_SOURCES as readonly string[]).includes(source)) {
    throw new SvcError('invalid-notification', `notification source ${JSON.stringify(source)} is not one of ${NOTIFICATION_SOURCES.join(', ')}`);
  }
  if (!(NOTIFICATION_OUTCOMES as readonly string[]).includes(outcome)) {
    throw new SvcError('invalid-notification', `notification outcome ${JSON.stringify(outcome)} is not one of ${NOTIFICATION_OUTCOMES.join(', ')}`);
  }
  const ok = outcome === 'success';
  switch (source) {
    case 'cron':
    case 'task':
      if (!ok) return { persist: true, severity: 'critical', type: source };
      return isEmptyBody(occurrence.body) ? { persist: false } : { persist: true, severity: 'silent', type: source };
    case 'webhook':
      return { persist: true, severity: ok ? 'info' : 'warning', type: source };
    case 'system':
      return { persist: true, severity: ok ? 'info' : outcome === 'failed' ? 'critical' : 'warning', type: source };
  }
}

/** The unread badge: a notification counts while its `read` flag is false, unless it is silent. */
export function countsAsUnread(n: { read: boolean; severity: Severity }): boolean {
  return !n.read && n.severity !== 'silent';
}

/** Keeps the start of an oversized body and says that it was cut. */
export function truncateBody(body: string): string {
  if (body.length <= MAX_NOTIFICATION_BODY_CHARS) return body;
  return body.slice(0, MAX_NOTIFICATION_BODY_CHARS - TRUNCATION_MARK.length) + TRUNCATION_MARK;
}

/** source_id → when a warning or info notification from it was last seen (epoch ms). */
export type ThrottleState = ReadonlyMap<string, number>;
export const EMPTY_THROTTLE_STATE: ThrottleState = new Map();

export interface ThrottleResult {
  throttled: boolean;
  state: ThrottleState;
}

/**
 * SPEC.md `should_throttle(source_id, severity)`: critical never, silent always (both decided by
 * severity alone, so they leave the memory untouched); warning and info when the same source_id
 * was seen less than 60 s ago — a sighting at exactly 60 s is outside the window. Every warning or
 * info sighting counts as "seen", throttled or not, so a source that keeps firing stays throttled.
 * Without a source_id there is nothing to match, so it is not throttled. Entries older than the
 * window are dropped, so the memory stays as small as the set of recently active sources.
 */
export function shouldThrottle(state: ThrottleState, sourceId: string | null | undefined, severity: Severity, nowMs: number): ThrottleResult {
  if (!Number.isFinite(nowMs)) throw new SvcError('invalid-clock', `shouldThrottle: nowMs must be a finite epoch-ms number, got ${String(nowMs)}`);
  if (severity === 'critical') return { throttled: false, state };
  if (severity === 'silent') return { throttled: true, state };
  if (severity !== 'warning' && severity !== 'info') {
    throw new SvcError('invalid-notification', `severity ${JSON.stringify(severity)} is not one of ${NOTIFICATION_SEVERITIES.join(', ')}`);
  }
  if (sourceId === null || sourceId === undefined || sourceId === '') return { throttled: false, state };
  const last = state.get(sourceId);
  // A clock that stepped back (last > now) still means "just seen".
  const throttled = last !== undefined && nowMs - last < THROTTLE_WINDOW_MS;
  const next = new Map<string, number>();
  for (const [id, at] of state) if (nowMs - at < THROTTLE_WINDOW_MS) next.set(id, at);
  next.set(sourceId, Math.max(nowMs, last ?? nowMs));
  return { throttled, state: next };
}

/*
 * Outcome facts → notifications (SPEC.md's severity table). The facts already on the bus say how a
 * task, a cron run or a webhook call ended; this rule says what the bell shows of it, so no actor
 * has to remember to call the notifier. classify() then decides severity and whether it is kept.
 */

/** What the rule reads of a fact: its type, stream and payload, as the log holds them. */
export interface OutcomeFact {
  type: string;
  stream: string;
  data: { readonly [key: string]: unknown };
}

/** What the fact itself does not carry: a task's name and agent live in its `task.created`. */
export interface OutcomeSubject {
  name: string | null;
  agent: string | null;
}

const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);
/** Titles and fields have a length cap (CreateNotificationSchema): names are cut, never refused. */
const cut = (s: string, n: number): string => (s.length <= n ? s : `${s.slice(0, n - 1)}…`);
const named = (kind: string, name: string | null, id: string): string => (name && name !== id ? `${kind} "${cut(name, 120)}" (${cut(id, 120)})` : `${kind} ${cut(id, 120)}`);

/** The fact types this rule reads; the actor subscribes to exactly these. */
export const OUTCOME_FACT_TYPES: readonly string[] = [
  TASK_EVENTS.completed,
  TASK_EVENTS.failed,
  AUTOMATION_EVENTS.run_finished,
  AUTOMATION_EVENTS.completed,
  AUTOMATION_EVENTS.failed,
  AUTOMATION_EVENTS.run_ended,
];

/**
 * The notification an outcome fact raises, or null when it raises none: a skipped cron fire ran
 * nothing, and a fact missing its ids cannot name what it is about. An empty success body is still
 * handed on: the notifier logs it and keeps nothing (SPEC.md: "not persisted (logged only)").
 */
export function outcomeNotification(fact: OutcomeFact, subject: OutcomeSubject = { name: null, agent: null }): CreateNotification | null {
  const d = fact.data;
  switch (fact.type) {
    case TASK_EVENTS.completed:
    case TASK_EVENTS.failed: {
      if (!fact.stream.startsWith('task:')) return null;
      const id = fact.stream.slice('task:'.length);
      if (id === '') return null;
      const ok = fact.type === TASK_EVENTS.completed;
      const reason = str(d.reason) ?? 'error';
      return {
        source: 'task',
        outcome: ok ? 'success' : 'failed',
        title: ok ? `${named('Task', subject.name, id)} finished` : `${named('Task', subject.name, id)} failed: ${cut(reason, 100)}`,
        body: str(d.result) ?? '',
        agent: subject.agent ? cut(subject.agent, 200) : null,
        source_id: cut(id, 200),
        status: ok ? 'done' : 'failed',
      };
    }
    case AUTOMATION_EVENTS.run_finished:
      return runNotification(d, { source: 'cron', failed: 'failed', what: 'Cron job', verb: '' });
    case AUTOMATION_EVENTS.run_ended:
      return runNotification(d, { source: 'webhook', failed: 'error', what: 'Webhook', verb: 'run ' });
    case AUTOMATION_EVENTS.completed:
    case AUTOMATION_EVENTS.failed: {
      const id = str(d.id);
      if (id === null) return null;
      // A cron_task call that started its run is told when the run ends (`webhook.run_ended`), once.
      if (fact.type === AUTOMATION_EVENTS.completed && str(d.mode) === 'cron_task') return null;
      const ok = fact.type === AUTOMATION_EVENTS.completed;
      const request = str(d.request_id);
      const mode = str(d.mode) ?? 'wake';
      const body = ok
        ? `The ${mode} call ${request ?? ''} ran: ${str(d.status) ?? 'completed'}${str(d.task_id) ? ` (task ${str(d.task_id)})` : ''}.`.replace('  ', ' ')
        : `The ${mode} call ${request ?? ''} failed (${str(d.reason) ?? 'error'}): ${str(d.error) ?? ''}`.replace('  ', ' ');
      return {
        source: 'webhook',
        outcome: ok ? 'success' : 'error',
        title: ok ? `${named('Webhook', str(d.name), id)} called` : `${named('Webhook', str(d.name), id)} failed`,
        body,
        agent: str(d.agent) ? cut(str(d.agent)!, 200) : null,
        source_id: cut(id, 200),
        status: ok ? 'success' : 'failed',
      };
    }
    default:
      return null;
  }
}

/**
 * A one-shot run's end (a cron job's `cron.run_finished`, a `cron_task` webhook's `webhook.run_ended`):
 * skipped fires ran nothing; success is `success`, anything else the source's failure outcome.
 */
function runNotification(
  d: OutcomeFact['data'],
  k: { source: 'cron' | 'webhook'; failed: 'failed' | 'error'; what: string; verb: string },
): CreateNotification | null {
  const id = str(d.id);
  const status = str(d.status);
  if (id === null || status === null || status.startsWith('skipped:')) return null;
  const ok = status === CRON_RUN_STATUS.success;
  return {
    source: k.source,
    outcome: ok ? 'success' : k.failed,
    title: ok ? `${named(k.what, str(d.name), id)} ${k.verb}finished` : `${named(k.what, str(d.name), id)} ${k.verb}failed: ${cut(status, 100)}`,
    body: str(d.result) ?? '',
    agent: str(d.agent) ? cut(str(d.agent)!, 200) : null,
    source_id: cut(id, 200),
    status: ok ? 'success' : 'failed',
  };
}
