import { isReplayed, rememberCall, type RecentCalls } from '../../machines/index.js';

/*
 * The memory behind webhook replay refusal (machines/webhook-replay.logic.ts decides; this holds
 * what it decides on), organised like the webhook server's rate limit: in memory, bounded, on an
 * injected clock. Per hook at most MAX_CALLS_PER_HOOK calls inside their windows (the oldest is
 * forgotten first; a hook's rate limit keeps honest traffic far below it), and at most MAX_HOOKS
 * hooks (the one heard from least recently is forgotten). Lost on restart: a call captured before
 * a restart can be replayed once within its window after it, which a timestamped scheme bounds.
 */
export const MAX_CALLS_PER_HOOK = 1000;
const MAX_HOOKS = 1000;

export class WebhookReplayMemory {
  private readonly byHook = new Map<string, RecentCalls>();

  constructor(
    private readonly clock: () => number,
    private readonly perHook = MAX_CALLS_PER_HOOK,
  ) {}

  /** False when `key` is a replay for `hook`; else remembers it for `windowMs` and says true. */
  admit(hook: string, key: string, windowMs: number): boolean {
    const now = this.clock();
    const recent = this.byHook.get(hook);
    if (isReplayed(recent, key, now)) return false;
    // Re-inserted last: the map's first key is the hook heard from least recently.
    this.byHook.delete(hook);
    this.byHook.set(hook, rememberCall(recent, key, now, windowMs, this.perHook));
    if (this.byHook.size > MAX_HOOKS) this.byHook.delete(this.byHook.keys().next().value!);
    return true;
  }

  /** Takes back an `admit` whose call was then not accepted: the sender's retry of it is no replay. */
  forget(hook: string, key: string): void {
    const recent = this.byHook.get(hook);
    if (!recent?.has(key)) return;
    const next = new Map(recent);
    next.delete(key);
    this.byHook.set(hook, next);
  }
}
