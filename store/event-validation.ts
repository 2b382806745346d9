import { EnvelopeSchema, NewEventSchema, SvcError, eventVersion, upcastEnvelope, type AnyEnvelope, type AnyNewEvent, type EventData } from '../schemas/index.js';
import type { ReadQuery } from './event-log.js';

/** Cap per event: a payload this big belongs in a file the event points to, not in the log. */
export const MAX_EVENT_DATA_BYTES = 4 * 1024 * 1024;

/** The log's `at` is the injected clock's `toISOString()`: UTC, so text order is time order per format. */
const UTC_ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$/;

export function checkAt(at: unknown, what = 'at'): string {
  if (typeof at !== 'string' || !UTC_ISO.test(at) || Number.isNaN(Date.parse(at))) {
    throw new SvcError('invalid-event', `${what} must be an ISO-8601 UTC timestamp like 2024-05-01T12:00:00.000Z, got ${JSON.stringify(at)}`);
  }
  return at;
}

/**
 * Walks a payload and names the first value JSON would silently change (undefined, NaN, Date, ...),
 * because a replayed log must hand back exactly what was appended.
 */
function jsonSafetyProblem(value: unknown, path: string, seen: Set<object>): string | undefined {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return undefined;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) return `${path} is ${value}, which JSON cannot hold`;
    if (Object.is(value, -0)) return `${path} is -0, which JSON turns into 0`;
    return undefined;
  }
  if (typeof value !== 'object') return `${path} is a ${typeof value}, which is not JSON-safe`;
  if (seen.has(value)) return `${path} is a circular reference`;
  seen.add(value);
  try {
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) {
        const p = jsonSafetyProblem(value[i], `${path}[${i}]`, seen);
        if (p) return p;
      }
      return undefined;
    }
    const proto = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null) {
      return `${path} is a ${proto?.constructor?.name ?? 'non-plain object'}; use plain objects, strings and numbers`;
    }
    for (const [k, v] of Object.entries(value)) {
      const p = jsonSafetyProblem(v, `${path}.${k}`, seen);
      if (p) return p;
    }
    return undefined;
  } finally {
    seen.delete(value);
  }
}

function firstIssue(result: { issues?: readonly { message: string; path?: readonly unknown[] }[] }): string {
  const issue = result.issues?.[0];
  if (!issue) return 'invalid';
  const path = (issue.path ?? [])
    .map((p) => (typeof p === 'object' && p !== null && 'key' in p ? String((p as { key: unknown }).key) : String(p)))
    .join('.');
  return path ? `${path}: ${issue.message}` : issue.message;
}

/** A new event checked and reduced to the envelope's fields, with its data already serialised. */
export interface CheckedEvent {
  stream: string;
  type: string;
  dataJson: string;
  causation: number | undefined;
  correlation: string | undefined;
  by: string | undefined;
  /** Stored only past 1, so a version-1 row is what svc wrote before versions existed. */
  v: number | undefined;
}

/** The version a new fact of `type` is written at, as stored (undefined for 1). */
function storedVersion(type: string): number | undefined {
  const v = eventVersion(type);
  return v === 1 ? undefined : v;
}

function serialiseData(data: unknown, where: string): string {
  if (data === null || typeof data !== 'object' || Array.isArray(data)) {
    throw new SvcError('invalid-event', `${where}: data must be an object, got ${Array.isArray(data) ? 'an array' : data === null ? 'null' : typeof data}`);
  }
  const problem = jsonSafetyProblem(data, 'data', new Set());
  if (problem) throw new SvcError('invalid-event', `${where}: ${problem}`);
  const json = JSON.stringify(data);
  if (Buffer.byteLength(json) > MAX_EVENT_DATA_BYTES) {
    throw new SvcError('event-too-large', `${where}: data is ${Buffer.byteLength(json)} bytes serialised; the limit is ${MAX_EVENT_DATA_BYTES} — store large content in a file and reference it`);
  }
  return json;
}

function checkOptionals(e: { causation?: unknown; correlation?: unknown; by?: unknown }, where: string): void {
  if (e.causation !== undefined && (!Number.isSafeInteger(e.causation) || (e.causation as number) < 1)) {
    throw new SvcError('invalid-event', `${where}: causation must be the seq (positive integer) of the causing event, got ${JSON.stringify(e.causation)}`);
  }
}

/** Validates a whole batch before anything is written, so a bad event leaves the log unchanged. */
export function checkBatch(events: readonly AnyNewEvent[], at: string): CheckedEvent[] {
  if (!Array.isArray(events)) throw new SvcError('invalid-event', `append expects an array of events, got ${typeof events}`);
  checkAt(at);
  return events.map((e, i) => {
    const where = `event #${i} of the batch${e && typeof e === 'object' && typeof e.type === 'string' ? ` (${e.type})` : ''}`;
    const r = NewEventSchema['~standard'].validate(e) as { issues?: readonly { message: string; path?: readonly unknown[] }[] };
    if (r.issues) throw new SvcError('invalid-event', `${where}: ${firstIssue(r)}`);
    checkOptionals(e, where);
    return {
      stream: e.stream,
      type: e.type,
      dataJson: serialiseData(e.data, where),
      causation: e.causation,
      correlation: e.correlation,
      by: e.by,
      v: storedVersion(e.type),
    };
  });
}

/** Imported envelopes (golden logs) keep seq and at; they must be valid and strictly increasing. */
export function checkEnvelopes(envelopes: readonly AnyEnvelope[], lastSeq: number): (CheckedEvent & { seq: number; at: string })[] {
  if (!Array.isArray(envelopes)) throw new SvcError('invalid-event', `appendRaw expects an array of envelopes, got ${typeof envelopes}`);
  let prev = lastSeq;
  return envelopes.map((e, i) => {
    const where = `envelope #${i}${e && typeof e === 'object' && typeof e.seq === 'number' ? ` (seq ${e.seq})` : ''}`;
    const r = EnvelopeSchema['~standard'].validate(e) as { issues?: readonly { message: string; path?: readonly unknown[] }[] };
    if (r.issues) throw new SvcError('invalid-event', `${where}: ${firstIssue(r)}`);
    checkAt(e.at, `${where}: at`);
    checkOptionals(e, where);
    if (e.seq <= prev) {
      throw new SvcError('out-of-order', `${where}: seq ${e.seq} is not after ${prev}; imported envelopes must have strictly increasing seqs above the log's last seq`);
    }
    prev = e.seq;
    return {
      seq: e.seq,
      at: e.at,
      stream: e.stream,
      type: e.type,
      dataJson: serialiseData(e.data, where),
      causation: e.causation,
      correlation: e.correlation,
      by: e.by,
      // An imported envelope keeps the version it was written at: an old one is upcast when read.
      v: e.v,
    };
  });
}

/**
 * Rebuilds an envelope from stored columns; absent optionals stay absent so round trips are exact.
 * An event stored at an older payload version is upcast (schemas/event-version.ts), so every reader
 * sees the current shape; one that cannot be is refused with its stream, seq, type and version.
 */
export function toEnvelope(row: {
  seq: number;
  at: string;
  stream: string;
  type: string;
  data: string;
  causation: number | null | undefined;
  correlation: string | null | undefined;
  by: string | null | undefined;
  v?: number | null | undefined;
}): AnyEnvelope {
  const env: AnyEnvelope = { seq: row.seq, at: row.at, stream: row.stream, type: row.type, data: JSON.parse(row.data) as EventData };
  if (row.causation != null) env.causation = row.causation;
  if (row.correlation != null) env.correlation = row.correlation;
  if (row.by != null) env.by = row.by;
  if (row.v != null) env.v = row.v;
  return upcastEnvelope(env);
}

/** Query checked once so both implementations reject the same bad input the same way. */
export interface CheckedQuery {
  stream: string | undefined;
  streamPrefix: string | undefined;
  types: readonly string[] | undefined;
  after: number | undefined;
  sinceMs: number | undefined;
  limit: number | undefined;
  descending: boolean;
}

export function checkQuery(q: ReadQuery = {}): CheckedQuery {
  if (q === null || typeof q !== 'object') throw new SvcError('invalid-query', `read expects a query object, got ${q === null ? 'null' : typeof q}`);
  const bad = (field: string, want: string, got: unknown): never => {
    throw new SvcError('invalid-query', `read query ${field} must be ${want}, got ${JSON.stringify(got)}`);
  };
  if (q.stream !== undefined && typeof q.stream !== 'string') bad('stream', 'a string', q.stream);
  if (q.streamPrefix !== undefined && typeof q.streamPrefix !== 'string') bad('streamPrefix', 'a string', q.streamPrefix);
  if (q.types !== undefined && (!Array.isArray(q.types) || q.types.some((t) => typeof t !== 'string'))) bad('types', 'an array of strings', q.types);
  if (q.after !== undefined && (!Number.isSafeInteger(q.after) || q.after < 0)) bad('after', 'a non-negative integer seq', q.after);
  if (q.limit !== undefined && (!Number.isSafeInteger(q.limit) || q.limit < 0)) bad('limit', 'a non-negative integer', q.limit);
  if (q.descending !== undefined && typeof q.descending !== 'boolean') bad('descending', 'a boolean', q.descending);
  let sinceMs: number | undefined;
  if (q.since !== undefined) {
    sinceMs = typeof q.since === 'string' ? Date.parse(q.since) : Number.NaN;
    if (Number.isNaN(sinceMs)) bad('since', 'an ISO-8601 time', q.since);
  }
  return {
    stream: q.stream,
    streamPrefix: q.streamPrefix,
    // An empty list means "no type filter": callers build it from optional CLI flags.
    types: q.types && q.types.length > 0 ? q.types : undefined,
    after: q.after,
    sinceMs,
    limit: q.limit,
    descending: q.descending ?? false,
  };
}
