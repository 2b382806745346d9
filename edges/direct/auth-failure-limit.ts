
/**
 * Failed `/ws` authentications per client address. More than `maxFailures` in one window (which
 * starts at an address's first failure) and that address is limited until the window ends: each
 * further failure is answered late (see DirectLimits.authFailureDelayMs), which together with the
 * share of sockets it may keep waiting to authenticate bounds how fast it can guess. The right token is never
 * refused: an attacker sharing an address (every client behind a reverse proxy, every local one on
 * loopback) must not be able to lock the owner out.
 *
 * Memory is bounded: at most `maxAddresses` windows are held and the oldest is forgotten first, so
 * a caller cycling through many addresses cannot grow the table (it can only make us forget, which
 * costs it the same guesses again). Time is passed in, so the rule is tested without a clock.
 *
 * Behind a reverse proxy every client arrives from the proxy's address and shares one window.
 */

export interface AuthFailureRule {
  maxFailures: number;
  windowMs: number;
  maxAddresses: number;
}

interface FailureWindow {
  start: number;
  failures: number;
}

export class AuthFailureLimit {
  /** Insertion order is window start order, so the first key is the oldest window. */
  private readonly windows = new Map<string, FailureWindow>();

  constructor(private readonly rule: AuthFailureRule) {}

  get size(): number {
    return this.windows.size;
  }

  /** Milliseconds the address stays limited; 0 when it is not. */
  limitedForMs(address: string, now: number): number {
    const w = this.current(address, now);
    return w && w.failures > this.rule.maxFailures ? w.start + this.rule.windowMs - now : 0;
  }

  /** Records one failure; returns how long the address is limited from now (0 while under the limit). */
  fail(address: string, now: number): number {
    let w = this.current(address, now);
    if (!w) {
      w = { start: now, failures: 0 };
      this.windows.set(address, w);
      if (this.windows.size > this.rule.maxAddresses) this.windows.delete(this.windows.keys().next().value!);
    }
    w.failures++;
    return this.limitedForMs(address, now);
  }

  /** The address's window if it is still running; an expired one is dropped on sight. */
  private current(address: string, now: number): FailureWindow | undefined {
    const w = this.windows.get(address);
    if (w && now - w.start >= this.rule.windowMs) {
      this.windows.delete(address);
      return undefined;
    }
    return w;
  }
}
