import { SvcError } from '../../schemas/index.js';

/** Messages one session key may hold (running + waiting); more are refused, so a flood cannot grow memory. */
export const MAX_QUEUED_PER_SESSION = 32;

interface Waiting<T, O> {
  item: T;
  resolve(o: O): void;
  reject(e: unknown): void;
}

interface Lane<T, O> {
  running: boolean;
  queue: Waiting<T, O>[];
}

/**
 * The one place turns are ordered: one item at a time per session key, different keys in
 * parallel. A lane exists only while it holds work.
 */
export class SessionLanes<T, O> {
  private readonly lanes = new Map<string, Lane<T, O>>();

  constructor(
    private readonly run: (item: T, key: string) => Promise<O>,
    private readonly cap: number = MAX_QUEUED_PER_SESSION,
  ) {}

  /** Queues `item` behind the key's earlier items; throws `session-busy`, queueing nothing, when the lane is full. */
  enqueue(key: string, item: T): Promise<O> {
    let lane = this.lanes.get(key);
    if (!lane) this.lanes.set(key, (lane = { running: false, queue: [] }));
    if (lane.queue.length + (lane.running ? 1 : 0) >= this.cap) {
      throw new SvcError('session-busy', `${this.cap} messages are already waiting in this session; wait for results before sending more`);
    }
    const done = new Promise<O>((resolve, reject) => lane.queue.push({ item, resolve, reject }));
    this.drain(key, lane);
    return done;
  }

  /** Whether the key's lane holds work (running or waiting). */
  busy(key: string): boolean {
    return this.lanes.has(key);
  }

  /** Takes the waiting (not running) items that `match` off every lane, each answered with `answer(item)`. */
  drop(match: (item: T, key: string) => boolean, answer: (item: T) => O): void {
    for (const [key, lane] of this.lanes) {
      const keep: Waiting<T, O>[] = [];
      for (const w of lane.queue) {
        if (match(w.item, key)) w.resolve(answer(w.item));
        else keep.push(w);
      }
      lane.queue = keep;
    }
  }

  /** Fails every waiting item (the running ones end on their own). */
  failAll(error: unknown): void {
    for (const lane of this.lanes.values()) for (const w of lane.queue.splice(0)) w.reject(error);
  }

  private drain(key: string, lane: Lane<T, O>): void {
    if (lane.running) return;
    const next = lane.queue.shift();
    if (!next) {
      this.lanes.delete(key);
      return;
    }
    lane.running = true;
    this.run(next.item, key)
      .then(next.resolve, next.reject)
      .finally(() => {
        lane.running = false;
        this.drain(key, lane);
      });
  }
}
