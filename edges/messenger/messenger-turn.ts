import {
  AGENT_COMMANDS,
  CHAT_DELIVERY_COMMANDS,
  MESSENGER_EVENTS,
  TURN_CHUNKS,
  describeError,
  isSvcError,
  type AgentAsk,
  type ChatButton,
  type MessageEditor,
  type OwedAnswer,
  type Principal,
  type StartEditStream,
  type TurnOutcome,
} from '../../schemas/index.js';
import type { AgentClient, Bus, LogLevel } from '../../bus/index.js';

/*
 * What every messenger does with a message it admitted, whatever its wire (Telegram, Matrix): ask
 * the agent, stream the answer into one message by paced edits, then put the whole answer in its
 * place; and, once it is up, tell each of its chats what a restart cut off.
 */

export type ProgressReaction = '✍' | '👍' | '👎';

/** How one chat shows an answer: the messenger's half of answerInChat. */
export interface AnswerSurface<Id> {
  /** The one message the answer streams into (the first call sends it, later ones edit it); `id` is null until sent. */
  editor: MessageEditor & { id(): Id | null };
  /** Shows the user the agent is at work (a typing notification), where the messenger has one. */
  typing(): void;
  react(emoji: ProgressReaction): void;
  /** The whole answer: the streamed message (when there is one) becomes its first part; files and buttons follow. */
  final(outcome: TurnOutcome, streamed: Id | null): Promise<void>;
  /** Says in the chat why there is no answer (the request was refused or failed). */
  failed(e: unknown): Promise<void>;
}

export interface AnswerInChat<Id> {
  agents: AgentClient;
  ask: AgentAsk;
  /** The id the update was accepted under (`messenger.update_accepted`); the answer is owed until `delivered`. */
  requestId: string;
  /** The answer reached the chat: records it, so a restart does not send it again. */
  delivered(): Promise<void>;
  principal: Principal;
  streams: StartEditStream;
  surface: AnswerSurface<Id>;
  /** The transport stopped meanwhile: its turn was ended by the stop, and the next start says what had arrived. */
  stopped(): boolean;
  /** An answer that could not be sent at all. */
  onError(e: unknown): void;
}

/** Asks the agent and streams its answer; returns at once, so the messenger goes on taking messages while the turn runs. */
export function answerInChat<Id>(o: AnswerInChat<Id>): void {
  const { surface } = o;
  const asked = o.agents.ask(o.ask, o.principal, { requestId: o.requestId });
  const stream = o.streams(surface.editor);
  let soFar = '';
  asked.chunks$.subscribe((chunk) => {
    if (chunk.type !== TURN_CHUNKS.text_delta) return;
    if (soFar === '') surface.react('✍');
    soFar += chunk.data.text;
    stream.update(soFar);
  });
  surface.typing();
  asked.outcome
    .then(
      async (outcome) => {
        const shown = (await stream.finish()).shown;
        if (o.stopped()) return;
        surface.react(outcome.status === 'completed' && !outcome.is_error ? '👍' : '👎');
        await surface.final(outcome, shown !== null ? surface.editor.id() : null);
        await o.delivered();
      },
      async (e: unknown) => {
        await stream.finish();
        if (o.stopped()) return;
        surface.react('👎');
        await surface.failed(e);
      },
    )
    .catch(o.onError);
}

/** How one chat sends the parts of an answer: a new message, or an edit of one sent before. */
export interface AnswerParts<Id, Part> {
  send(part: Part, buttons: readonly ChatButton[]): Promise<unknown>;
  edit(id: Id, part: Part, buttons: readonly ChatButton[]): Promise<void>;
}

/** Sends the parts in order, the buttons under the last. */
export async function sendInOrder<Part>(send: AnswerParts<unknown, Part>['send'], parts: readonly Part[], buttons: readonly ChatButton[]): Promise<void> {
  for (let i = 0; i < parts.length; i++) await send(parts[i]!, i === parts.length - 1 ? buttons : []);
}

/**
 * The whole answer in the chat: the streamed message (when there is one) becomes its first part,
 * the rest follow with the buttons under the last. A preview that can no longer be edited (deleted,
 * too old) gets its part as a new message: the final text is never lost.
 */
export async function placeAnswer<Id, Part>(out: AnswerParts<Id, Part>, parts: readonly Part[], buttons: readonly ChatButton[], streamed: Id | null): Promise<void> {
  if (streamed === null || parts.length === 0) return sendInOrder(out.send, parts, buttons);
  const [first, ...rest] = parts;
  const under = rest.length === 0 ? buttons : [];
  try {
    await out.edit(streamed, first!, under);
  } catch {
    await out.send(first!, under);
  }
  await sendInOrder(out.send, rest, buttons);
}

/** The line under an answer when `scene.technical_footer` is on: model, tokens, cost, time. */
export function technicalFooter(o: TurnOutcome): string {
  if (o.turn_id === null) return '';
  const parts = [o.model, o.usage ? `${o.usage.input_tokens}→${o.usage.output_tokens} tokens` : null, o.cost_usd !== null ? `$${o.cost_usd.toFixed(4)}` : null, o.duration_ms !== null ? `${(o.duration_ms / 1000).toFixed(1)} s` : null];
  return `\n\n_${parts.filter((p) => p !== null).join(' · ')}_`;
}

/** What an answer says when it has no text of its own: nothing when it completed, else why not. */
export function answerText(o: TurnOutcome): string {
  return o.text.trim() !== '' ? o.text : o.status === 'completed' ? '' : `⚠️ ${o.reason ?? o.status}`;
}

/** Records that the answer to an accepted update reached its chat (on the messenger's stream, beside the update). */
export async function answerDelivered(bus: Bus, transport: string, stream: string, requestId: string): Promise<void> {
  await bus.publish({ stream, type: MESSENGER_EVENTS.answer_delivered, data: { transport, request_id: requestId }, by: transport });
}

/**
 * What a restart owes this messenger's chats for `agent`, each said once in its chat (chat.deliver
 * puts it in the admin chat if the chat cannot be told): the answers the agent finished but svc
 * died before sending (`owed`, recorded delivered as each goes), and the answers a restart cut off
 * (the notice is marked taken as it is handed over).
 */
export function handOverAfterRestart(bus: Bus, transport: string, agent: string, log: (level: LogLevel, msg: string) => void, owed: { stream: string; answers: readonly OwedAnswer[] }): void {
  void (async () => {
    for (const a of owed.answers) {
      await bus.send(CHAT_DELIVERY_COMMANDS.deliver, { transport, chat_id: a.chat_id, topic_id: a.topic_id, text: a.text, agent: a.agent, source: 'restart' }, { correlation: a.request_id, by: transport });
      await answerDelivered(bus, transport, owed.stream, a.request_id);
    }
  })().catch((e: unknown) => log('warn', `${transport}: could not send the answers a restart left unsent: ${describeError(e)}`));
  bus
    .send(AGENT_COMMANDS.takeInterrupted, { transport, agent }, { by: transport })
    .then(async (notices) => {
      for (const n of notices) {
        const [, chat, topic] = n.session_key.split(':');
        await bus.send(
          CHAT_DELIVERY_COMMANDS.deliver,
          { transport, chat_id: Number(chat), topic_id: topic === undefined ? null : Number(topic), text: n.text, agent: n.agent, source: 'restart' },
          { correlation: `turn:${n.turn_id}`, by: transport },
        );
      }
    })
    .catch((e: unknown) => {
      // No agent runtime on the bus (a rig with the transport alone) has nothing to hand over.
      if (isSvcError(e) && e.code === 'no-handler') return;
      log('warn', `${transport}: could not hand over the answers a restart cut off: ${describeError(e)}`);
    });
}
