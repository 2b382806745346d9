import type Database from 'better-sqlite3';
import type { AnyEnvelope } from '../schemas/index.js';
import type { Projection } from './projection.js';

export interface StreamHead {
  stream: string;
  last_seq: number;
  last_type: string;
  last_at: string;
  count: number;
}

// Prepared once per connection: apply runs for every appended event.
const upserts = new WeakMap<Database.Database, Database.Statement>();

/** Per stream: its latest event and how many it has — what `svc events` lists and pagers resume from. */
export const streamHeadsProjection: Projection = {
  name: 'streams',
  tables: ['stream_heads'],
  ddl: [
    `CREATE TABLE IF NOT EXISTS stream_heads (
      stream TEXT PRIMARY KEY,
      last_seq INTEGER NOT NULL,
      last_type TEXT NOT NULL,
      last_at TEXT NOT NULL,
      count INTEGER NOT NULL
    )`,
  ],
  apply(db: Database.Database, e: AnyEnvelope): void {
    let stmt = upserts.get(db);
    if (!stmt) {
      stmt = db.prepare(`
        INSERT INTO stream_heads (stream, last_seq, last_type, last_at, count) VALUES (?, ?, ?, ?, 1)
        ON CONFLICT (stream) DO UPDATE SET
          last_seq = excluded.last_seq, last_type = excluded.last_type, last_at = excluded.last_at, count = count + 1`);
      upserts.set(db, stmt);
    }
    stmt.run(e.stream, e.seq, e.type, e.at);
  },
};

/** Read side of `streams`, so callers outside store/ never write SQL. */
export function readStreamHeads(db: Database.Database, opts: { prefix?: string } = {}): StreamHead[] {
  const rows = db.prepare(`SELECT stream, last_seq, last_type, last_at, count FROM stream_heads ORDER BY stream`).all() as StreamHead[];
  return opts.prefix === undefined ? rows : rows.filter((r) => r.stream.startsWith(opts.prefix!));
}
