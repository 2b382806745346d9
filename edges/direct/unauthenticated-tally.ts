/** One summary line per minute at most, however many sockets are refused. */
export const TALLY_PERIOD_MS = 60_000;

/**
 * What is kept of `/ws` connections that never authenticated: counters in memory and a log line
 * per period that had any ("N unauthenticated /ws connections rejected in the last minute (by
 * reason)"). Nothing per connection is written anywhere: a line per socket would let anyone fill
 * the log file as fast as they can connect.
 */
export class UnauthenticatedTally {
  /** Since start, by reason: for /health-style reporting and the benchmark. */
  readonly totals = new Map<string, number>();
  private period = new Map<string, number>();
  private timer: NodeJS.Timeout | null = null;

  constructor(
    /** Only warnings are written; narrower than the hub's log so this file does not import the hub. */
    private readonly log: (level: 'warn', msg: string, fields: Record<string, unknown>) => void,
    private readonly periodMs = TALLY_PERIOD_MS,
  ) {}

  count(reason: string): void {
    this.totals.set(reason, (this.totals.get(reason) ?? 0) + 1);
    this.period.set(reason, (this.period.get(reason) ?? 0) + 1);
    if (this.timer) return;
    this.timer = setTimeout(() => this.flush(), this.periodMs);
    this.timer.unref();
  }

  /** Logs the period's summary, if any, and starts a new period. */
  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.period.size === 0) return;
    const counts = [...this.period].sort(([a], [b]) => a.localeCompare(b));
    this.period = new Map();
    const n = counts.reduce((sum, [, c]) => sum + c, 0);
    const by = counts.map(([reason, c]) => `${reason}: ${c}`).join(', ');
    this.log('warn', `${n} unauthenticated /ws connection(s) rejected in the last ${Math.round(this.periodMs / 1000)} s (${by})`, {
      rejected: Object.fromEntries(counts),
    });
  }
}
