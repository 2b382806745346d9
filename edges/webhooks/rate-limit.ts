import { isIP } from 'node:net';

/*
 * WebhookConfig `rate_limit_per_minute` (SPEC.md), per client address: a sliding window over the
 * last minute's calls. Every call counts, accepted or not, so a sender cannot probe signatures
 * faster by failing. In memory and bounded: a flood of addresses evicts the oldest.
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

/** An IPv6 address as its eight 16-bit groups (`::` expanded, a dotted IPv4 tail read), or null. */
function ipv6Groups(ip: string): number[] | null {
  if (isIP(ip) !== 6 || ip.includes('%')) return null;
  let text = ip;
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4) {
    const [a, b, c, d] = v4[1]!.split('.').map(Number) as [number, number, number, number];
    text = `${text.slice(0, -v4[1]!.length)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail = ''] = text.includes('::') ? text.split('::') : [text, ''];
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups = [...left, ...Array<string>(Math.max(0, 8 - left.length - right.length)).fill('0'), ...right].map((g) => parseInt(g, 16));
  return groups.length === 8 && groups.every((g) => g >= 0 && g <= 0xffff) ? groups : null;
}

/** The IPv4 address an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`, any spelling) stands for, or null. */
function mappedIPv4(g: readonly number[]): string | null {
  if (!g.slice(0, 5).every((x) => x === 0) || g[5] !== 0xffff) return null;
  return [g[6]! >> 8, g[6]! & 0xff, g[7]! >> 8, g[7]! & 0xff].join('.');
}

/** RFC 5952's spelling: lower case, no leading zeros, the longest run of zero groups (two or more) as `::`. */
function formatIPv6(g: readonly number[]): string {
  let best = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    let j = i;
    while (j < 8 && g[j] === 0) j++;
    if (j - i > bestLen) [best, bestLen] = [i, j - i];
    i = j === i ? i + 1 : j;
  }
  const hex = g.map((x) => x.toString(16));
  return best < 0 ? hex.join(':') : `${hex.slice(0, best).join(':')}::${hex.slice(best + bestLen).join(':')}`;
}

/**
 * The caller's address as facts and logs show it. uWS writes a peer on a dual-stack listener as
 * eight full IPv6 groups, an IPv4 one as `0000:0000:0000:0000:0000:ffff:7f00:0001`: that is
 * 127.0.0.1, and other IPv6 addresses are written the short way (`::1`). 'unknown' when it is no address.
 */
export function clientAddress(remote: string): string {
  const s = remote.trim().toLowerCase().replace(/^\[|\]$/g, '');
  const kind = isIP(s);
  if (kind === 4) return s;
  const g = kind === 6 ? ipv6Groups(s) : null;
  if (!g) return 'unknown';
  return mappedIPv4(g) ?? formatIPv6(g);
}

/**
 * Who the webhook rate limit counts a call against: an IPv4 client (however uWS spells it) by its
 * address, an IPv6 client by its /64, since one host usually holds a whole /64 and could otherwise
 * send each call from a fresh address. Callers that reach svc through a local reverse proxy all
 * share the proxy's key.
 */
export function rateLimitKey(remote: string): string {
  const address = clientAddress(remote);
  if (isIP(address) !== 6) return address;
  const g = ipv6Groups(address)!;
  return `${formatIPv6([...g.slice(0, 4), 0, 0, 0, 0]).replace(/::$/, '')}::/64`;
}
