/**
 * An async iterable of lines fed from callbacks (bus subscriptions). Unbounded, because a turn's
 * chunks must not be dropped; `return()` (the client went away) ends it at once, even while a
 * consumer is waiting, and runs `onClose` so the producer's subscription is released.
 */
export class LineQueue implements AsyncIterable<string> {
  private readonly items: string[] = [];
  private ended = false;
  private closed = false;
  private waiter: ((r: IteratorResult<string>) => void) | null = null;

  constructor(private readonly onClose: () => void = () => undefined) {}

  push(value: unknown): void {
    if (this.ended || this.closed) return;
    const line = `${JSON.stringify(value)}\n`;
    const w = this.waiter;
    if (w) {
      this.waiter = null;
      w({ value: line, done: false });
    } else this.items.push(line);
  }

  /** No more lines after those queued. */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    if (this.items.length === 0) this.close();
  }

  private close(): void {
    if (this.closed) return;
    this.closed = true;
    this.items.length = 0;
    const w = this.waiter;
    this.waiter = null;
    w?.({ value: undefined, done: true });
    this.onClose();
  }

  [Symbol.asyncIterator](): AsyncIterator<string> {
    return {
      next: () => {
        const line = this.items.shift();
        if (line !== undefined) {
          if (this.ended && this.items.length === 0) this.close();
          return Promise.resolve({ value: line, done: false });
        }
        if (this.ended || this.closed) {
          this.close();
          return Promise.resolve({ value: undefined, done: true });
        }
        return new Promise((resolve) => (this.waiter = resolve));
      },
      return: () => {
        this.close();
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }
}
