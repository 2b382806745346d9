import { SvcError, type AnyEnvelope, type AnyNewEvent } from '../schemas/index.js';
import type { EventLog, ReadQuery } from './event-log.js';
import { checkBatch, checkEnvelopes, checkQuery, toEnvelope } from './event-validation.js';
import { assertVersions, checkExpected, type ExpectedVersions } from './expected-version.js';

interface Row {
  seq: number;
  at: string;
  atMs: number;
  stream: string;
  type: string;
  data: string;
  causation: number | undefined;
  correlation: string | undefined;
  by: string | undefined;
  v: number | undefined;
}

/**
 * The in-memory log for tests and tools. Data is kept serialised so callers can neither mutate
 * committed facts nor see anything SQLite would not hand back.
 */
export class MemoryEventLog implements EventLog {
  #rows: Row[] = [];
  /** Stream → seq of its last event: the version `append` checks expectations against. */
  #heads = new Map<string, number>();
  #closed = false;

  append(events: readonly AnyNewEvent[], at: string, expected?: ExpectedVersions): AnyEnvelope[] {
    this.#open();
    const checked = checkBatch(events, at);
    const expect = checkExpected(expected);
    assertVersions(expect, (stream) => this.#heads.get(stream) ?? 0);
    const base = this.lastSeq();
    const rows = checked.map((e, i) => ({ seq: base + 1 + i, at, atMs: Date.parse(at), stream: e.stream, type: e.type, data: e.dataJson, causation: e.causation, correlation: e.correlation, by: e.by, v: e.v }));
    this.#push(rows);
    return rows.map(toEnvelope);
  }

  version(stream: string): number {
    this.#open();
    return this.#heads.get(stream) ?? 0;
  }

  #push(rows: readonly Row[]): void {
    for (const r of rows) {
      this.#rows.push(r);
      this.#heads.set(r.stream, r.seq);
    }
  }

  /** Imports envelopes as they are (golden logs), keeping their seq and at. */
  appendRaw(envelopes: readonly AnyEnvelope[]): number {
    this.#open();
    const checked = checkEnvelopes(envelopes, this.lastSeq());
    this.#push(checked.map((e) => ({ seq: e.seq, at: e.at, atMs: Date.parse(e.at), stream: e.stream, type: e.type, data: e.dataJson, causation: e.causation, correlation: e.correlation, by: e.by, v: e.v })));
    return checked.length;
  }

  read(query?: ReadQuery): AnyEnvelope[] {
    this.#open();
    const q = checkQuery(query);
    const types = q.types ? new Set(q.types) : undefined;
    const match = (r: Row) =>
      (q.stream === undefined || r.stream === q.stream) &&
      (q.streamPrefix === undefined || r.stream.startsWith(q.streamPrefix)) &&
      (types === undefined || types.has(r.type)) &&
      (q.after === undefined || r.seq > q.after) &&
      (q.sinceMs === undefined || r.atMs >= q.sinceMs);
    const out: AnyEnvelope[] = [];
    const limit = q.limit ?? Infinity;
    const n = this.#rows.length;
    for (let k = 0; k < n && out.length < limit; k++) {
      const r = this.#rows[q.descending ? n - 1 - k : k]!;
      if (match(r)) out.push(toEnvelope(r));
    }
    return out;
  }

  lastSeq(): number {
    this.#open();
    return this.#rows.at(-1)?.seq ?? 0;
  }

  close(): void {
    this.#closed = true;
  }

  #open(): void {
    if (this.#closed) throw new SvcError('log-closed', 'the in-memory event log was closed; open a new one');
  }
}
