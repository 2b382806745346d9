import type Database from 'better-sqlite3';
import { NOTIFICATION_EVENTS, NOTIFICATION_SEVERITIES, SvcError, type AnyEnvelope, type Notification, type Severity } from '../schemas/index.js';
import type { Projection } from './projection.js';

export interface ListNotificationsQuery {
  /** Default 50 (SPEC.md Limits). */
  limit?: number;
  /** Only notifications whose `read` flag is false (silent ones too, unless `severity` leaves them out). */
  unread_only?: boolean;
  /** Only these severities; absent means all four, silent included. */
  severity?: readonly Severity[];
  /**
   * Only notifications about these agents, or about none (SPEC.md "Agent-scoped access": a user
   * limited to some agents); absent or null: every notification.
   */
  agents?: readonly string[] | null;
}

export const DEFAULT_NOTIFICATION_LIMIT = 50;
export const MAX_NOTIFICATION_LIMIT = 500;

interface Row {
  id: string;
  title: string;
  body: string;
  read: number;
  severity: Severity;
  type: string;
  agent: string | null;
  status: string | null;
  source_id: string | null;
  created_at: string;
}

interface Statements {
  insert: Database.Statement;
  markOne: Database.Statement;
  markMany: Database.Statement;
}

// Prepared once per connection: apply runs inside every append.
const statements = new WeakMap<Database.Database, Statements>();
const queries = new WeakMap<Database.Database, { list: Database.Statement; count: Database.Statement; get: Database.Statement; unreadIds: Database.Statement }>();

const SEVERITY_SET = new Set<string>(NOTIFICATION_SEVERITIES);

function prepared(db: Database.Database): Statements {
  let s = statements.get(db);
  if (!s) {
    s = {
      // First fact wins: a repeated id in an imported log must not rewrite a notification users saw.
      insert: db.prepare(`
        INSERT INTO notifications (id, seq, title, body, read, severity, type, agent, status, source_id, created_at)
        VALUES (?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (id) DO NOTHING`),
      markOne: db.prepare(`UPDATE notifications SET read = 1 WHERE id = ? AND read = 0`),
      markMany: db.prepare(`UPDATE notifications SET read = 1 WHERE read = 0 AND id IN (SELECT value FROM json_each(?))`),
    };
    statements.set(db, s);
  }
  return s;
}

const text = (v: unknown): string | null => (typeof v === 'string' ? v : null);

/**
 * Folds `notification.created`, `notification.read` and `notification.all_read`. An event whose
 * payload lacks what the row needs is skipped rather than thrown on: throwing would roll back the
 * whole append batch, taking unrelated facts with it.
 */
export const notificationsProjection: Projection = {
  name: 'notifications',
  tables: ['notifications'],
  ddl: [
    `CREATE TABLE IF NOT EXISTS notifications (
       id TEXT PRIMARY KEY,
       seq INTEGER NOT NULL UNIQUE,
       title TEXT NOT NULL,
       body TEXT NOT NULL,
       read INTEGER NOT NULL DEFAULT 0,
       severity TEXT NOT NULL,
       type TEXT NOT NULL,
       agent TEXT,
       status TEXT,
       source_id TEXT,
       created_at TEXT NOT NULL
     )`,
    `CREATE INDEX IF NOT EXISTS notifications_unread ON notifications (read, severity)`,
  ],
  apply(db: Database.Database, e: AnyEnvelope): void {
    switch (e.type) {
      case NOTIFICATION_EVENTS.created: {
        const d = e.data;
        const id = text(d.id);
        const severity = text(d.severity);
        if (!id || !severity || !SEVERITY_SET.has(severity)) return;
        prepared(db).insert.run(
          id,
          e.seq,
          text(d.title) ?? '',
          text(d.body) ?? '',
          severity,
          text(d.type) ?? 'system',
          text(d.agent),
          text(d.status),
          text(d.source_id),
          text(d.created_at) ?? e.at,
        );
        return;
      }
      case NOTIFICATION_EVENTS.read: {
        const id = text(e.data.id);
        if (id) prepared(db).markOne.run(id);
        return;
      }
      case NOTIFICATION_EVENTS.all_read: {
        const ids = Array.isArray(e.data.ids) ? e.data.ids.filter((x): x is string => typeof x === 'string') : [];
        if (ids.length > 0) prepared(db).markMany.run(JSON.stringify(ids));
        return;
      }
    }
  },
};

function readQueries(db: Database.Database) {
  let q = queries.get(db);
  if (!q) {
    const cols = `id, title, body, read, severity, type, agent, status, source_id, created_at`;
    q = {
      // One statement for every filter combination: NULL / 0 switch a filter off.
      list: db.prepare(`
        SELECT ${cols} FROM notifications
        WHERE (? = 0 OR read = 0)
          AND (? IS NULL OR severity IN (SELECT value FROM json_each(?)))
          AND (? IS NULL OR agent IS NULL OR agent IN (SELECT value FROM json_each(?)))
        ORDER BY seq DESC
        LIMIT ?`),
      count: db.prepare(`
        SELECT count(*) AS n FROM notifications
        WHERE read = 0 AND severity <> 'silent'
          AND (? IS NULL OR agent IS NULL OR agent IN (SELECT value FROM json_each(?)))`),
      get: db.prepare(`SELECT ${cols} FROM notifications WHERE id = ?`),
      unreadIds: db.prepare(`
        SELECT id FROM notifications
        WHERE read = 0
          AND (? IS NULL OR agent IS NULL OR agent IN (SELECT value FROM json_each(?)))
        ORDER BY seq`),
    };
    queries.set(db, q);
  }
  return q;
}

const toNotification = (r: Row): Notification => ({ ...r, read: r.read !== 0 });

/**
 * Newest first. With no filters the list holds every severity, silent included: SPEC.md has the
 * UI hide silent ones by default behind a toggle, so the API returns what the filters ask and the
 * client decides what to show.
 */
export function listNotifications(db: Database.Database, query: ListNotificationsQuery = {}): Notification[] {
  const limit = query.limit ?? DEFAULT_NOTIFICATION_LIMIT;
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_NOTIFICATION_LIMIT) {
    throw new SvcError('invalid-query', `limit must be an integer from 1 to ${MAX_NOTIFICATION_LIMIT}, got ${String(limit)}`);
  }
  const severities = query.severity;
  if (severities !== undefined) {
    const bad = severities.find((s) => !SEVERITY_SET.has(s));
    if (bad !== undefined) throw new SvcError('invalid-query', `severity ${JSON.stringify(bad)} is not one of ${NOTIFICATION_SEVERITIES.join(', ')}`);
  }
  const sev = severities === undefined ? null : JSON.stringify(severities);
  const agents = query.agents == null ? null : JSON.stringify(query.agents);
  const rows = readQueries(db).list.all(query.unread_only ? 1 : 0, sev, sev, agents, agents, limit) as Row[];
  return rows.map(toNotification);
}

/** The badge: unread and not silent (SPEC.md: silent never counts). */
export function unreadNotificationCount(db: Database.Database, agents: readonly string[] | null = null): number {
  const list = agents === null ? null : JSON.stringify(agents);
  return (readQueries(db).count.get(list, list) as { n: number }).n;
}

export function getNotification(db: Database.Database, id: string): Notification | null {
  const r = readQueries(db).get.get(id) as Row | undefined;
  return r ? toNotification(r) : null;
}

/**
 * Ids whose `read` flag is false, oldest first, silent included: read-all clears them all; `agents`
 * as in the list, so a caller limited to some agents clears only what their list shows.
 */
export function unreadNotificationIds(db: Database.Database, agents: readonly string[] | null = null): string[] {
  const list = agents === null ? null : JSON.stringify(agents);
  return (readQueries(db).unreadIds.all(list, list) as { id: string }[]).map((r) => r.id);
}

/** The read model bound to one connection, for the notifier and the HTTP edge. */
export interface NotificationReadModel {
  list(query?: ListNotificationsQuery): Notification[];
  unreadCount(agents?: readonly string[] | null): number;
  get(id: string): Notification | null;
  unreadIds(agents?: readonly string[] | null): string[];
}

export function notificationReadModel(db: Database.Database): NotificationReadModel {
  return {
    list: (query) => listNotifications(db, query),
    unreadCount: (agents) => unreadNotificationCount(db, agents ?? null),
    get: (id) => getNotification(db, id),
    unreadIds: (agents) => unreadNotificationIds(db, agents ?? null),
  };
}
