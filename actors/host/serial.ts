/**
 * Runs what it is given one at a time, in the order given, whatever each one's outcome: a handler
 * that reads a read model and then publishes must not interleave with its own next command.
 */
export function serialRunner(): <R>(fn: () => Promise<R>) => Promise<R> {
  let tail: Promise<unknown> = Promise.resolve();
  return (fn) => {
    const run = tail.then(fn, fn);
    tail = run.catch(() => undefined);
    return run;
  };
}
