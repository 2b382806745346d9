/** Any wait on a peer gives up after this by default: a stuck run fails instead of hanging the bench. */
export const DEADLINE_MS = 60_000;

export function within<T>(p: Promise<T>, what: string, ms = DEADLINE_MS): Promise<T> {
  let timer: NodeJS.Timeout;
  const expired = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`bench: no ${what} within ${ms} ms`)), ms)));
  return Promise.race([p, expired]).finally(() => clearTimeout(timer));
}

export function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? NaN;
}

export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
