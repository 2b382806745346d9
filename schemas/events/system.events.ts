import * as v from 'valibot';
import { typeNames } from './type-names.js';

/** Stream `system`: instance-wide settings the admin API changes (WIRE.md §2 instance name). */
export const SYSTEM_EVENT_SCHEMAS = {
  'system.instance_renamed': v.object({ instance_name: v.string(), by: v.nullable(v.string()) }),
};
export const SYSTEM_EVENTS = typeNames(SYSTEM_EVENT_SCHEMAS);
