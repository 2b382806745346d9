import { describeError } from '../schemas/index.js';

/** Ends what a start began. */
export type Stop = () => void | Promise<void>;

/** One part of the daemon: started in list order with what earlier parts left in `ctx`. */
export interface Subsystem<C> {
  readonly name: string;
  /** Returns how to stop it; nothing when the part needs no stopping of its own. */
  start(ctx: C): Stop | void | Promise<Stop | void>;
}

export interface StartedSubsystems {
  /** The subsystems that started, in start order. */
  readonly names: readonly string[];
  /** Stops them in reverse order of start, once; later calls wait for the same stop. */
  stop(): Promise<void>;
}

/** A stop that failed is reported and the next one still runs: one broken part must not leave the rest running. */
export type StopFailure = (name: string, error: unknown) => void;

const reportToStderr: StopFailure = (name, e) => void process.stderr.write(`svc: stopping ${name} failed: ${describeError(e)}\n`);

/**
 * Starts `list` in order. When one fails to start, those already started are stopped in reverse
 * order and the start error is thrown.
 */
export async function startSubsystems<C>(list: readonly Subsystem<C>[], ctx: C, onStopFailure: StopFailure = reportToStderr): Promise<StartedSubsystems> {
  const started: { name: string; stop: Stop | void }[] = [];
  const stopAll = async () => {
    for (const s of started.splice(0).reverse()) {
      try {
        await s.stop?.();
      } catch (e) {
        onStopFailure(s.name, e);
      }
    }
  };
  for (const s of list) {
    let stop: Stop | void;
    try {
      stop = await s.start(ctx);
    } catch (e) {
      await stopAll();
      throw e;
    }
    started.push({ name: s.name, stop });
  }
  const names = started.map((s) => s.name);
  let stopping: Promise<void> | null = null;
  return {
    names,
    stop: () => (stopping ??= stopAll()),
  };
}
