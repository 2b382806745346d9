/*
 * Per-account lockout, on top of SPEC.md's 5 logins per minute per IP (enforced in the edge): an
 * attacker with many addresses still gets LOCK_AFTER guesses per account per LOCK_MS. It applies to
 * any name, existing or not, so a lock says nothing about whether the account exists. In memory: a
 * restart forgets it, which costs an attacker a restart they cannot cause.
 */
export const LOCK_AFTER = 10;
export const LOCK_WINDOW_MS = 15 * 60_000;
export const LOCK_MS = 15 * 60_000;
/** Bounds memory under a spray of made-up names: the oldest entries go first. */
const MAX_TRACKED = 10_000;

export class LoginThrottle {
  private readonly failures = new Map<string, number[]>();

  /** Milliseconds until `username` may try again; 0 when it may now. */
  lockedFor(username: string, now: number): number {
    const recent = this.recent(username, now);
    if (recent.length < LOCK_AFTER) return 0;
    return Math.max(0, recent[recent.length - 1]! + LOCK_MS - now);
  }

  failed(username: string, now: number): void {
    const recent = this.recent(username, now);
    recent.push(now);
    this.failures.delete(username);
    this.failures.set(username, recent.slice(-LOCK_AFTER));
    if (this.failures.size > MAX_TRACKED) this.failures.delete(this.failures.keys().next().value!);
  }

  succeeded(username: string): void {
    this.failures.delete(username);
  }

  private recent(username: string, now: number): number[] {
    // A lock lasts LOCK_MS from the last failure, so failures that old still count toward it.
    return (this.failures.get(username) ?? []).filter((t) => now - t < Math.max(LOCK_WINDOW_MS, LOCK_MS));
  }
}
