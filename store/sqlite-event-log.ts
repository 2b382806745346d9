import type Database from 'better-sqlite3';
import { createRequire } from 'node:module';
import { closeSync, existsSync, fstatSync, mkdirSync, openSync, readSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { SvcError, type AnyEnvelope, type AnyNewEvent } from '../schemas/index.js';
import type { EventLog, ReadQuery } from './event-log.js';
import { checkBatch, checkEnvelopes, checkQuery, toEnvelope } from './event-validation.js';
import { assertVersions, checkExpected, type ExpectedVersions } from './expected-version.js';
import type { Projection } from './projection.js';
import { WAL_TRUNCATE_BYTES, WalCheckpointer, type WalCheckpointerOptions } from './wal-checkpointer.js';
import { applyProjections, checkProjections, createProjectionTables } from './projection.js';

let driver: typeof Database | undefined;
/**
 * better-sqlite3 is an optional dependency (a native build that may fail): loaded when a log is
 * first opened, so a command that never opens one (`svc doctor`) runs without it and can say so.
 */
function sqliteDriver(): typeof Database {
  return (driver ??= createRequire(import.meta.url)('better-sqlite3') as typeof Database);
}

/** Bump when the events/meta layout changes; opening a newer file with older code is refused. */
export const EVENT_LOG_SCHEMA_VERSION = 2;

/**
 * Version 2 added `v`, the payload's schema version (schemas/event-version.ts). A version-1 file is
 * brought forward on its first writable open; NULL reads as payload version 1, which is what every
 * row it holds was written at.
 */
const MIGRATIONS: Readonly<Record<number, readonly string[]>> = {
  2: [`ALTER TABLE events ADD COLUMN v INTEGER`],
};

/** The log's own tables, exported so tools (and crash tests) can create an identical file. */
export const EVENT_LOG_DDL: readonly string[] = [
  `CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    at TEXT NOT NULL,
    stream TEXT NOT NULL,
    type TEXT NOT NULL,
    data TEXT NOT NULL,
    causation INTEGER,
    correlation TEXT,
    by TEXT,
    v INTEGER
  )`,
  `CREATE INDEX IF NOT EXISTS events_stream ON events (stream, seq)`,
  `CREATE INDEX IF NOT EXISTS events_type ON events (type, seq)`,
];

export interface SqliteEventLogOptions {
  projections?: readonly Projection[];
  /** For readers beside a running daemon (`svc events tail`): no schema writes, no appends. */
  readonly?: boolean;
  /**
   * The daemon's log: checkpoint the WAL on a worker thread instead of inside whichever commit
   * crosses SQLite's threshold (see WalCheckpointer). Call `stopCheckpoints()` before `close()`.
   */
  backgroundCheckpoints?: { onError(message: string): void } & WalCheckpointerOptions;
}

interface EventRow {
  seq: number;
  at: string;
  stream: string;
  type: string;
  data: string;
  causation: number | null;
  correlation: string | null;
  by: string | null;
  v: number | null;
}

const CORRUPT_CODES = new Set(['SQLITE_CORRUPT', 'SQLITE_NOTADB', 'SQLITE_CORRUPT_INDEX', 'SQLITE_CORRUPT_SEQUENCE', 'SQLITE_CORRUPT_VTAB']);

function corrupt(path: string, why: string): SvcError {
  return new SvcError(
    'corrupt-database',
    `${path}: ${why}. It was left untouched: stop svc, move it aside (e.g. mv ${path} ${path}.broken) and start again to begin a new log, or restore it from a backup (sqlite3 "${path}" ".recover" can salvage rows)`,
    { path },
  );
}

function isCorruption(err: unknown): err is Error & { code: string } {
  const code = (err as { code?: unknown } | null)?.code;
  return err instanceof Error && typeof code === 'string' && CORRUPT_CODES.has(code);
}

function hasContent(path: string): boolean {
  try {
    return statSync(path).size > 0;
  } catch {
    return false;
  }
}

/**
 * Cheap structural check before SQLite touches the file: a foreign file or one cut short is
 * reported as such instead of surfacing later as a query error (or being "repaired" by a write).
 */
function checkHeader(path: string): void {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return; // absent: SQLite creates it; unreadable: SQLite reports the permission problem
  }
  try {
    const size = fstatSync(fd).size;
    if (size === 0) return; // a brand-new database before its first write
    const header = Buffer.alloc(100);
    const got = readSync(fd, header, 0, 100, 0);
    if (got < 100 || header.toString('latin1', 0, 16) !== 'SQLite format 3\0') {
      throw corrupt(path, 'is not an SQLite database (wrong or missing header)');
    }
    const rawPageSize = header.readUInt16BE(16);
    const pageSize = rawPageSize === 1 ? 65536 : rawPageSize;
    const pages = header.readUInt32BE(28);
    // The in-header size is only authoritative when its "valid-for" counter matches the change counter,
    // and only at rest: a crash mid-checkpoint leaves page 1 written ahead of the file's growth, and
    // SQLite redoes that checkpoint from the WAL (or hot journal) on open.
    const atRest = !hasContent(`${path}-wal`) && !hasContent(`${path}-journal`);
    if (atRest && header.readUInt32BE(92) === header.readUInt32BE(24) && pages * pageSize > size) {
      throw corrupt(path, `is truncated: its header says ${pages} pages of ${pageSize} bytes but the file has ${size} bytes`);
    }
  } finally {
    closeSync(fd);
  }
}

/**
 * The event log on SQLite. One connection, synchronous appends: each `append` is a single
 * IMMEDIATE transaction that inserts the batch and folds it into every projection.
 */
export class SqliteEventLog implements EventLog {
  readonly path: string;
  readonly readonly: boolean;
  #db: Database.Database | undefined;
  readonly #projections: readonly Projection[];
  readonly #insert: Database.Statement | undefined;
  readonly #insertRaw: Database.Statement | undefined;
  readonly #lastSeq: Database.Statement;
  readonly #version: Database.Statement;
  /** A version-1 file opened read-only has no `v` column: its rows read as payload version 1. */
  readonly #vColumn: string;
  readonly #reads = new Map<string, Database.Statement>();
  readonly #appendTx: ((events: ReturnType<typeof checkBatch>, at: string, expected: ExpectedVersions | undefined) => AnyEnvelope[]) | undefined;
  readonly #appendRawTx: ((envs: ReturnType<typeof checkEnvelopes>) => number) | undefined;

  private constructor(path: string, db: Database.Database, projections: readonly Projection[], readonly: boolean) {
    this.path = path;
    this.#db = db;
    this.#projections = projections;
    this.readonly = readonly;
    this.#lastSeq = db.prepare(`SELECT coalesce(max(seq), 0) AS seq FROM events`);
    const columns = (db.prepare(`PRAGMA table_info(events)`).all() as { name: string }[]).map((c) => c.name);
    this.#vColumn = columns.includes('v') ? 'v' : 'NULL AS v';
    // One seek to the end of the stream's run in the (stream, seq) index.
    this.#version = db.prepare(`SELECT seq FROM events WHERE stream = ? ORDER BY seq DESC LIMIT 1`).pluck();
    if (readonly) return;
    this.#insert = db.prepare(`INSERT INTO events (at, stream, type, data, causation, correlation, by, v) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`);
    this.#insertRaw = db.prepare(`INSERT INTO events (seq, at, stream, type, data, causation, correlation, by, v) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`);
    const appendTx = db.transaction((events: ReturnType<typeof checkBatch>, at: string, expect: ExpectedVersions | undefined): AnyEnvelope[] => {
      // Inside the IMMEDIATE transaction: no other connection can append between check and insert.
      assertVersions(expect, (stream) => this.#versionOf(stream));
      const out: AnyEnvelope[] = [];
      let next = 0;
      for (const e of events) {
        const seq = Number(this.#insert!.run(at, e.stream, e.type, e.dataJson, e.causation ?? null, e.correlation ?? null, e.by ?? null, e.v ?? null).lastInsertRowid);
        // AUTOINCREMENT under an IMMEDIATE transaction is consecutive; check rather than trust.
        if (next !== 0 && seq !== next) throw new SvcError('seq-gap', `${this.path}: seq ${seq} follows ${next - 1} inside one batch`);
        next = seq + 1;
        const env = toEnvelope({ seq, at, stream: e.stream, type: e.type, data: e.dataJson, causation: e.causation, correlation: e.correlation, by: e.by, v: e.v });
        applyProjections(db, this.#projections, env);
        out.push(env);
      }
      return out;
    });
    this.#appendTx = (events, at, expected) => appendTx.immediate(events, at, expected);
    const rawTx = db.transaction((envs: ReturnType<typeof checkEnvelopes>): number => {
      for (const e of envs) {
        this.#insertRaw!.run(e.seq, e.at, e.stream, e.type, e.dataJson, e.causation ?? null, e.correlation ?? null, e.by ?? null, e.v ?? null);
        applyProjections(db, this.#projections, toEnvelope({ ...e, data: e.dataJson }));
      }
      return envs.length;
    });
    this.#appendRawTx = (envs) => rawTx.immediate(envs);
  }

  static open(path: string, opts: SqliteEventLogOptions = {}): SqliteEventLog {
    const readonly = opts.readonly ?? false;
    const projections = opts.projections ?? [];
    checkProjections(projections);
    if (readonly && !existsSync(path)) {
      throw new SvcError('file-missing', `${path}: no event log here; start the daemon once to create it, or point svc_home at the right directory`, { path });
    }
    checkHeader(path);
    if (!readonly) {
      mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
      // Events hold chat text and task output: create the file private before SQLite does (WAL/shm inherit it).
      try {
        closeSync(openSync(path, 'wx', 0o600));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
    }
    let db: Database.Database;
    try {
      db = new (sqliteDriver())(path, { readonly, fileMustExist: true });
    } catch (err) {
      if (isCorruption(err)) throw corrupt(path, err.message);
      throw new SvcError('database-open-failed', `${path}: cannot open the event log: ${(err as Error).message}`, { path });
    }
    try {
      db.pragma('busy_timeout = 5000');
      // Inspect before any pragma that writes (journal_mode rewrites the header): a foreign file stays byte-identical.
      const fresh = SqliteEventLog.#inspect(db, path, readonly);
      if (!readonly) {
        db.pragma('journal_mode = WAL');
        // NORMAL, not FULL: appends run on the event loop, and FULL's fsync per commit turned every
        // disk hiccup into a stall of every socket (190 ms measured under load). In WAL mode NORMAL
        // stays atomic and durable across a process crash (what the crash tests check); only a power
        // loss can drop the last commits, and then the log still never holds half a batch.
        db.pragma('synchronous = NORMAL');
        // When the writer wraps to the start of a fully checkpointed WAL, the file is cut back to this
        // size instead of keeping its high-water mark.
        db.pragma(`journal_size_limit = ${opts.backgroundCheckpoints?.truncateAtBytes ?? WAL_TRUNCATE_BYTES}`);
      }
      db.function('svc_at_ms', { deterministic: true }, (at: unknown) => (typeof at === 'string' ? Date.parse(at) : null));
      if (fresh) {
        db.transaction(() => {
          for (const sql of EVENT_LOG_DDL) db.exec(sql);
          db.prepare(`INSERT INTO meta (key, value) VALUES ('schema_version', ?)`).run(String(EVENT_LOG_SCHEMA_VERSION));
        }).immediate();
      }
      if (!fresh && !readonly) SqliteEventLog.#migrate(db);
      // A projection added since this log was written starts with no tables: it is folded from the whole log once.
      const added = fresh || readonly ? [] : projections.filter((p) => p.tables.some((t) => !db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?`).get(t)));
      if (!readonly) createProjectionTables(db, projections);
      const log = new SqliteEventLog(path, db, projections, readonly);
      if (added.length) {
        db.transaction(() => {
          for (const e of log.read({})) applyProjections(db, added, e);
        })();
      }
      if (!readonly && opts.backgroundCheckpoints) {
        db.pragma('wal_autocheckpoint = 0');
        const { onError, ...checkpoints } = opts.backgroundCheckpoints;
        log.#checkpointer = new WalCheckpointer(path, onError, checkpoints);
      }
      return log;
    } catch (err) {
      db.close();
      if (isCorruption(err)) throw corrupt(path, err.message);
      throw err;
    }
  }

  /** Brings a file written by an older svc to this layout, one version at a time, in one transaction. */
  static #migrate(db: Database.Database): void {
    db.transaction(() => {
      const version = Number((db.prepare(`SELECT value FROM meta WHERE key = 'schema_version'`).get() as { value: string }).value);
      if (version >= EVENT_LOG_SCHEMA_VERSION) return;
      for (let next = version + 1; next <= EVENT_LOG_SCHEMA_VERSION; next++) for (const sql of MIGRATIONS[next] ?? []) db.exec(sql);
      db.prepare(`UPDATE meta SET value = ? WHERE key = 'schema_version'`).run(String(EVENT_LOG_SCHEMA_VERSION));
    }).immediate();
  }

  /** True when the file is a new, empty database the log may initialise. */
  static #inspect(db: Database.Database, path: string, readonly: boolean): boolean {
    const tables = new Set((db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table'`).all() as { name: string }[]).map((r) => r.name));
    if (!tables.has('meta')) {
      if (tables.size > 0) throw corrupt(path, `is an SQLite database but not an svc event log (tables: ${[...tables].join(', ')}; no meta table)`);
      if (readonly) throw corrupt(path, 'is an empty database, not an svc event log');
      return true;
    }
    const row = db.prepare(`SELECT value FROM meta WHERE key = 'schema_version'`).get() as { value: string } | undefined;
    const version = Number(row?.value);
    if (!row || !Number.isSafeInteger(version)) throw corrupt(path, `has no valid schema_version in its meta table (found ${JSON.stringify(row?.value ?? null)})`);
    if (version > EVENT_LOG_SCHEMA_VERSION) {
      throw new SvcError('database-too-new', `${path}: event log schema version ${version} was written by a newer svc (this one knows ${EVENT_LOG_SCHEMA_VERSION}); upgrade svc`, { path, version });
    }
    if (!tables.has('events')) throw corrupt(path, 'has a meta table but no events table');
    // Reading the last seq walks the table's B-tree edge: damage there shows up now, not at the first append.
    db.prepare(`SELECT max(seq) FROM events`).get();
    return false;
  }

  append(events: readonly AnyNewEvent[], at: string, expected?: ExpectedVersions): AnyEnvelope[] {
    const db = this.#open();
    if (!this.#appendTx) throw new SvcError('log-readonly', `${this.path}: opened read-only; only the daemon appends`);
    const checked = checkBatch(events, at);
    const expect = checkExpected(expected);
    // An empty batch with an expectation still answers whether the expectation holds.
    if (checked.length === 0 && !expect) return [];
    return this.#guard(db, () => this.#appendTx!(checked, at, expect));
  }

  version(stream: string): number {
    const db = this.#open();
    return this.#guard(db, () => this.#versionOf(stream));
  }

  #versionOf(stream: string): number {
    return (this.#version.get(stream) as number | undefined) ?? 0;
  }

  /** Imports envelopes as they are (golden logs, replay), keeping seq and at; one transaction. */
  appendRaw(envelopes: readonly AnyEnvelope[]): number {
    const db = this.#open();
    if (!this.#appendRawTx) throw new SvcError('log-readonly', `${this.path}: opened read-only; only the daemon appends`);
    return this.#guard(db, () => {
      // Checked inside the guard so the lastSeq it compares against cannot be stale.
      const checked = checkEnvelopes(envelopes, this.lastSeq());
      return checked.length === 0 ? 0 : this.#appendRawTx!(checked);
    });
  }

  read(query?: ReadQuery): AnyEnvelope[] {
    const db = this.#open();
    const q = checkQuery(query);
    const where: string[] = [];
    const args: unknown[] = [];
    if (q.stream !== undefined) {
      where.push('stream = ?');
      args.push(q.stream);
    }
    if (q.streamPrefix !== undefined) {
      // substr, not LIKE: LIKE folds ASCII case and treats % and _ as wildcards.
      where.push('substr(stream, 1, length(?)) = ?');
      args.push(q.streamPrefix, q.streamPrefix);
      // A byte range the stream index can seek to; the substr test above keeps it exact.
      const last = q.streamPrefix.charCodeAt(q.streamPrefix.length - 1);
      if (last < 0x7f) {
        where.push('stream >= ? AND stream < ?');
        args.push(q.streamPrefix, q.streamPrefix.slice(0, -1) + String.fromCharCode(last + 1));
      }
    }
    if (q.types) {
      where.push(`type IN (${q.types.map(() => '?').join(', ')})`);
      args.push(...q.types);
    }
    if (q.after !== undefined) {
      where.push('seq > ?');
      args.push(q.after);
    }
    if (q.sinceMs !== undefined) {
      where.push('svc_at_ms(at) >= ?');
      args.push(q.sinceMs);
    }
    let sql = `SELECT seq, at, stream, type, data, causation, correlation, by, ${this.#vColumn} FROM events`;
    if (where.length) sql += ` WHERE ${where.join(' AND ')}`;
    sql += ` ORDER BY seq ${q.descending ? 'DESC' : 'ASC'}`;
    if (q.limit !== undefined) {
      sql += ' LIMIT ?';
      args.push(q.limit);
    }
    return this.#guard(db, () => {
      let stmt = this.#reads.get(sql);
      if (!stmt) {
        stmt = db.prepare(sql);
        if (this.#reads.size < 256) this.#reads.set(sql, stmt);
      }
      return (stmt.all(...args) as EventRow[]).map(toEnvelope);
    });
  }

  /** Streams every event in seq order without loading the log into memory (replay, export). */
  *iterate(query: Pick<ReadQuery, 'after'> = {}): IterableIterator<AnyEnvelope> {
    const db = this.#open();
    const q = checkQuery(query);
    const stmt = db.prepare(`SELECT seq, at, stream, type, data, causation, correlation, by, ${this.#vColumn} FROM events WHERE seq > ? ORDER BY seq`);
    for (const row of stmt.iterate(q.after ?? 0) as IterableIterator<EventRow>) yield toEnvelope(row);
  }

  lastSeq(): number {
    const db = this.#open();
    return this.#guard(db, () => (this.#lastSeq.get() as { seq: number }).seq);
  }

  /**
   * The connection, for read-model queries (projection tables). Treat it as read-only: writes
   * outside `append` would break the log/projection agreement `replay --check` verifies.
   */
  projectionDb(): Database.Database {
    return this.#open();
  }

  get projections(): readonly Projection[] {
    return this.#projections;
  }

  /** Checkpoints the WAL into the main file so the log is one self-contained file at rest. */
  #checkpointer: WalCheckpointer | undefined;

  /** Let the background checkpointer finish and release its connection (before `close()`). */
  async stopCheckpoints(): Promise<void> {
    await this.#checkpointer?.stop();
    this.#checkpointer = undefined;
  }

  close(): void {
    const db = this.#db;
    if (!db) return;
    this.#db = undefined;
    try {
      if (!this.readonly) db.pragma('wal_checkpoint(TRUNCATE)');
    } finally {
      db.close();
    }
  }

  #open(): Database.Database {
    if (!this.#db) throw new SvcError('log-closed', `${this.path}: the event log was closed`);
    return this.#db;
  }

  #guard<T>(_db: Database.Database, fn: () => T): T {
    try {
      return fn();
    } catch (err) {
      if (isCorruption(err)) throw corrupt(this.path, err.message);
      if (err instanceof Error && (err as { code?: string }).code === 'SQLITE_BUSY') {
        throw new SvcError('database-busy', `${this.path}: locked by another process for over 5 s; is a second svc writing to it?`, { path: this.path });
      }
      throw err;
    }
  }
}
