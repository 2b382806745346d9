import * as v from 'valibot';
import { typeNames } from './type-names.js';

/** Stream `daemon`: one run of svc from start to stop. */
/** A port the daemon listens on, as `svc status` and the start banner show it. */
export const ListenerSchema = v.object({ surface: v.string(), host: v.string(), port: v.number() });
export type Listener = v.InferOutput<typeof ListenerSchema>;

export const DAEMON_EVENT_SCHEMAS = {
  'daemon.started': v.object({ pid: v.number(), version: v.string(), home: v.string(), node: v.string() }),
  /** The previous run ended without `daemon.stopped`: it crashed or was killed. */
  'daemon.recovered': v.object({ previous_pid: v.number(), previous_started_at: v.string() }),
  /** `listeners`: every port this run serves (absent in logs written before they were recorded). */
  'daemon.ready': v.object({ subsystems: v.array(v.string()), listeners: v.optional(v.array(ListenerSchema)) }),
  'daemon.stopping': v.object({ reason: v.string() }),
  'daemon.stopped': v.object({ reason: v.string() }),
};
export const DAEMON_EVENTS = typeNames(DAEMON_EVENT_SCHEMAS);
