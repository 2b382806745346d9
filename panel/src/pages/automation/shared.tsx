/*
 * What the cron and webhook pages share: a few formatters. The agent picker they share with the
 * memory, skills and files pages is in ../agent-pick.
 */

/** Seconds as "1.5 s" / "2 min 3 s"; dashes for nothing. */
export function formatSeconds(s: number | null | undefined): string {
  if (s === null || s === undefined || Number.isNaN(s)) return '—';
  if (s < 60) return `${s < 10 ? s.toFixed(1) : Math.round(s)} s`;
  const m = Math.floor(s / 60);
  return `${m} min ${Math.round(s % 60)} s`;
}

export const numberOr = (x: unknown, fallback: number | null = null): number | null => (typeof x === 'number' ? x : fallback);
export const textOr = (x: unknown, fallback = ''): string => (typeof x === 'string' ? x : fallback);

export function statusTone(status: string): 'ok' | 'bad' | 'warn' | 'info' | 'neutral' {
  if (status === 'success' || status === 'completed' || status === 'active' || status === 'valid') return 'ok';
  if (status.startsWith('error') || status === 'failed' || status === 'invalid') return 'bad';
  if (status.startsWith('skipped') || status === 'paused') return 'warn';
  if (status === 'running' || status === 'queued') return 'info';
  return 'neutral';
}
