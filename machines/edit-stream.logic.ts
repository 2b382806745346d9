import type { StreamingConfig } from '../schemas/index.js';

/*
 * Streaming an answer into a chat by editing one message (Telegram, Matrix): when to send the first
 * preview, when to edit it again, when to give up editing. Pure: time arrives with each event, and
 * the answer is an action the driver (actors/messenger/edit-streamer.ts) carries out and reports
 * back. At most one send or edit is ever in flight, and each carries the latest text, so a fast CLI
 * never queues edits behind each other: the transport's pacing budget (per chat, per bot) only ever
 * sees one request per stream at a time.
 */

export interface EditStreamState {
  /** The answer so far. */
  text: string;
  /** What the message shows now; null until the first preview is sent. */
  shown: string | null;
  inflight: boolean;
  /**
   * When the last send or edit came back. Pacing counts from there, not from its start: a request
   * the transport held in its own queue (grammY's throttler) would otherwise reach Telegram right
   * before the next one.
   */
  lastSentAt: number | null;
  lastDeltaAt: number | null;
  /** Edits that failed in a row. */
  failures: number;
  /** Editing gave up (max_edit_failures), or streaming is off: the final text goes out as new messages. */
  off: boolean;
}

export type EditStreamEvent =
  | { type: 'text'; text: string; at: number }
  | { type: 'sent'; ok: boolean; at: number; text: string }
  | { type: 'edited'; ok: boolean; at: number; text: string };

export type EditStreamAction = { kind: 'send'; text: string } | { kind: 'edit'; text: string } | { kind: 'wait'; until: number } | { kind: 'none' };

export type EditStreamRules = Pick<StreamingConfig, 'enabled' | 'min_chars' | 'idle_ms' | 'edit_interval_seconds' | 'max_edit_failures' | 'sentence_break'>;

export function initialEditStream(rules: Pick<StreamingConfig, 'enabled'>): EditStreamState {
  return { text: '', shown: null, inflight: false, lastSentAt: null, lastDeltaAt: null, failures: 0, off: !rules.enabled };
}

export function evolveEditStream(s: EditStreamState, e: EditStreamEvent, rules: EditStreamRules): EditStreamState {
  switch (e.type) {
    case 'text':
      return { ...s, text: e.text, lastDeltaAt: e.at };
    case 'sent':
      // A first preview that could not be sent is not retried: the final text still goes out whole.
      return e.ok ? { ...s, inflight: false, shown: e.text, failures: 0, lastSentAt: e.at } : { ...s, inflight: false, off: true, lastSentAt: e.at };
    case 'edited': {
      if (e.ok) return { ...s, inflight: false, shown: e.text, failures: 0, lastSentAt: e.at };
      const failures = s.failures + 1;
      return { ...s, inflight: false, failures, off: failures >= Math.max(1, rules.max_edit_failures), lastSentAt: e.at };
    }
  }
}

/** Where a sentence or line ends: an edit there reads well, one mid-word flickers. */
function atBreak(text: string): boolean {
  return /[.!?…:;)\]]["'»”]?\s*$|\n\s*$/.test(text);
}

/** What to do at `now`; the driver marks the request in flight (`started`) before carrying it out. */
export function decideEditStream(s: EditStreamState, now: number, rules: EditStreamRules): EditStreamAction {
  if (s.off || s.inflight || s.text.trim() === '' || s.text === s.shown) return { kind: 'none' };
  const idleAt = (s.lastDeltaAt ?? now) + rules.idle_ms;
  if (s.shown === null) {
    if (s.text.length >= rules.min_chars || now >= idleAt) return { kind: 'send', text: s.text };
    return { kind: 'wait', until: idleAt };
  }
  const paced = (s.lastSentAt ?? now) + rules.edit_interval_seconds * 1000;
  if (now < paced) return { kind: 'wait', until: paced };
  // Waiting for a sentence to end is worth at most one more interval: a CLI that never pauses still shows progress.
  const breakAt = Math.min(idleAt, paced + rules.edit_interval_seconds * 1000);
  if (rules.sentence_break && !atBreak(s.text) && now < breakAt) return { kind: 'wait', until: breakAt };
  return { kind: 'edit', text: s.text };
}

/** The request `decideEditStream` chose has started. */
export function startedEditStream(s: EditStreamState): EditStreamState {
  return { ...s, inflight: true };
}
