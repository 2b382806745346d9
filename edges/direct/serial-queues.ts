/**
 * One queue per key (a session key): jobs of a key run one at a time, in the order they were added;
 * different keys run side by side. Each key holds at most `cap` jobs (running + waiting), so a client
 * flooding one session cannot grow memory without bound; empty keys are forgotten.
 */
export class SerialQueues {
  private readonly queues = new Map<string, { tail: Promise<void>; size: number }>();

  constructor(private readonly cap: number) {}

  /** False when the key already holds `cap` jobs; the job was not added. */
  tryRun(key: string, job: () => Promise<void>): boolean {
    let q = this.queues.get(key);
    if (!q) this.queues.set(key, (q = { tail: Promise.resolve(), size: 0 }));
    if (q.size >= this.cap) return false;
    const entry = q;
    entry.size++;
    entry.tail = entry.tail
      .then(job)
      .catch(() => undefined)
      .finally(() => {
        entry.size--;
        if (entry.size === 0 && this.queues.get(key) === entry) this.queues.delete(key);
      });
    return true;
  }

  /** Jobs held for a key (running + waiting). */
  size(key: string): number {
    return this.queues.get(key)?.size ?? 0;
  }

  /** Keys with work; 0 when idle. */
  get keys(): number {
    return this.queues.size;
  }
}
