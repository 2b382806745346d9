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
});

export type EventData = { [key: string]: Json };

export interface NewEvent<T extends string = string, D extends EventData = EventData> {
  stream: string;
  type: T;
  data: D;
  causation?: number;
  correlation?: string;
  by?: string;
}

export interface Envelope<T extends string = string, D extends EventData = EventData> extends NewEvent<T, D> {
  seq: number;
  at: string;
}

/** A stream chunk that travels on the bus but is never persisted (text deltas, tool activity, logs). */
export interface Transient<T extends string = string, D = unknown> {
  stream: string;
  type: T;
  data: D;
}
