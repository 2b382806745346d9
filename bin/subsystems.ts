import { SvcError, describeError } from '../schemas/index.js';

/*
 * The daemon's parts say what they need and what they provide, by typed key; the start order is
 * computed from that, so a part cannot read something that is not there yet, and a wiring mistake
 * (a need nobody provides, two parts needing each other) stops the start before anything opens.
 */

/** A named thing one part provides and others need; `T` is what it holds. */
export interface Key<T> {
  readonly name: string;
  /** Never set: carries `T` for the type checker. */
  readonly type?: T;
}

export const key = <T>(name: string): Key<T> => ({ name });

/** Ends what a start began. */
export type Stop = () => void | Promise<void>;

type Keys = Record<string, Key<unknown>>;
type Values<K extends Keys> = { [P in keyof K]: K[P] extends Key<infer T> ? T : never };
/** Read when used, not at start: null until the provider has started and again once it stops. */
type Later<K extends Keys> = { [P in keyof K]: K[P] extends Key<infer T> ? () => T | null : never };
/** A part that provides something hands it back from its start; one that provides nothing may hand back its stop. */
type Started<P extends Keys> = [keyof P] extends [never] ? Stop | void : { provide: Values<P>; stop?: Stop };

export interface PartSpec<N extends Keys, L extends Keys, P extends Keys> {
  readonly name: string;
  /** Started before this part; their values are passed to its start. */
  readonly needs?: N;
  /**
   * Read after start, from parts that may start later (a late part that attaches to an early one):
   * no start-order edge, but a provider must exist.
   */
  readonly later?: L;
  readonly provides?: P;
  start(needs: Values<N>, later: Later<L>): Started<P> | Promise<Started<P>>;
}

/** A part with its keys erased, as the ordering and the start see it. */
export interface Part {
  readonly name: string;
  readonly needs: readonly Key<unknown>[];
  readonly later: readonly Key<unknown>[];
  readonly provides: readonly Key<unknown>[];
  start(read: (k: Key<unknown>) => unknown, readLater: (k: Key<unknown>) => unknown): Promise<{ provided: Map<Key<unknown>, unknown>; stop: Stop | undefined }>;
}

export function part<N extends Keys = Record<never, never>, L extends Keys = Record<never, never>, P extends Keys = Record<never, never>>(spec: PartSpec<N, L, P>): Part {
  const needs = spec.needs ?? ({} as N);
  const later = spec.later ?? ({} as L);
  const provides = spec.provides ?? ({} as P);
  return {
    name: spec.name,
    needs: Object.values(needs),
    later: Object.values(later),
    provides: Object.values(provides),
    async start(read, readLater) {
      const values = Object.fromEntries(Object.entries(needs).map(([n, k]) => [n, read(k)])) as Values<N>;
      const lazy = Object.fromEntries(Object.entries(later).map(([n, k]) => [n, () => readLater(k)])) as Later<L>;
      const started = (await spec.start(values, lazy)) as Stop | void | { provide: Record<string, unknown>; stop?: Stop };
      if (typeof started !== 'object') return { provided: new Map(), stop: started ?? undefined };
      const provided = new Map<Key<unknown>, unknown>();
      for (const [n, k] of Object.entries(provides)) {
        if (!(n in started.provide)) throw wiring(`subsystem ${spec.name} started without providing ${k.name}`);
        provided.set(k, started.provide[n]);
      }
      return { provided, stop: started.stop };
    },
  };
}

/** A value the composition root hands in before any part starts (options, paths). */
export interface Seed {
  readonly key: Key<unknown>;
  readonly value: unknown;
}

export const seed = <T>(k: Key<T>, value: T): Seed => ({ key: k, value });

const wiring = (message: string) => new SvcError('subsystem-wiring', message);

/**
 * The start order: every part after the providers of what it needs; among parts free to start,
 * the one listed first. Throws, naming them, when a part needs something no part provides, when
 * two parts provide the same thing, or when needs form a cycle.
 */
export function orderParts(parts: readonly Part[], seeded: readonly Key<unknown>[] = []): Part[] {
  const provider = new Map<Key<unknown>, string>(seeded.map((k) => [k, 'the composition root']));
  for (const p of parts) {
    for (const k of p.provides) {
      const other = provider.get(k);
      if (other) throw wiring(`${k.name} is provided by both ${other} and ${p.name}`);
      provider.set(k, p.name);
    }
  }
  for (const p of parts) {
    for (const k of [...p.needs, ...p.later]) {
      if (!provider.has(k)) throw wiring(`subsystem ${p.name} needs ${k.name}, which no subsystem provides`);
    }
  }
  const ready = new Set<Key<unknown>>(seeded);
  const left = [...parts];
  const order: Part[] = [];
  while (left.length) {
    const i = left.findIndex((p) => p.needs.every((k) => ready.has(k)));
    if (i < 0) throw wiring(`subsystems need each other in a cycle: ${cycleIn(left, provider)}`);
    const [next] = left.splice(i, 1) as [Part];
    order.push(next);
    for (const k of next.provides) ready.add(k);
  }
  return order;
}

/** One cycle among parts none of which can start, as `a needs K from b → …`, back to where it began. */
function cycleIn(stuck: readonly Part[], provider: ReadonlyMap<Key<unknown>, string>): string {
  const byName = new Map(stuck.map((p) => [p.name, p]));
  // Each stuck part waits on at least one other stuck part; following those waits must come back round.
  const path: string[] = [];
  const step = new Map<string, string>();
  let at = stuck[0]!.name;
  while (!path.includes(at)) {
    path.push(at);
    const waitsOn = byName.get(at)!.needs.find((k) => byName.has(provider.get(k)!))!;
    step.set(at, `${at} needs ${waitsOn.name} from`);
    at = provider.get(waitsOn)!;
  }
  return [...path.slice(path.indexOf(at)).map((n) => step.get(n)!), at].join(' ');
}

export interface StartedSubsystems {
  /** The subsystems that started, in start order. */
  readonly names: readonly string[];
  /** What a started part (or the root) provides; throws when nothing does. */
  get<T>(k: Key<T>): T;
  /** Stops them in reverse order of start, once; later calls wait for the same stop. */
  stop(): Promise<void>;
}

/** A stop that failed is reported and the next one still runs: one broken part must not leave the rest running. */
export type StopFailure = (name: string, error: unknown) => void;

const reportToStderr: StopFailure = (name, e) => void process.stderr.write(`svc: stopping ${name} failed: ${describeError(e)}\n`);

/**
 * Orders `parts` (see orderParts: nothing starts when the wiring is wrong) and starts them. When
 * one fails to start, those already started are stopped in reverse order and the start error is
 * thrown. A part's values are withdrawn just before its stop, so a `later` reader sees null from then.
 */
export async function startSubsystems(parts: readonly Part[], seeds: readonly Seed[] = [], onStopFailure: StopFailure = reportToStderr): Promise<StartedSubsystems> {
  const order = orderParts(
    parts,
    seeds.map((s) => s.key),
  );
  const values = new Map<Key<unknown>, unknown>(seeds.map((s) => [s.key, s.value]));
  const started: { part: Part; stop: Stop | undefined }[] = [];
  const stopAll = async () => {
    for (const s of started.splice(0).reverse()) {
      for (const k of s.part.provides) values.delete(k);
      try {
        await s.stop?.();
      } catch (e) {
        onStopFailure(s.part.name, e);
      }
    }
  };
  const read = (k: Key<unknown>) => values.get(k);
  const readLater = (k: Key<unknown>) => values.get(k) ?? null;
  for (const p of order) {
    let result: Awaited<ReturnType<Part['start']>>;
    try {
      result = await p.start(read, readLater);
    } catch (e) {
      await stopAll();
      throw e;
    }
    for (const [k, v] of result.provided) values.set(k, v);
    started.push({ part: p, stop: result.stop });
  }
  const names = started.map((s) => s.part.name);
  let stopping: Promise<void> | null = null;
  return {
    names,
    get<T>(k: Key<T>): T {
      if (!values.has(k)) throw wiring(`nothing running provides ${k.name}`);
      return values.get(k) as T;
    },
    stop: () => (stopping ??= stopAll()),
  };
}
