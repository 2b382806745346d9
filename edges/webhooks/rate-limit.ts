/*
 * WebhookConfig `rate_limit_per_minute` (SPEC.md), per client address: a sliding window over the
 * last minute's calls. Every call counts, accepted or not, so a sender cannot probe signatures
 * faster by failing. In memory and bounded: a flood of addresses evicts the oldest. Clients are
 * keyed by http/client-address.ts `rateLimitKey`: IPv4 by address, IPv6 by /64.
 */
export const RATE_WINDOW_MS = 60_000;
const MAX_TRACKED_CLIENTS = 10_000;

export class SlidingWindowLimit {
  private readonly calls = new Map<string, number[]>();

  /** `perWindow` is read at every call, so a config reload takes effect at once. */
  constructor(
    private readonly perWindow: () => number,
    private readonly clock: () => number,
  ) {}

  /** Records a call from `client`; false when it is over the limit (and then it is not counted). */
  take(client: string): boolean {
    const now = this.clock();
    const limit = Math.max(1, Math.floor(this.perWindow()));
    const recent = (this.calls.get(client) ?? []).filter((t) => now - t < RATE_WINDOW_MS);
    // Re-inserted last: the map's first key is the client heard from least recently.
    this.calls.delete(client);
    if (recent.length >= limit) {
      this.calls.set(client, recent);
      return false;
    }
    recent.push(now);
    this.calls.set(client, recent);
    if (this.calls.size > MAX_TRACKED_CLIENTS) this.calls.delete(this.calls.keys().next().value!);
    return true;
  }
}
