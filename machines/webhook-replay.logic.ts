/*
 * Replay of a signed webhook call (issue 21): a captured GitHub call carries no time at all and a
 * Stripe or Slack one is fresh for minutes, so the signature alone would let anyone who saw a call
 * send it again and run the agent again. A call that authenticated is remembered by what it proved
 * (the digest of its signed bytes, so a change of hex case, encoding or an extra bogus candidate
 * is still the same call) for the hook's replay window; a repeat inside the window is refused.
 * A sender's delivery id (`X-GitHub-Delivery`) is not used: it is not signed, so a replayer can
 * change it freely. Bearer calls are not remembered: the token is the same on every call and binds
 * nothing about one call, so a repeat is indistinguishable from a new call by design.
 */

/** One hook's remembered calls: key → epoch ms until which a repeat is a replay. */
export type RecentCalls = ReadonlyMap<string, number>;

/** Whether a call with `key` was seen within its window. */
export function isReplayed(recent: RecentCalls | undefined, key: string, nowMs: number): boolean {
  const until = recent?.get(key);
  return until !== undefined && nowMs < until;
}

/**
 * How long a verified call must be remembered. A timestamped scheme accepts a signing time up to
 * `maxAgeSeconds` either side of now, so the same call stays acceptable for twice that from its
 * first sighting at the latest; after that its timestamp refuses it anyway. A scheme without a
 * signed time could be replayed for ever: it is remembered for `maxAgeSeconds`, the same window a
 * sender's clock skew is allowed elsewhere.
 */
export function replayWindowMs(scheme: { timestamped: boolean; maxAgeSeconds: number }): number {
  return (scheme.timestamped ? 2 : 1) * scheme.maxAgeSeconds * 1000;
}

/** The remembered keys of one hook after recording `key`: expired ones dropped, the oldest evicted past `cap`. */
export function rememberCall(recent: RecentCalls | undefined, key: string, nowMs: number, windowMs: number, cap: number): Map<string, number> {
  const next = new Map<string, number>();
  for (const [k, until] of recent ?? []) if (until > nowMs && k !== key) next.set(k, until);
  next.set(key, nowMs + windowMs);
  // Insertion order is sighting order: the first keys are the oldest.
  for (const k of next.keys()) {
    if (next.size <= cap) break;
    next.delete(k);
  }
  return next;
}
