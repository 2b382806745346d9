import type { AgentMetrics, MetricsBucket, MetricsPeriod } from '../schemas/index.js';

/*
 * The arithmetic of WIRE.md §2 agent metrics over the turns read model: which window a period is,
 * how its history is bucketed, and how raw sums become the reply. Pure: the time arrives as `nowMs`.
 */

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

export const PERIOD_MS: Record<MetricsPeriod, number> = { '24h': DAY, '7d': 7 * DAY };

/** 24h: 24 hourly buckets; 7d: 7 daily ones (UTC days). The last bucket holds `nowMs`. */
export function historyBuckets(period: MetricsPeriod, nowMs: number): { startMs: number; bucketMs: number; count: number } {
  const bucketMs = period === '24h' ? HOUR : DAY;
  const count = period === '24h' ? 24 : 7;
  return { startMs: Math.floor(nowMs / bucketMs) * bucketMs - (count - 1) * bucketMs, bucketMs, count };
}

export interface TurnSums {
  executions: number;
  errors: number;
  completed: number;
  avg_duration_ms: number;
  tokens: number;
}

const round = (n: number, digits: number) => Math.round(n * 10 ** digits) / 10 ** digits;

export function metricsReply(period: MetricsPeriod, sums: TurnSums, lastActiveMs: number | null): AgentMetrics {
  return {
    total_executions: sums.executions,
    avg_duration_seconds: round(sums.avg_duration_ms / 1000, 2),
    error_count: sums.errors,
    // No turn in the period is no evidence of success: 0, not 100.
    success_rate: sums.executions > 0 ? round((sums.completed / sums.executions) * 100, 1) : 0,
    last_active: lastActiveMs === null ? null : new Date(lastActiveMs).toISOString(),
    tokens_used: sums.tokens,
    period,
  };
}

export function historyReply(buckets: readonly (TurnSums & { start_ms: number })[]): MetricsBucket[] {
  return buckets.map((b) => ({
    timestamp: new Date(b.start_ms).toISOString(),
    executions: b.executions,
    errors: b.errors,
    avg_duration: round(b.avg_duration_ms / 1000, 2),
  }));
}
