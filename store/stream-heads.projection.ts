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

const reads = new WeakMap<Database.Database, { all: Database.Statement; range: Database.Statement }>();

/**
 * Read side of `streams`, so callers outside store/ never write SQL. A prefix is read as a range of
 * the primary key: the dashboard asks for the `agent:` heads on every summary it computes, and
 * reading every stream the log ever had (one per turn) to keep a handful made that 36% of the
 * daemon's CPU on a 100k-event log (bench/admin.bench.ts).
 */
export function readStreamHeads(db: Database.Database, opts: { prefix?: string } = {}): StreamHead[] {
  let q = reads.get(db);
  if (!q) {
    const cols = `stream, last_seq, last_type, last_at, count FROM stream_heads`;
    q = { all: db.prepare(`SELECT ${cols} ORDER BY stream`), range: db.prepare(`SELECT ${cols} WHERE stream >= ? AND stream < ? ORDER BY stream`) };
    reads.set(db, q);
  }
  const prefix = opts.prefix ?? '';
  const last = prefix.charCodeAt(prefix.length - 1);
  // SQLite orders TEXT by its UTF-8 bytes; with an ASCII last character, "the prefix with that
  // character's successor" bounds exactly the streams that start with it. Anything else: filter.
  if (prefix !== '' && last < 0x7f) return q.range.all(prefix, prefix.slice(0, -1) + String.fromCharCode(last + 1)) as StreamHead[];
  const rows = q.all.all() as StreamHead[];
  return prefix === '' ? rows : rows.filter((r) => r.stream.startsWith(prefix));
}
