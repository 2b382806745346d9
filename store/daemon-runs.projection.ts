import type Database from 'better-sqlite3';
import { DAEMON_EVENTS, type AnyEnvelope } from '../schemas/index.js';
import type { Projection } from './projection.js';

/** One row per daemon start: when it became ready, how it ended, whether it followed a crash. */
export const daemonRunsProjection: Projection = {
  name: 'daemon_runs',
  tables: ['daemon_runs'],
  ddl: [
    `CREATE TABLE IF NOT EXISTS daemon_runs (
       started_seq INTEGER PRIMARY KEY,
       pid INTEGER NOT NULL,
       version TEXT NOT NULL,
       started_at TEXT NOT NULL,
       ready_at TEXT,
       stopped_at TEXT,
       stop_reason TEXT,
       after_crash INTEGER NOT NULL DEFAULT 0
     )`,
  ],
  apply(db: Database.Database, e: AnyEnvelope): void {
    if (e.stream !== 'daemon') return;
    switch (e.type) {
      case DAEMON_EVENTS.started:
        db.prepare('INSERT INTO daemon_runs (started_seq, pid, version, started_at) VALUES (?, ?, ?, ?)').run(
          e.seq,
          Number(e.data.pid),
          String(e.data.version),
          e.at,
        );
        break;
      case DAEMON_EVENTS.recovered:
        latest(db, 'after_crash = 1');
        break;
      case DAEMON_EVENTS.ready:
        latest(db, 'ready_at = ?', e.at);
        break;
      case DAEMON_EVENTS.stopped:
        latest(db, 'stopped_at = ?, stop_reason = ?', e.at, String(e.data.reason));
        break;
    }
  },
};

function latest(db: Database.Database, set: string, ...values: unknown[]): void {
  db.prepare(`UPDATE daemon_runs SET ${set} WHERE started_seq = (SELECT MAX(started_seq) FROM daemon_runs)`).run(...values);
}
