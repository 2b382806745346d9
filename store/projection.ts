import type Database from 'better-sqlite3';
import { SvcError, type AnyEnvelope } from '../schemas/index.js';

/**
 * A read model folded from events, applied inside the append transaction so it can never
 * disagree with the log: if `apply` throws, the whole batch rolls back.
 */
export interface Projection {
  /** e.g. 'streams' */
  name: string;
  /** Tables this projection owns; `svc events replay --check` compares exactly these. */
  tables: string[];
  /** `CREATE TABLE IF NOT EXISTS ...` (and index) statements. */
  ddl: string[];
  /** Must touch nothing but its own tables and depend on nothing but the event and those tables. */
  apply(db: Database.Database, e: AnyEnvelope): void;
}

/** Refuses duplicate names/tables up front: two projections writing one table would corrupt both. */
export function checkProjections(projections: readonly Projection[]): void {
  const names = new Set<string>();
  const owners = new Map<string, string>();
  for (const p of projections) {
    if (!p || typeof p.name !== 'string' || !Array.isArray(p.tables) || !Array.isArray(p.ddl) || typeof p.apply !== 'function') {
      throw new SvcError('invalid-projection', `projection ${JSON.stringify(p?.name)} must have name, tables[], ddl[] and apply()`);
    }
    if (names.has(p.name)) throw new SvcError('invalid-projection', `projection name ${p.name} is used twice`);
    names.add(p.name);
    for (const t of p.tables) {
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(t)) throw new SvcError('invalid-projection', `projection ${p.name}: table name ${JSON.stringify(t)} must be a plain identifier`);
      if (t === 'events' || t === 'meta' || t.startsWith('sqlite_')) throw new SvcError('invalid-projection', `projection ${p.name}: table ${t} belongs to the event log`);
      const owner = owners.get(t);
      if (owner) throw new SvcError('invalid-projection', `table ${t} is claimed by both ${owner} and ${p.name}`);
      owners.set(t, p.name);
    }
  }
}

export function createProjectionTables(db: Database.Database, projections: readonly Projection[]): void {
  checkProjections(projections);
  db.transaction(() => {
    for (const p of projections) for (const sql of p.ddl) db.exec(sql);
  })();
}

/** Applies one event to every projection, naming the projection and event when one fails. */
export function applyProjections(db: Database.Database, projections: readonly Projection[], e: AnyEnvelope): void {
  for (const p of projections) {
    try {
      p.apply(db, e);
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      throw new SvcError('projection-failed', `projection ${p.name} failed on event seq ${e.seq} (${e.type} on ${e.stream}): ${why}`, { projection: p.name, seq: e.seq, cause: why });
    }
  }
}

/**
 * Creates the projections' tables in `db`, empties them and folds `events` into them in one
 * transaction. Returns how many events were applied.
 */
export function rebuildProjections(db: Database.Database, projections: readonly Projection[], events: Iterable<AnyEnvelope>): number {
  createProjectionTables(db, projections);
  let n = 0;
  db.transaction(() => {
    for (const p of projections) for (const t of p.tables) db.exec(`DELETE FROM "${t}"`);
    for (const e of events) {
      applyProjections(db, projections, e);
      n++;
    }
  })();
  return n;
}

export interface TableDiff {
  projection: string;
  table: string;
  /** Total rows that differ (missing + extra + changed), even when `lines` was capped. */
  count: number;
  lines: string[];
}

export const DIFF_LINES_PER_TABLE = 20;

function tableExists(db: Database.Database, table: string): boolean {
  return db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?`).get(table) !== undefined;
}

function columnsOf(db: Database.Database, table: string): { names: string[]; key: string[] } {
  const cols = db.prepare(`SELECT name, pk FROM pragma_table_info(?)`).all(table) as { name: string; pk: number }[];
  const key = cols.filter((c) => c.pk > 0).sort((a, b) => a.pk - b.pk).map((c) => c.name);
  return { names: cols.map((c) => c.name), key };
}

const show = (v: unknown): string => (typeof v === 'bigint' ? v.toString() : Buffer.isBuffer(v) ? `x'${v.toString('hex')}'` : JSON.stringify(v));

/** Ordered full-row dump keyed by the primary key (or the whole row when there is none). */
function dump(db: Database.Database, table: string, names: string[], key: string[]): Map<string, Record<string, unknown>> {
  const order = names.map((_, i) => String(i + 1)).join(', ');
  const rows = db.prepare(`SELECT * FROM "${table}" ORDER BY ${order}`).all() as Record<string, unknown>[];
  const byKey = new Map<string, Record<string, unknown>>();
  const keyCols = key.length > 0 ? key : names;
  for (const row of rows) {
    const base = keyCols.map((c) => `${c}=${show(row[c])}`).join(' ');
    let k = base;
    // Key-less tables may hold identical rows; number the duplicates so counts still compare.
    for (let dup = 2; byKey.has(k); dup++) k = `${base} #${dup}`;
    byKey.set(k, row);
  }
  return byKey;
}

/**
 * Compares the projections' tables in a live database against a scratch one rebuilt from the log.
 * Returns one entry per differing table (empty when they agree); each line names the row and
 * what differs, capped at DIFF_LINES_PER_TABLE lines.
 */
export function diffProjections(liveDb: Database.Database, scratchDb: Database.Database, projections: readonly Projection[]): TableDiff[] {
  const diffs: TableDiff[] = [];
  for (const p of projections) {
    for (const table of p.tables) {
      const lines: string[] = [];
      let count = 0;
      const note = (line: string) => {
        count++;
        if (lines.length < DIFF_LINES_PER_TABLE) lines.push(line);
      };
      const inLive = tableExists(liveDb, table);
      const inScratch = tableExists(scratchDb, table);
      if (!inLive || !inScratch) {
        if (inLive !== inScratch) note(`table ${table} is missing from the ${inLive ? 'rebuilt' : 'live'} database`);
        if (count) diffs.push({ projection: p.name, table, count, lines });
        continue;
      }
      const live = columnsOf(liveDb, table);
      const scratch = columnsOf(scratchDb, table);
      if (live.names.join(',') !== scratch.names.join(',')) {
        note(`columns differ: live (${live.names.join(', ')}) vs rebuilt (${scratch.names.join(', ')})`);
        diffs.push({ projection: p.name, table, count, lines });
        continue;
      }
      const a = dump(liveDb, table, live.names, live.key);
      const b = dump(scratchDb, table, scratch.names, scratch.key);
      for (const [k, expected] of b) {
        const actual = a.get(k);
        if (!actual) {
          note(`missing row ${k}: ${show(expected)}`);
          continue;
        }
        const changed = live.names.filter((c) => show(actual[c]) !== show(expected[c]));
        if (changed.length > 0) note(`changed row ${k}: ${changed.map((c) => `${c} live ${show(actual[c])} rebuilt ${show(expected[c])}`).join('; ')}`);
      }
      for (const [k, extra] of a) if (!b.has(k)) note(`extra row ${k}: ${show(extra)}`);
      if (count > lines.length) lines.push(`... and ${count - lines.length} more`);
      if (count) diffs.push({ projection: p.name, table, count, lines });
    }
  }
  return diffs;
}
