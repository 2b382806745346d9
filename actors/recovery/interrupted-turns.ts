import type { Cause } from '../../bus/index.js';
import {
  INTERRUPTED_TURN_RESTORE_TYPES,
  interruptedReplyText,
  interruptedTurnMachine,
  restoreInterruptedTurn,
  traceTurns,
  type InterruptedTurnContext,
} from '../../machines/index.js';
import { TakeInterruptedSchema, parseWith, type InterruptedNotice } from '../../schemas/index.js';
import type { EventLog } from '../../store/index.js';
import type { ActorHost } from '../host/actor-host.js';
import type { InterruptedTurn } from './turn-recovery.js';

const PREFIX = 'interrupted:';

/**
 * What the turns a restart cut off still owe their chats: the notice shown on the chat's next
 * connection, and one `/retry`. Each such turn is an `interruptedTurnMachine` actor on its own
 * stream: those cut by an earlier run come back through `ActorHost.restore` from their facts,
 * those this start's recovery cuts are handed over by `owe`. Each hand-over is a fact, so
 * neither repeats — not on a second connection, not after another restart.
 */
export class InterruptedTurns {
  /** Actor ids in log order: notices are handed out oldest first. */
  private readonly ids: string[] = [];

  constructor(private readonly host: ActorHost) {}

  /** Before recovery: bring back every turn an earlier run cut that still owes its chat something. */
  restore(log: EventLog): void {
    // Only the last cut turn of a chat may be asked again, and that turn may have settled since:
    // whether an older one still owes a /retry depends on other streams, so it is read from the
    // trace of all of them; each actor's own state comes from its stream.
    const { owing } = traceTurns(log.read({ streamPrefix: 'turn:', types: INTERRUPTED_TURN_RESTORE_TYPES }));
    const retried = new Map(owing.map((t) => [t.stream, t.retried]));
    const restored = this.host.restore(
      log,
      {
        streamPrefix: 'turn:',
        types: INTERRUPTED_TURN_RESTORE_TYPES,
        machine: interruptedTurnMachine,
        fold: (events) => {
          const state = restoreInterruptedTurn(events);
          const stream = events[0]!.stream;
          if (!state || !retried.has(stream)) return null;
          return { ...state, context: { ...state.context, retried: retried.get(stream)! } };
        },
      },
      (stream) => PREFIX + stream,
    );
    this.ids.push(...restored);
  }

  /** Recovery hands over each turn it cuts now, oldest first; a newer one supersedes an older one's /retry. */
  owe(turn: InterruptedTurn): void {
    const id = PREFIX + turn.stream;
    if (!turn.retried) for (const other of this.live()) if (this.sameChat(other, turn)) this.host.send(other, { type: 'retry.superseded' });
    const context: InterruptedTurnContext = {
      agent: turn.agent,
      sessionKey: turn.sessionKey,
      prompt: turn.prompt,
      text: turn.text,
      noticeDelivered: turn.noticeDelivered,
      retried: turn.retried,
    };
    this.host.spawn(id, interruptedTurnMachine, { stream: turn.stream, snapshot: interruptedTurnMachine.resolveState({ value: 'owing', context }) });
    this.ids.push(id);
  }

  /** The `agent.take_interrupted` command: every notice the chat has not seen, marked seen. */
  async takeNotices(raw: unknown, cause?: Cause): Promise<InterruptedNotice[]> {
    const q = parseWith(TakeInterruptedSchema, raw, 'invalid-command', 'agent.take_interrupted data');
    const due = this.live().filter((id) => {
      const c = this.context(id)!;
      const chat = q.session_key !== undefined ? c.sessionKey === q.session_key : c.sessionKey.startsWith(`${q.transport}:`);
      return chat && (q.agent === undefined || c.agent === q.agent) && !c.noticeDelivered;
    });
    // Sent before the first await: a second connection asking meanwhile finds them delivered.
    const committed: Promise<void>[] = [];
    const notices = due.map((id) => {
      const c = this.context(id)!;
      committed.push(this.host.sendAndCommit(id, { type: 'notice.take', session_key: c.sessionKey }, cause));
      return { turn_id: id.slice(PREFIX.length + 'turn:'.length), agent: c.agent, session_key: c.sessionKey, text: interruptedReplyText(c.text) };
    });
    await Promise.all(committed);
    return notices;
  }

  /** The prompt of the chat's last interrupted turn, once; null when there is nothing to retry. */
  async takeRetry(agent: string, sessionKey: string, requestId: string, cause?: Cause): Promise<string | null> {
    const last = this.live().findLast((id) => {
      const c = this.context(id)!;
      return c.agent === agent && c.sessionKey === sessionKey && !c.retried;
    });
    if (!last) return null;
    const { prompt } = this.context(last)!;
    await this.host.sendAndCommit(last, { type: 'retry.take', request_id: requestId }, cause);
    return prompt;
  }

  /** Settled actors leave the host; forget them here too. */
  private live(): string[] {
    for (let i = this.ids.length - 1; i >= 0; i--) if (!this.host.get(this.ids[i]!)) this.ids.splice(i, 1);
    return this.ids;
  }

  private context(id: string): InterruptedTurnContext | undefined {
    return this.host.get<typeof interruptedTurnMachine>(id)?.getSnapshot().context;
  }

  private sameChat(id: string, turn: { agent: string; sessionKey: string }): boolean {
    const c = this.context(id);
    return c !== undefined && c.agent === turn.agent && c.sessionKey === turn.sessionKey;
  }
}
