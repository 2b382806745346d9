import { nextDailyRun, resolveTimezone } from '../../machines/index.js';
import { describeError } from '../../schemas/index.js';
import { BACKGROUND_CLOCK } from '../../bus/index.js';
import type { ActorClock } from '../host/actor-host.js';
import { hostZone } from '../agents/agent-runtime.js';

/*
 * A job run once a day at a local hour (cleanup `check_hour`, memory `check_hour`), on an injected
 * clock so tests move time instead of sleeping. A run the daemon was down for is not caught up:
 * the next one comes at the next hour.
 */

export interface DailyJobDeps {
  clock?: ActorClock;
  now: () => number;
  /** Read at each scheduling, so a hot-reloaded hour or zone applies from the next run on. */
  hour: () => number;
  timeZone: () => string;
  run: (now: number) => Promise<void>;
  onError: (message: string) => void;
}

/** Upkeep must never be what keeps a stopping daemon alive. */
export const UPKEEP_CLOCK: ActorClock = BACKGROUND_CLOCK;

export class DailyJob {
  private timer: unknown = null;
  private stopped = false;
  private running: Promise<void> = Promise.resolve();
  /** When the pending run is due. */
  due: number | null = null;

  constructor(private readonly d: DailyJobDeps) {}

  start(): void {
    this.schedule(this.d.now());
  }

  /** Resolves once the run in progress (if any) has ended and the next one is scheduled (tests wait on this). */
  async idle(): Promise<void> {
    await this.running;
  }

  /** Stops scheduling and waits for a run in progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== null) (this.d.clock ?? UPKEEP_CLOCK).clearTimeout(this.timer as never);
    this.timer = null;
    await this.running;
  }

  private schedule(from: number): void {
    if (this.stopped) return;
    const due = nextDailyRun(from, this.d.hour(), this.d.timeZone());
    this.due = due;
    this.timer = (this.d.clock ?? UPKEEP_CLOCK).setTimeout(() => this.fire(due), Math.max(0, due - this.d.now()));
  }

  private fire(due: number): void {
    this.timer = null;
    this.running = this.d
      .run(this.d.now())
      .catch((e: unknown) => this.d.onError(describeError(e)))
      // From the due instant, not the clock: a timer firing a little early must not run twice.
      .finally(() => this.schedule(Math.max(due, this.d.now())));
  }
}

/** SPEC.md "Model and timezone resolution" for a configured `user_timezone`. */
export function userTimeZone(configured: string, env: NodeJS.ProcessEnv): string {
  return resolveTimezone(configured, env.TZ ?? null, hostZone());
}
