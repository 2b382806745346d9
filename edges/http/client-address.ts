import { isIP } from 'node:net';

/*
 * A client's address, however it is spelled, as one canonical text, and the keys the per-address
 * limits count it under. Every edge that reads, compares or records a client address goes through
 * here: the uWS bindings (the peer), the admin login limit and `api.trusted_proxies` (with
 * `X-Forwarded-For`), the direct `/ws` limits, audit records and the webhook server.
 *
 * uWS writes a peer on a dual-stack listener (`::`) as eight full IPv6 groups, an IPv4 one as
 * `0000:0000:0000:0000:0000:ffff:7f00:0001`; read as text that is an IPv6 address, so without this
 * every IPv4 client would share one IPv6 /64 and a configured IPv4 proxy would never match.
 */

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
 * The canonical text of an address in any spelling uWS, a proxy header or a config file uses:
 * dotted IPv4 for IPv4 and IPv4-mapped IPv6 (`::ffff:10.0.0.1`, `::ffff:a00:1`, the eight full
 * groups uWS writes), RFC 5952's short form for other IPv6 (`::1`, `2001:db8::1`). Surrounding
 * blanks and a pair of brackets are dropped. Null for anything else: a host name, a port, a zone id, a CIDR.
 */
export function parseAddress(text: string): string | null {
  const s = text.trim().toLowerCase().replace(/^\[(.*)\]$/, '$1');
  const kind = isIP(s);
  if (kind === 4) return s;
  const g = kind === 6 ? ipv6Groups(s) : null;
  if (!g) return null;
  return mappedIPv4(g) ?? formatIPv6(g);
}

/** The caller's address as facts and logs show it: `parseAddress`, or 'unknown' when it is no address. */
export function clientAddress(text: string): string {
  return parseAddress(text) ?? 'unknown';
}

/** True when both spell one address (so `::ffff:127.0.0.1` is 127.0.0.1); never for non-addresses. */
export function sameAddress(a: string, b: string): boolean {
  const x = parseAddress(a);
  return x !== null && x === parseAddress(b);
}

/** True when `address` is one of `list` (exact addresses in any spelling; other entries match nothing). */
export function addressIn(address: string, list: readonly string[]): boolean {
  return list.some((entry) => sameAddress(address, entry));
}

/** Any of 127.0.0.0/8 (IPv4-mapped too) or ::1: an address of this machine's loopback. */
export function isLoopback(text: string): boolean {
  const a = parseAddress(text);
  return a !== null && (a === '::1' || (isIP(a) === 4 && a.startsWith('127.')));
}

/** The key every loopback address shares in attemptLimitKey. */
export const LOOPBACK_KEY = 'loopback';

/**
 * Who a per-address limit counts a caller against: an IPv4 client (however uWS spells it) by its
 * address, an IPv6 client by its /64, since one host usually holds a whole /64 and could otherwise
 * send each call from a fresh address. 'unknown' when it is no address.
 */
export function rateLimitKey(text: string): string {
  const address = parseAddress(text);
  if (address === null) return 'unknown';
  if (isIP(address) !== 6) return address;
  const g = ipv6Groups(address)!;
  return `${formatIPv6([...g.slice(0, 4), 0, 0, 0, 0]).replace(/::$/, '')}::/64`;
}

/**
 * The key of a limit on guessing (admin logins, `/ws` authentications): rateLimitKey, except that
 * every loopback address (all of 127.0.0.0/8 and ::1) is the one key LOOPBACK_KEY, deliberately:
 * any local process may bind any of them, so counting them apart would hand it 16 million fresh
 * addresses to guess from.
 */
export function attemptLimitKey(text: string): string {
  return isLoopback(text) ? LOOPBACK_KEY : rateLimitKey(text);
}

/**
 * The client behind a request: the peer, unless the peer is one of `trustedProxies`; then the
 * nearest address in `X-Forwarded-For` (`forwardedFor`, the header's value) that is not itself a
 * trusted proxy. A forwarded-for header from anyone else is ignored, so a client cannot pick the
 * address it is counted and recorded under; a hop that is no address stops the walk at the peer.
 * Canonical text (`parseAddress`); '' when the peer is no address either.
 */
export function forwardedClient(peer: string, forwardedFor: string | undefined, trustedProxies: readonly string[]): string {
  const from = parseAddress(peer) ?? '';
  if (!addressIn(from, trustedProxies)) return from;
  const chain = (forwardedFor ?? '').split(',').filter((hop) => hop.trim() !== '');
  for (let i = chain.length - 1; i >= 0; i--) {
    const hop = parseAddress(chain[i]!);
    if (hop === null) return from;
    if (!addressIn(hop, trustedProxies)) return hop;
  }
  return from;
}
