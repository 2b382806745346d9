import { MAIN_AGENT, MESSENGER_EVENTS, transportStateStream, type TransportHealth } from '../../schemas/index.js';
import type { Bus, LogLevel } from '../../bus/index.js';

/*
 * A messenger's health and the loop that keeps it up: a start that fails (a bad token, a server out
 * of reach) logs one line per distinct problem, says `retrying` and why, and tries again after a
 * doubling backoff until it runs or is stopped; the daemon never waits on it.
 */

export interface Backoff {
  firstMs: number;
  maxMs: number;
}

export const DEFAULT_BACKOFF: Backoff = { firstMs: 1000, maxMs: 5 * 60_000 };

export class MessengerHealth {
  private state: TransportHealth;

  constructor(
    private readonly bus: Bus,
    private readonly transport: string,
    private readonly agent: string,
  ) {
    this.state = { name: transport, state: 'stopped', detail: 'not started' };
  }

  get(): TransportHealth {
    return { ...this.state };
  }

  /** A new state, recorded when it or its reason changed: `svc status` reads it from the log. */
  set(state: TransportHealth['state'], detail: string): void {
    const changed = state !== this.state.state || detail !== this.state.detail;
    this.state = { name: this.transport, ...(this.agent === MAIN_AGENT ? {} : { agent: this.agent }), state, detail };
    if (!changed) return;
    this.bus
      .publish({ stream: transportStateStream(this.transport, this.agent), type: MESSENGER_EVENTS.state_changed, data: { transport: this.transport, agent: this.agent, state, detail }, by: this.transport })
      .catch(() => undefined);
  }
}

export interface KeepRunning {
  health: MessengerHealth;
  /** What it connects to, for the `starting` detail. */
  target(): string;
  /**
   * One session: connects, calls `running(detail)` once it is up, and settles when the session is
   * over (it resolves when stopped, rejects with why it ended otherwise).
   */
  session(running: (detail: string) => void): Promise<void>;
  /** One phrase for the log and the banner: what is wrong and what to check. */
  problem(e: unknown): string;
  stopped(): boolean;
  log(level: LogLevel, msg: string): void;
  /** The log's name for this messenger and agent: `telegram: ... for main`. */
  label: string;
  backoff: Backoff;
}

export interface Running {
  /** Resolves once the loop has ended (after `wake` on a stop). */
  done: Promise<void>;
  /** Cuts a backoff wait short: the loop checks `stopped()` again at once. */
  wake(): void;
}

/** Runs sessions one after the other until `stopped()`, with the backoff between failed ones. */
export function keepRunning(k: KeepRunning): Running {
  let wake: (() => void) | null = null;
  const loop = async () => {
    let delay = k.backoff.firstMs;
    let lastError = '';
    while (!k.stopped()) {
      // While it retries it stays `retrying` with the reason, rather than flickering through `starting`.
      if (k.health.get().state !== 'retrying') k.health.set('starting', `connecting to ${k.target()}`);
      try {
        await k.session((detail) => {
          k.health.set('running', detail);
          k.log('info', `${k.label}: running ${detail}`);
          delay = k.backoff.firstMs;
          lastError = '';
        });
        if (k.stopped()) break;
        throw new Error('the connection ended');
      } catch (e) {
        if (k.stopped()) break;
        const why = k.problem(e);
        k.health.set('retrying', why);
        // One line per distinct problem, not one per attempt.
        if (why !== lastError) k.log('error', `${k.label}: cannot run: ${why}; retrying with backoff (up to ${k.backoff.maxMs / 1000} s)`);
        lastError = why;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, delay);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        wake = null;
        delay = Math.min(delay * 2, k.backoff.maxMs);
      }
    }
  };
  return { done: loop(), wake: () => wake?.() };
}
