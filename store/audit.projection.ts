import type Database from 'better-sqlite3';
import { AUDIT_EVENTS, type AnyEnvelope, type AuditEntry } from '../schemas/index.js';
import type { Projection } from './projection.js';

/*
 * The audit log (SPEC.md `/api/audit`): one row per `audit.recorded` fact, keyed by its seq, so
 * `svc events replay` rebuilds it exactly.
 */

const inserts = new WeakMap<Database.Database, Database.Statement>();
const lists = new WeakMap<Database.Database, Database.Statement>();

const text = (v: unknown): string | null => (typeof v === 'string' ? v : null);

export const auditProjection: Projection = {
  name: 'audit',
  tables: ['audit_log'],
  ddl: [
    `CREATE TABLE IF NOT EXISTS audit_log (
       seq INTEGER PRIMARY KEY,
       at TEXT NOT NULL,
       actor TEXT,
       action TEXT NOT NULL,
       target TEXT,
       status INTEGER,
       ip TEXT,
       detail TEXT
     )`,
  ],
  apply(db: Database.Database, e: AnyEnvelope): void {
    if (e.type !== AUDIT_EVENTS.recorded) return;
    const d = e.data;
    const action = text(d.action);
    // Skipped, not thrown on: throwing would roll back unrelated facts of the same batch.
    if (action === null) return;
    let stmt = inserts.get(db);
    if (!stmt) {
      stmt = db.prepare(`INSERT OR IGNORE INTO audit_log (seq, at, actor, action, target, status, ip, detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`);
      inserts.set(db, stmt);
    }
    const detail = d.detail !== null && typeof d.detail === 'object' ? JSON.stringify(d.detail) : null;
    stmt.run(e.seq, e.at, text(d.actor), action, text(d.target), typeof d.status === 'number' ? d.status : null, text(d.ip), detail);
  },
};

interface Row {
  seq: number;
  at: string;
  actor: string | null;
  action: string;
  target: string | null;
  status: number | null;
  ip: string | null;
  detail: string | null;
}

/** Newest first. */
export function listAudit(db: Database.Database, limit: number): AuditEntry[] {
  let stmt = lists.get(db);
  if (!stmt) {
    stmt = db.prepare(`SELECT seq, at, actor, action, target, status, ip, detail FROM audit_log ORDER BY seq DESC LIMIT ?`);
    lists.set(db, stmt);
  }
  return (stmt.all(limit) as Row[]).map((r) => ({
    id: r.seq,
    timestamp: r.at,
    actor: r.actor,
    action: r.action,
    target: r.target,
    status: r.status,
    ip: r.ip,
    detail: r.detail === null ? null : (JSON.parse(r.detail) as AuditEntry['detail']),
  }));
}

export interface AuditReadModel {
  list(limit: number): AuditEntry[];
}

export function auditReadModel(db: Database.Database): AuditReadModel {
  return { list: (limit) => listAudit(db, limit) };
}
