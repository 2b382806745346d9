import { addressIn, forwardedClient, attemptLimitKey, type HttpRequest } from '../http/index.js';

/*
 * SPEC.md "Limits": 5 login attempts per minute per client IP, then 429. A sliding window over the
 * last minute's attempts (every attempt counts, right or wrong, so a client cannot interleave good
 * logins to keep guessing). In memory and bounded: a flood of addresses evicts the oldest.
 */
export const LOGIN_ATTEMPTS_PER_WINDOW = 5;
export const LOGIN_WINDOW_MS = 60_000;
const MAX_TRACKED_IPS = 10_000;

export class LoginRateLimit {
  private readonly attempts = new Map<string, number[]>();

  constructor(private readonly clock: () => number) {}

  /** Records an attempt from `ip`; the milliseconds to wait when it is over the limit, else 0. */
  attempt(address: string): number {
    // Loopback counts as one client, as for `/ws` authentications (attemptLimitKey says why).
    const ip = attemptLimitKey(address);
    const now = this.clock();
    const recent = (this.attempts.get(ip) ?? []).filter((t) => now - t < LOGIN_WINDOW_MS);
    this.attempts.delete(ip);
    if (recent.length >= LOGIN_ATTEMPTS_PER_WINDOW) {
      this.attempts.set(ip, recent);
      return recent[0]! + LOGIN_WINDOW_MS - now;
    }
    recent.push(now);
    this.attempts.set(ip, recent);
    if (this.attempts.size > MAX_TRACKED_IPS) this.attempts.delete(this.attempts.keys().next().value!);
    return 0;
  }
}

/** True when the peer is one of the configured reverse proxies (`api.trusted_proxies`, exact addresses in any spelling). */
export function fromTrustedProxy(req: Pick<HttpRequest, 'remoteAddress'>, trusted: readonly string[]): boolean {
  return addressIn(req.remoteAddress, trusted);
}

/**
 * The client's address (canonical): the peer, unless the peer is one of `trusted` proxies; then
 * the nearest address in `X-Forwarded-For` that is not itself a trusted proxy. A forwarded-for
 * header from anyone else is ignored, so a client cannot pick the address its attempts are counted under.
 */
export function clientIp(req: Pick<HttpRequest, 'remoteAddress' | 'headers'>, trusted: readonly string[]): string {
  return forwardedClient(req.remoteAddress, req.headers['x-forwarded-for'], trusted);
}
