import type { Bus } from '../bus/index.js';
import { interruptedReplyText } from '../machines/index.js';
import { TURN_EVENTS, TakeInterruptedSchema, parseWith, type InterruptedNotice } from '../schemas/index.js';
import type { InterruptedTurn } from './turn-recovery.js';

/**
 * What the turns a restart cut off still owe their chats: the notice shown on the chat's next
 * connection, and one `/retry`. Built from recovery's scan of the log; each hand-over is recorded
 * on the turn's stream (`turn.notice_delivered`, `turn.retried`), so neither repeats — not on a
 * second connection, not after another restart.
 */
export class InterruptedTurns {
  private readonly owing: InterruptedTurn[] = [];

  constructor(private readonly bus: Bus) {}

  /** Recovery hands over each turn it finds owing, oldest first; a newer one replaces an older one's /retry. */
  owe(turn: InterruptedTurn): void {
    if (!turn.retried) for (const t of this.owing) if (t.agent === turn.agent && t.sessionKey === turn.sessionKey) t.retried = true;
    this.owing.push({ ...turn });
    this.prune();
  }

  /** The `agent.take_interrupted` command: every notice the chat has not seen, marked seen. */
  async takeNotices(raw: unknown): Promise<InterruptedNotice[]> {
    const { session_key } = parseWith(TakeInterruptedSchema, raw, 'invalid-command', 'agent.take_interrupted data');
    const due = this.owing.filter((t) => t.sessionKey === session_key && !t.noticeDelivered);
    // Marked before the first await: a second connection asking meanwhile gets nothing.
    for (const t of due) t.noticeDelivered = true;
    this.prune();
    await Promise.all(due.map((t) => this.bus.publish({ stream: t.stream, type: TURN_EVENTS.notice_delivered, data: { session_key } })));
    return due.map((t) => ({ turn_id: t.stream.slice('turn:'.length), agent: t.agent, text: interruptedReplyText(t.text) }));
  }

  /** The prompt of the chat's last interrupted turn, once; null when there is nothing to retry. */
  async takeRetry(agent: string, sessionKey: string, requestId: string): Promise<string | null> {
    const last = this.owing.findLast((t) => t.agent === agent && t.sessionKey === sessionKey && !t.retried);
    if (!last) return null;
    last.retried = true;
    this.prune();
    await this.bus.publish({ stream: last.stream, type: TURN_EVENTS.retried, data: { request_id: requestId } });
    return last.prompt;
  }

  private prune(): void {
    for (let i = this.owing.length - 1; i >= 0; i--) {
      const t = this.owing[i]!;
      if (t.noticeDelivered && t.retried) this.owing.splice(i, 1);
    }
  }
}
