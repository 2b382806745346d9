import { isIP } from 'node:net';
import type { HttpRequest } from '../http/index.js';

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
    const ip = rateKey(address);
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

/**
 * Who the limit counts: a client on this machine can send from any of 127.0.0.0/8, and an IPv6
 * client usually holds a whole /64, so each of those is one client, not millions.
 */
export function rateKey(address: string): string {
  const ip = normaliseIp(address);
  if (isIP(ip) === 4) return ip.startsWith('127.') ? '127.0.0.0/8' : ip;
  if (isIP(ip) !== 6) return ip;
  const [head = '', tail = ''] = ip.includes('::') ? ip.split('::') : [ip, ''];
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups = [...left, ...Array<string>(Math.max(0, 8 - left.length - right.length)).fill('0'), ...right];
  return `${groups.slice(0, 4).map((g) => parseInt(g, 16).toString(16)).join(':')}::/64`;
}

/** `::ffff:10.0.0.1` and `10.0.0.1` are one client. */
function normaliseIp(ip: string): string {
  const s = ip.trim().toLowerCase().replace(/^\[|\]$/g, '');
  const v4 = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(s);
  return v4 ? v4[1]! : s;
}

/** True when the peer is one of the configured reverse proxies. */
export function fromTrustedProxy(req: Pick<HttpRequest, 'remoteAddress'>, trusted: readonly string[]): boolean {
  return trusted.map(normaliseIp).includes(normaliseIp(req.remoteAddress));
}

/**
 * The client's address: the peer, unless the peer is one of `trusted` proxies; then the nearest
 * address in `X-Forwarded-For` that is not itself a trusted proxy. A forwarded-for header from
 * anyone else is ignored, so a client cannot pick the address its attempts are counted under.
 */
export function clientIp(req: Pick<HttpRequest, 'remoteAddress' | 'headers'>, trusted: readonly string[]): string {
  const peer = normaliseIp(req.remoteAddress);
  const proxies = new Set(trusted.map(normaliseIp));
  if (!proxies.has(peer)) return peer;
  const chain = (req.headers['x-forwarded-for'] ?? '').split(',').map(normaliseIp).filter((a) => a !== '');
  for (let i = chain.length - 1; i >= 0; i--) {
    const hop = chain[i]!;
    if (isIP(hop) === 0) return peer;
    if (!proxies.has(hop)) return hop;
  }
  return peer;
}
