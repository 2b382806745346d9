import { BACKGROUND_CLOCK, type TimerClock } from '../../bus/index.js';
import { countWebhookCall, flushWebhookRecords, patchWebhookRecord, type HomePaths } from '../../store/index.js';
import type { WebhookRecord } from '../../schemas/index.js';

/*
 * When the webhook calls' run fields (trigger_count, last_*) reach webhooks.json. Each call's fact
 * is committed first and answers for it; the file is a copy that follows. So the fields are set in
 * memory, where every reader of webhooks.json through the store sees them at once, and the file is
 * written at most once per FLUSH_DELAY_MS on the injected clock, and at stop: a burst of calls pays
 * one atomic write with its fsyncs, not one per event-loop turn on the request's path. What a crash
 * loses of it the log still holds, and recoverWebhookRunFields puts it back at the next start.
 */

/** How long a call's run fields may wait in memory before webhooks.json is written. */
export const FLUSH_DELAY_MS = 1000;

export interface WebhookRunFieldsSink {
  count(id: string, seen: number, fields: Partial<WebhookRecord>): void;
  patch(id: string, fields: Partial<WebhookRecord>): void;
}

export class WebhookRunFields implements WebhookRunFieldsSink {
  private timer: unknown = null;
  private closed = false;

  constructor(
    private readonly paths: HomePaths,
    private readonly onError: (e: unknown) => void,
    private readonly clock: TimerClock = BACKGROUND_CLOCK,
    private readonly delayMs = FLUSH_DELAY_MS,
  ) {}

  count(id: string, seen: number, fields: Partial<WebhookRecord>): void {
    countWebhookCall(this.paths, id, seen, fields);
    this.schedule();
  }

  patch(id: string, fields: Partial<WebhookRecord>): void {
    patchWebhookRecord(this.paths, id, fields);
    this.schedule();
  }

  /** Writes what is pending now; a failure is reported and the fields stay pending for the next try. */
  flush(): void {
    if (this.timer !== null) this.clock.clearTimeout(this.timer);
    this.timer = null;
    try {
      flushWebhookRecords(this.paths);
    } catch (e) {
      this.onError(e);
    }
  }

  /** At stop: what is pending is written now, and whatever settles later is written at once. */
  close(): void {
    this.closed = true;
    this.flush();
  }

  private schedule(): void {
    if (this.closed) return this.flush();
    if (this.timer === null) this.timer = this.clock.setTimeout(() => this.flush(), this.delayMs);
  }
}

/** For rare writers (a start's recovery): the file is written at once, in the fact's wake. */
export function immediateRunFields(paths: HomePaths): WebhookRunFieldsSink {
  return {
    count: (id, seen, fields) => {
      countWebhookCall(paths, id, seen, fields);
      flushWebhookRecords(paths);
    },
    patch: (id, fields) => {
      patchWebhookRecord(paths, id, fields);
      flushWebhookRecords(paths);
    },
  };
}
