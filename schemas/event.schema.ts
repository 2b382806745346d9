import * as v from 'valibot';

/** JSON-safe payload: events are replayed and diffed, so no Date, no undefined, no functions. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

const Name = v.pipe(v.string(), v.regex(/^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$/, 'dot-named, lowercase (e.g. task.created)'));
const Stream = v.pipe(v.string(), v.minLength(1), v.maxLength(200));

/** What a producer hands to `publish`: the bus stamps seq and time. */
export const NewEventSchema = v.object({
  stream: Stream,
  type: Name,
  data: v.record(v.string(), v.unknown()),
  causation: v.optional(v.number()),
  correlation: v.optional(v.string()),
  by: v.optional(v.string()),
});

/** A persisted fact: the row of the event log, in the order it was committed. */
export const EnvelopeSchema = v.object({
  seq: v.pipe(v.number(), v.integer(), v.minValue(1)),
  at: v.pipe(v.string(), v.isoTimestamp()),
  stream: Stream,
  type: Name,
  data: v.record(v.string(), v.unknown()),
  causation: v.optional(v.number()),
  correlation: v.optional(v.string()),
  by: v.optional(v.string()),
  /** The payload's schema version (event-version.ts); absent is 1. */
  v: v.optional(v.pipe(v.number(), v.integer(), v.minValue(2))),
});

export type EventData = { [key: string]: Json };

/** Any event the log may hold, read back without knowing its type: replay, projections, `svc events`. */
export interface AnyNewEvent {
  stream: string;
  type: string;
  data: EventData;
  causation?: number;
  correlation?: string;
  by?: string;
}

export interface AnyEnvelope extends AnyNewEvent {
  seq: number;
  at: string;
  /** The payload's schema version when past 1 (event-version.ts). */
  v?: number;
}
