import * as v from 'valibot';
import { typeNames } from './type-names.js';

/** Stream `proc:<id>`: a process group svc started outside a turn, so a restart can end it. */
export const PROCESS_EVENT_SCHEMAS = {
  'process.spawned': v.object({ purpose: v.string(), pid: v.number(), start_time: v.nullable(v.number()), boot_id: v.nullable(v.string()) }),
  /** `reason` is `exited`, or `daemon-restarted` when a restart found the group and ended it. */
  'process.exited': v.object({ reason: v.string(), ended_processes: v.optional(v.number()) }),
};
export const PROCESS_EVENTS = typeNames(PROCESS_EVENT_SCHEMAS);
