/*
 * The one real clock. Everything that reads the time or sets a timer takes a clock by injection
 * and falls back to this one, so tests drive time with a SimulatedClock instead of sleeping and no
 * module keeps its own idea of "now".
 */

/** Timers in the shape xstate's scheduler takes, so a SimulatedClock fits wherever this does. */
export interface TimerClock {
  setTimeout(fn: (...args: never[]) => void, ms: number): unknown;
  clearTimeout(id: unknown): void;
}

export interface Clock extends TimerClock {
  /** Milliseconds since the epoch. */
  now(): number;
}

/** Wall time and Node's timers. */
export const REAL_CLOCK = {
  now: (): number => Date.now(),
  setTimeout: (fn: () => void, ms: number): NodeJS.Timeout => setTimeout(fn, ms),
  clearTimeout: (id: unknown): void => clearTimeout(id as NodeJS.Timeout),
} satisfies Clock;

/** The real clock whose timers never keep a stopping process alive: for upkeep that may simply not run. */
export const BACKGROUND_CLOCK = {
  ...REAL_CLOCK,
  setTimeout: (fn: () => void, ms: number): NodeJS.Timeout => REAL_CLOCK.setTimeout(fn, ms).unref(),
} satisfies Clock;
