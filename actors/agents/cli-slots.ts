/**
 * The daemon-wide bound on CLI processes running at once, across every agent and chat
 * (`max_concurrent_cli`). A turn past the bound waits in one FIFO queue. Each session key runs one
 * turn at a time and its next message enters the queue only after its previous turn ended, so a
 * busy chat cannot get ahead of the others, and per-session order is untouched.
 */
export interface CliSlot {
  /** True once the turn may start its CLI; false if it was cancelled while waiting. */
  readonly granted: Promise<boolean>;
  /** When the turn had to wait: how many CLIs were running and how many turns were ahead of it. */
  readonly queued: { running: number; ahead: number } | null;
  /** Frees the slot (or leaves the queue); safe to call more than once. */
  release(): void;
  /** Leaves the queue if still waiting (`granted` then says false); a granted slot is left alone. */
  cancel(): void;
}

interface Waiter {
  grant(ok: boolean): void;
}

export class CliSlots {
  private running = 0;
  private readonly waiting: Waiter[] = [];

  /** `bound` is read at every decision, so a hot-reloaded value applies to the next admission. */
  constructor(private readonly bound: () => number) {}

  get runningCount(): number {
    return this.running;
  }

  get waitingCount(): number {
    return this.waiting.length;
  }

  acquire(): CliSlot {
    let state: 'waiting' | 'running' | 'done' = 'waiting';
    let grant!: (ok: boolean) => void;
    const granted = new Promise<boolean>((resolve) => (grant = resolve));
    const waiter: Waiter = {
      grant: (ok) => {
        state = ok ? 'running' : 'done';
        grant(ok);
      },
    };
    const release = () => {
      if (state === 'running') {
        this.running--;
        this.admit();
      } else if (state === 'waiting') {
        this.waiting.splice(this.waiting.indexOf(waiter), 1);
        waiter.grant(false);
      }
      state = 'done';
    };
    const cancel = () => state === 'waiting' && release();
    if (this.waiting.length === 0 && this.running < this.bound()) {
      this.running++;
      waiter.grant(true);
      return { granted, queued: null, release, cancel };
    }
    const queued = { running: this.running, ahead: this.waiting.length };
    this.waiting.push(waiter);
    // A raised bound admits the queue's head without waiting for a running turn to end.
    this.admit();
    return { granted, queued: state === 'waiting' ? queued : null, release, cancel };
  }

  private admit(): void {
    while (this.waiting.length > 0 && this.running < this.bound()) {
      this.running++;
      this.waiting.shift()!.grant(true);
    }
  }
}

/** The `system_status` text a client sees while its turn waits for a CLI slot. */
export function queuedStatus(q: { running: number; ahead: number }): string {
  const ahead = q.ahead === 0 ? '' : `, ${q.ahead} turn${q.ahead === 1 ? '' : 's'} ahead of yours`;
  return `queued: ${q.running} CLI process${q.running === 1 ? ' is' : 'es are'} running (max_concurrent_cli)${ahead}; yours starts when one ends`;
}
