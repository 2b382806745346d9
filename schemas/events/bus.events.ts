import * as v from 'valibot';
import { typeNames } from './type-names.js';

/** Stream `bus`: the bus's own facts. */
export const BUS_EVENT_SCHEMAS = {
  /** A subscriber threw while handling event `seq` (null when the failure came from a raw observer). */
  'bus.subscriber_failed': v.object({ subscriber: v.string(), seq: v.nullable(v.number()), type: v.nullable(v.string()), error: v.string() }),
};
export const BUS_EVENTS = typeNames(BUS_EVENT_SCHEMAS);
