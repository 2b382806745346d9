import type { Bus } from '../../bus/index.js';
import type { Envelope, EventType, NewEvent } from '../../schemas/index.js';

/*
 * Group commit for facts that arrive one request at a time. The bus commits what is published in
 * one microtask checkpoint as one transaction, but uWS hands each request to its own callback, so
 * under load every webhook call paid a SQLite commit of its own (13% of the main thread in the
 * bench). Facts published through this wait for the end of the event-loop turn (setImmediate) and
 * are then committed together; each publisher still resolves only once its fact is in the log.
 */
interface Queued {
  event: NewEvent<EventType>;
  resolve: (e: Envelope) => void;
  reject: (e: unknown) => void;
}

export class TurnBatchedFacts {
  private queued: Queued[] = [];

  constructor(private readonly bus: Bus) {}

  publish<T extends EventType>(event: NewEvent<T>): Promise<Envelope<T>> {
    return new Promise<Envelope<T>>((resolve, reject) => {
      this.queued.push({ event: event as NewEvent<EventType>, resolve: resolve as (e: Envelope) => void, reject });
      if (this.queued.length === 1) setImmediate(() => this.commit());
    });
  }

  private commit(): void {
    const batch = this.queued;
    this.queued = [];
    // Published with no await between them: the bus commits them in one transaction.
    for (const q of batch) this.bus.publish(q.event).then(q.resolve, q.reject);
  }
}
