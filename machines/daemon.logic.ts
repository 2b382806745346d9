import { DAEMON_EVENTS, type AnyEnvelope } from '../schemas/index.js';

export interface PreviousRun {
  pid: number;
  started_at: string;
  /** False when the log holds no `daemon.stopped` after that start: the process died. */
  clean: boolean;
}

/** What the `daemon` stream says about the last run, or null on the first start of a home. */
export function previousRun(events: readonly AnyEnvelope[]): PreviousRun | null {
  let run = null as PreviousRun | null;
  for (const e of events) {
    if (e.type === DAEMON_EVENTS.started) run = { pid: Number(e.data.pid), started_at: e.at, clean: false };
    else if (e.type === DAEMON_EVENTS.stopped && run) run = { ...run, clean: true };
  }
  return run;
}
