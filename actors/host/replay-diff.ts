/** What a machine hands to `emit(...)`, as a replay collects it. */
export type EmittedFact = { type: string; data?: unknown };

/** Where a re-driven machine and the log part ways. */
export interface ReplayDiff {
  machine: string;
  stream: string;
  /** The fact where the machine and the log first part ways. */
  seq: number | null;
  line: string;
}

/** Key order does not matter: a hand-written golden and the machine may build objects differently. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

export const show = (f: { type: string; data?: unknown }) => `${f.type} ${canonical(f.data ?? {})}`;
