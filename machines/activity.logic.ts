import {
  ACTIVITY_TYPES,
  AGENT_EVENTS,
  FINISHED_TASK_STATUSES,
  type ActivityEvent,
  type ActivitySeverity,
  type ActivitySource,
  type AuditEntry,
  type CronJobRecord,
  type Language,
  type Notification,
  type Principal,
  type TaskRecord,
} from '../schemas/index.js';

/*
 * The activity feed's rules (SPEC.md "Activity event"): how each source's records become events,
 * who may see which, and how they read in ru and en. Pure: the records, the clock reading and the
 * caller arrive as arguments.
 */

/** An event before it is put into words. */
export interface ActivityItem {
  id: string;
  type: string;
  agent: string | null;
  /** Epoch ms. */
  at: number;
  severity: ActivitySeverity;
  /** The human name of what happened to (task name, job title, notification title, username). */
  subject: string | null;
  source: ActivitySource;
  raw: unknown;
}

const NOTIFICATION_SEVERITY: Record<string, ActivitySeverity> = { critical: 'error', warning: 'warning', info: 'info', silent: 'success' };
const FAILED = new Set(['failed', 'error']);

function notificationType(n: Notification): string {
  const failed = FAILED.has(n.status ?? '') || n.severity === 'critical';
  switch (n.type) {
    case 'task':
      return failed ? 'task_failed' : 'task_completed';
    case 'cron':
      return failed ? 'cron_failed' : 'cron_fired';
    case 'webhook':
      return 'webhook_called';
    default:
      return n.type;
  }
}

export function activityFromNotification(n: Notification): ActivityItem | null {
  const at = Date.parse(n.created_at);
  if (!Number.isFinite(at)) return null;
  return { id: `notifications:${n.id}`, type: notificationType(n), agent: n.agent, at, severity: NOTIFICATION_SEVERITY[n.severity] ?? 'info', subject: n.title, source: 'notifications', raw: n };
}

/** A finished task (running ones are counters, not events), at the time it finished. */
export function activityFromTask(t: TaskRecord): ActivityItem | null {
  if (!FINISHED_TASK_STATUSES.includes(t.status)) return null;
  const created = t.created_at;
  const seconds = t.finished_at ?? (created !== null && t.elapsed_seconds !== null ? created + t.elapsed_seconds : created);
  if (seconds === null || !Number.isFinite(seconds)) return null;
  const type = t.status === 'done' ? 'task_completed' : 'task_failed';
  const severity: ActivitySeverity = t.status === 'done' ? 'success' : t.status === 'cancelled' ? 'warning' : 'error';
  return { id: `tasks:${t.task_id}`, type, agent: t.parent_agent ?? t.agent, at: seconds * 1000, severity, subject: t.name, source: 'tasks', raw: t };
}

function epochMs(value: unknown): number | null {
  if (typeof value === 'number' && Number.isFinite(value)) return value * 1000;
  if (typeof value === 'string') {
    const ms = Date.parse(value);
    return Number.isFinite(ms) ? ms : null;
  }
  return null;
}

/** The job's last run, as the scheduler records it on the job (`last_run_at`, `last_status`, `last_error`). */
export function activityFromCronJob(j: CronJobRecord): ActivityItem | null {
  const at = epochMs(j.last_run_at);
  if (at === null) return null;
  const failed = FAILED.has(String(j.last_status ?? '')) || (typeof j.last_error === 'string' && j.last_error !== '');
  return {
    id: `cron:${j.id}:${at}`,
    type: failed ? 'cron_failed' : 'cron_fired',
    agent: j.agent,
    at,
    severity: failed ? 'error' : 'success',
    subject: j.title,
    source: 'cron',
    raw: j,
  };
}

/** Sign-ins only: the rest of the audit log is the admin's `/api/audit`, not the dashboard's. */
export function activityFromAudit(a: AuditEntry): ActivityItem | null {
  if (!a.action.startsWith('auth.login')) return null;
  const at = Date.parse(a.timestamp);
  if (!Number.isFinite(at)) return null;
  const refused = a.action !== 'auth.login' || (a.status !== null && a.status >= 400);
  return { id: `audit:${a.id}`, type: 'auth_login', agent: null, at, severity: refused ? 'warning' : 'info', subject: a.actor, source: 'audit', raw: a };
}

/** An agent's `agent.started` / `agent.stopped` fact, as the log holds it. */
export interface AgentLifecycleFact {
  seq: number;
  type: string;
  /** ISO time the fact was recorded. */
  at: string;
  data: { readonly [key: string]: unknown };
}

/** An agent coming up or going down (its runtime started or stopped: start, reload, removal, shutdown). */
export function activityFromAgentFact(e: AgentLifecycleFact): ActivityItem | null {
  const type = e.type === AGENT_EVENTS.started ? 'agent_started' : e.type === AGENT_EVENTS.stopped ? 'agent_stopped' : null;
  const name = typeof e.data.name === 'string' ? e.data.name : null;
  const at = Date.parse(e.at);
  if (type === null || name === null || !Number.isFinite(at)) return null;
  return { id: `agents:${e.seq}`, type, agent: name, at, severity: 'info', subject: name, source: 'agents', raw: e };
}

export interface ActivitySources {
  notifications: readonly Notification[];
  tasks: readonly TaskRecord[];
  cronJobs: readonly CronJobRecord[];
  audit: readonly AuditEntry[];
  /** Agents' start and stop facts; absent: none. */
  agents?: readonly AgentLifecycleFact[];
}

/**
 * Every event of every source, newest first. A task or job a notification already reports (its
 * `source_id`) is not reported twice.
 */
export function collectActivity(src: ActivitySources): ActivityItem[] {
  const notified = new Set(src.notifications.filter((n) => n.source_id !== null).map((n) => `${n.type}:${n.source_id}`));
  const items: (ActivityItem | null)[] = [
    ...src.notifications.map(activityFromNotification),
    ...src.tasks.filter((t) => !notified.has(`task:${t.task_id}`)).map(activityFromTask),
    ...src.cronJobs.filter((j) => !notified.has(`cron:${j.id}`)).map(activityFromCronJob),
    ...src.audit.map(activityFromAudit),
    ...(src.agents ?? []).map(activityFromAgentFact),
  ];
  // A stable sort: events of one moment keep their source's order (notifications newest first).
  return items.filter((i): i is ActivityItem => i !== null).sort((a, b) => b.at - a.at);
}

/** SPEC.md "Agent-scoped access": an empty list or `*` is every agent. */
export function unrestricted(p: Pick<Principal, 'allowed_agents'>): boolean {
  return p.allowed_agents.length === 0 || p.allowed_agents.includes('*');
}

/**
 * What `principal` may see: a restricted user sees events of its agents only (an event with no
 * agent is not provably its own, so it is hidden); sign-ins are shown to unrestricted admins only.
 */
export function activityVisibleTo(principal: Pick<Principal, 'allowed_agents' | 'role'>, item: ActivityItem): boolean {
  if (item.source === 'audit') return principal.role === 'admin' && unrestricted(principal);
  if (unrestricted(principal)) return true;
  return item.agent !== null && principal.allowed_agents.includes(item.agent);
}

export interface ActivityFilter {
  /** null: every severity. */
  severity: readonly ActivitySeverity[] | null;
  /** The caller's `errors_ack_at` (epoch s): with an error filter, older errors are hidden. */
  errorsAckAt: number | null;
}

export function filterActivity(items: readonly ActivityItem[], f: ActivityFilter): ActivityItem[] {
  if (f.severity === null) return [...items];
  const wanted = new Set(f.severity);
  const ackMs = wanted.has('error') && f.errorsAckAt !== null ? f.errorsAckAt * 1000 : null;
  return items.filter((i) => wanted.has(i.severity) && !(i.severity === 'error' && ackMs !== null && i.at < ackMs));
}

export const DAY_MS = 86_400_000;

/** `failed_last_24h`: errors since max(now − 24 h, the caller's acknowledgement). */
export function failedSince(items: readonly ActivityItem[], nowMs: number, errorsAckAt: number | null): number {
  const cutoff = Math.max(nowMs - DAY_MS, errorsAckAt === null ? -Infinity : errorsAckAt * 1000);
  return items.filter((i) => i.severity === 'error' && i.at >= cutoff).length;
}

const TITLES: Record<Language, Record<string, string>> = {
  ru: {
    task_completed: 'Задача выполнена',
    task_failed: 'Задача завершилась с ошибкой',
    agent_started: 'Агент запущен',
    agent_stopped: 'Агент остановлен',
    cron_fired: 'Задание по расписанию выполнено',
    cron_failed: 'Ошибка задания по расписанию',
    webhook_called: 'Вызван вебхук',
    auth_login: 'Вход в панель',
  },
  en: {
    task_completed: 'Task completed',
    task_failed: 'Task failed',
    agent_started: 'Agent started',
    agent_stopped: 'Agent stopped',
    cron_fired: 'Scheduled job ran',
    cron_failed: 'Scheduled job failed',
    webhook_called: 'Webhook called',
    auth_login: 'Sign-in to the panel',
  },
};
const FALLBACK_TITLE: Record<Language, string> = { ru: 'Событие', en: 'Event' };
const KNOWN_TYPES = new Set<string>(ACTIVITY_TYPES);

/**
 * `task.failed`, `cron_failed`, `ECONNRESET`: one token of identifier parts joined by `.` or `_`, or
 * an errno name, is a machine code, not words for a person; it never goes into a title.
 */
export function looksLikeCode(s: string): boolean {
  const t = s.trim();
  return /^[A-Za-z0-9]+([._][A-Za-z0-9]+)+$/.test(t) || /^E[A-Z0-9]{3,}$/.test(t);
}

export function activityTitle(item: Pick<ActivityItem, 'type' | 'subject'>, lang: Language): string {
  const label = KNOWN_TYPES.has(item.type) ? TITLES[lang][item.type]! : FALLBACK_TITLE[lang];
  const subject = item.subject?.trim().slice(0, 200) ?? '';
  return subject === '' || looksLikeCode(subject) ? label : `${label}: ${subject}`;
}

/** "5 мин назад" / "5 min ago", from the clock reading given. */
export function relativeTime(atMs: number, nowMs: number, lang: Language): string {
  const s = Math.max(0, Math.floor((nowMs - atMs) / 1000));
  const ru = lang === 'ru';
  if (s < 60) return ru ? 'только что' : 'just now';
  if (s < 3600) return ru ? `${Math.floor(s / 60)} мин назад` : `${Math.floor(s / 60)} min ago`;
  if (s < 86_400) return ru ? `${Math.floor(s / 3600)} ч назад` : `${Math.floor(s / 3600)} h ago`;
  return ru ? `${Math.floor(s / 86_400)} дн назад` : `${Math.floor(s / 86_400)} d ago`;
}

export function describeActivity(item: ActivityItem, nowMs: number, lang: Language, verbose = false): ActivityEvent {
  const when = relativeTime(item.at, nowMs, lang);
  return {
    id: item.id,
    type: item.type,
    title: activityTitle(item, lang),
    subtitle: item.agent ? `${when} · ${item.agent}` : when,
    agent_name: item.agent,
    timestamp: new Date(item.at).toISOString(),
    severity: item.severity,
    ...(verbose ? { source: item.source, raw: item.raw } : {}),
  };
}

/** `uptime_human`: "2 д 3 ч 5 мин" / "2d 3h 5m"; under a minute, seconds. */
export function humanUptime(seconds: number, lang: Language): string {
  const s = Math.max(0, Math.floor(seconds));
  const ru = lang === 'ru';
  if (s < 60) return ru ? `${s} с` : `${s}s`;
  const d = Math.floor(s / 86_400);
  const h = Math.floor((s % 86_400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  const parts: string[] = [];
  if (d) parts.push(ru ? `${d} д` : `${d}d`);
  if (d || h) parts.push(ru ? `${h} ч` : `${h}h`);
  parts.push(ru ? `${m} мин` : `${m}m`);
  return parts.join(' ');
}
