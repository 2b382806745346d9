import { randomUUID } from 'node:crypto';
import { autoRetry } from '@grammyjs/auto-retry';
import { apiThrottler } from '@grammyjs/transformer-throttler';
import { Api, Bot, GrammyError, InputFile, type Context } from 'grammy';
import { agentsOf, type AgentClient, type Bus, type LogLevel } from '../../bus/index.js';
import {
  CHAT_COMMAND_HELP,
  MESSENGER_EVENTS,
  MULTIAGENT_COMMAND_HELP,
  describeError,
  messengerStream,
  type AgentConfig,
  type ChatAddress,
  type ChatButton,
  type ChatTransport,
  type MessageEditor,
  type OutboundMessage,
  type OwedAnswer,
  type Principal,
  type StartEditStream,
  type TransportHealth,
  type TurnFile,
  type TurnOutcome,
} from '../../schemas/index.js';
import type { UploadDestination } from '../direct/index.js';
import {
  ChatLanes,
  DEFAULT_BACKOFF,
  MessengerHealth,
  answerDelivered,
  answerInChat,
  answerText,
  handOverAfterRestart,
  keepRunning,
  mediaPrompt,
  placeAnswer,
  sendInOrder,
  technicalFooter,
  type Backoff,
  type MessengerMediaDeps,
  type ProgressReaction,
  type Running,
} from '../messenger/index.js';
import { admit } from './telegram-gate.js';
import { downloadMedia, mediaOf } from './telegram-media.js';
import { TELEGRAM_TEXT_LIMIT, splitForTelegram, streamingPreview, type TelegramChunk } from './telegram-format.js';

export const TELEGRAM = 'telegram';

/** Calls that are no message: they never wait behind the per-chat message budget. */
const UNTHROTTLED = new Set(['sendChatAction', 'setMessageReaction', 'answerCallbackQuery', 'getFile', 'getMe', 'getUpdates', 'setMyCommands', 'deleteWebhook']);

/** Who a Telegram sender is to svc: the user record listing the id in `telegram_user_ids`, if any. */
export type TelegramSender = Pick<Principal, 'id' | 'role' | 'allowed_agents'>;

export interface TelegramDeps {
  bus: Bus;
  /** The agent this bot talks to (`main`, or a sub-agent with a bot of its own). */
  agent: string;
  /** The config in force: the token and API root at start; the allow-lists and streaming per message. */
  config(): Pick<AgentConfig, 'telegram_token' | 'telegram_api_root' | 'allowed_user_ids' | 'allowed_group_ids' | 'group_mention_only' | 'streaming' | 'scene'>;
  /** The sender's user record (`telegram_user_ids`), for the role its turns run with; null: none. */
  sender(senderId: number): TelegramSender | null;
  /** How the answer streams into its message (actors/messenger/edit-streamer.ts, paced by StreamingConfig). */
  streams: StartEditStream;
  /** The highest update id this bot accepted before, from the event log: an update at or below it is never run again. */
  acceptedUpTo(botId: number): number;
  /** Answers the agent finished for this bot's chats that svc died before sending (machines/messenger-outbox.logic.ts). */
  owed(botId: number): readonly OwedAnswer[];
  log?: (level: LogLevel, msg: string, fields?: Record<string, unknown>) => void;
  /** Backoff between start attempts after a failure (bad token, server unreachable). */
  retry?: Backoff;
  /** Attachments: where they are saved, and what turns them into something the agent can read. Without it they are refused. */
  media?: MessengerMediaDeps;
}

type Target = { chat_id: number; thread: number | null };

/**
 * The Telegram transport (grammY): long polling, the allow-lists, answers streamed by editing one
 * message and then cut to Telegram's 4096 characters, buttons as inline keyboards, and `deliver` for
 * what svc says outside a turn. Sends go through the throttler (Telegram's per-chat and per-bot
 * limits) and auto-retry (a 429's retry_after, a 5xx, a dropped connection), so no request is lost
 * to a limit and none is sent faster than Telegram allows.
 */
export class TelegramTransport implements ChatTransport {
  readonly name = TELEGRAM;
  private readonly bot: Bot;
  private readonly agents: AgentClient;
  private readonly log: NonNullable<TelegramDeps['log']>;
  private readonly state: MessengerHealth;
  private stopped = false;
  private running: Running | null = null;
  /** Ends the start-up calls in flight when stop() comes. */
  private readonly aborter = new AbortController();
  private highWater = 0;
  private handedOver = false;
  private readonly refusedLogged = new Set<string>();
  private readonly lanes = new ChatLanes((key, e) => this.log('error', `telegram: chat ${key.split(':')[0]}: ${describeError(e)}`));

  constructor(private readonly deps: TelegramDeps) {
    const cfg = deps.config();
    this.log = deps.log ?? ((level, msg, fields) => deps.bus.emitLog(level, msg, fields));
    this.agents = agentsOf(deps.bus);
    this.state = new MessengerHealth(deps.bus, TELEGRAM, deps.agent);
    this.bot = new Bot(cfg.telegram_token, { client: { apiRoot: apiRootOf(cfg) } });
    // Outermost last: a retried request queues in the throttler again, so a 429 storm never bursts.
    // The throttler counts every method with a chat_id against the chat's one-per-second; Telegram's
    // flood limits are about messages, so the typing action and the 👀 reaction skip it instead of
    // taking the slots the first preview needs (bench/telegram.bench.ts showed ~1 s lost).
    const throttled = apiThrottler();
    this.bot.api.config.use((prev, method, payload, signal) => (UNTHROTTLED.has(method) ? prev(method, payload, signal) : throttled(prev, method, payload, signal)));
    this.bot.api.config.use(autoRetry({ maxRetryAttempts: 8, maxDelaySeconds: 300 }));
    // A stop ends every request still waiting out a retry (auto-retry waits minutes on a lost
    // connection), so a stopped bot holds no timer; polling ends through bot.stop() instead.
    this.bot.api.config.use((prev, method, payload, signal) =>
      method === 'getUpdates' ? prev(method, payload, signal) : prev(method, payload, (signal ? AbortSignal.any([signal as AbortSignal, this.aborter.signal]) : this.aborter.signal) as typeof signal),
    );
    this.bot.on('message', (ctx) => this.onMessage(ctx));
    this.bot.on('callback_query:data', (ctx) => this.onButton(ctx));
    // One update that fails to be handled must not stop the bot.
    this.bot.catch((err) => this.log('error', `telegram: update ${err.ctx.update.update_id} failed: ${describeError(err.error)}`));
  }

  health(): TransportHealth {
    return this.state.get();
  }

  reaches(_to: ChatAddress): boolean {
    return this.state.get().state === 'running';
  }

  async deliver(m: OutboundMessage): Promise<void> {
    await this.sendAll({ chat_id: m.chat_id, thread: m.topic_id }, splitForTelegram(m.text), m.buttons ?? []);
  }

  /** Starts polling in the background; a failure to connect is retried with backoff, never thrown. */
  start(): void {
    if (this.running) return;
    this.stopped = false;
    this.running = keepRunning({
      health: this.state,
      target: () => this.deps.config().telegram_api_root,
      session: (running) => this.session(running),
      problem: telegramProblem,
      stopped: () => this.stopped,
      log: this.log,
      label: `telegram bot of ${this.deps.agent}`,
      backoff: this.deps.retry ?? DEFAULT_BACKOFF,
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.running?.wake();
    this.aborter.abort();
    // Not awaited inside a handler (grammY would deadlock), only here, from outside.
    if (this.bot.isRunning()) await this.bot.stop().catch(() => undefined);
    await this.running?.done;
    this.running = null;
    // Answers still running are not waited for (a turn may take minutes): svc's stop ends their
    // turns, and the next start tells each chat what had arrived (handOverAfterRestart).
    this.state.set('stopped', 'stopped');
  }

  /** One polling session: resolves when stopped. */
  private async session(running: (detail: string) => void): Promise<void> {
    // Start-up calls skip auto-retry (which waits out a network failure on its own, for up to an
    // hour): a failure here is the loop's to retry, so the health says `retrying` and why.
    const cfg = this.deps.config();
    const direct = new Api(cfg.telegram_token, { apiRoot: apiRootOf(cfg) });
    // grammY types its signal with the abort-controller polyfill's class; Node's own is what it gets at run time.
    const signal = this.aborter.signal as unknown as Parameters<Api['getMe']>[0];
    const me = await direct.getMe(signal);
    this.bot.botInfo = me;
    this.highWater = this.deps.acceptedUpTo(me.id);
    const commands = [...CHAT_COMMAND_HELP, ...MULTIAGENT_COMMAND_HELP].map((c) => ({ command: c.command.slice(1), description: c.description.slice(0, 256) }));
    await direct.setMyCommands(commands, {}, signal);
    if (this.stopped) return;
    await this.bot.start({
      allowed_updates: ['message', 'callback_query'],
      onStart: () => {
        running(`as @${me.username}`);
        // Owed answers once per start of svc: a later session of this bot may have answers of its own in flight.
        const answers = this.handedOver ? [] : this.deps.owed(me.id);
        this.handedOver = true;
        handOverAfterRestart(this.deps.bus, TELEGRAM, this.deps.agent, this.log, { stream: messengerStream(TELEGRAM, me.id), answers });
      },
    });
  }

  /**
   * Recorded before the agent is asked, with the id the agent will be asked under: an update Telegram
   * hands out again after a crash is recognised and skipped, and its answer is owed until delivered.
   * Null: taken before.
   */
  private async accept(ctx: Context, address: ChatAddress): Promise<string | null> {
    const id = ctx.update.update_id;
    if (id <= this.highWater) return null;
    this.highWater = id;
    const requestId = randomUUID();
    await this.deps.bus.publish({
      stream: messengerStream(TELEGRAM, this.bot.botInfo.id),
      type: MESSENGER_EVENTS.update_accepted,
      data: { transport: TELEGRAM, update_id: id, chat_id: address.chat_id, topic_id: address.topic_id, agent: this.deps.agent, request_id: requestId },
      by: TELEGRAM,
    });
    return requestId;
  }

  private async onMessage(ctx: Context): Promise<void> {
    const msg = ctx.message!;
    const text = msg.text ?? msg.caption ?? '';
    const media = mediaOf(msg);
    if (!msg.from || msg.from.is_bot || (text.trim() === '' && media === null)) return;
    const cfg = this.deps.config();
    const topic = msg.is_topic_message && msg.message_thread_id !== undefined ? msg.message_thread_id : null;
    const admission = admit(
      { chatType: msg.chat.type, chatId: msg.chat.id, senderId: msg.from.id, text, botUsername: this.bot.botInfo.username, repliesToBot: msg.reply_to_message?.from?.id === this.bot.botInfo.id },
      cfg,
    );
    if (!admission.admit) return this.refused(msg.from.id, msg.chat.id, admission.why);
    const address = { chat_id: msg.chat.id, topic_id: topic };
    const requestId = await this.accept(ctx, address);
    if (requestId === null) return;
    const react = this.reactions(msg.chat.id, msg.message_id);
    react('👀');
    const target = { chat_id: msg.chat.id, thread: topic };
    const senderId = msg.from.id;
    const lane = `${target.chat_id}:${target.thread}`;
    if (media === null) return this.lanes.run(lane, async () => this.answer(target, address, senderId, admission.text, react, requestId));
    // Downloads and transcription take a while: polling goes on, and the chat's messages still reach the agent in order.
    this.lanes.run(lane, async () => {
      const cfg = this.deps.config();
      const fileRoot = `${apiRootOf(cfg)}/file/bot${cfg.telegram_token}`;
      const fetched = (destination: UploadDestination) => downloadMedia(this.bot.api, fileRoot, media, destination);
      const prompt = await mediaPrompt(this.deps.media, media, fetched, text.trim() === '' ? '' : admission.text).catch(async (e: unknown) => {
        await this.sendAll(target, splitForTelegram(`⚠️ ${describeError(e)}`), []).catch(() => undefined);
        return null;
      });
      if (prompt !== null) this.answer(target, address, senderId, prompt, react, requestId);
    });
  }

  /** A pressed button says its data as the chat's next message (schemas ChatButton). */
  private async onButton(ctx: Context): Promise<void> {
    const q = ctx.callbackQuery!;
    const chat = q.message?.chat;
    await ctx.answerCallbackQuery().catch(() => undefined);
    if (!chat || q.data === undefined) return;
    const cfg = this.deps.config();
    const admission = admit({ chatType: chat.type, chatId: chat.id, senderId: q.from.id, text: q.data, botUsername: this.bot.botInfo.username, repliesToBot: true }, cfg);
    if (!admission.admit) return this.refused(q.from.id, chat.id, admission.why);
    const thread = q.message && 'is_topic_message' in q.message && q.message.is_topic_message ? (q.message.message_thread_id ?? null) : null;
    const address = { chat_id: chat.id, topic_id: thread };
    const requestId = await this.accept(ctx, address);
    if (requestId === null) return;
    this.answer({ chat_id: chat.id, thread }, address, q.from.id, q.data, () => undefined, requestId);
  }

  /**
   * SPEC.md scene.reaction_style on the user's message: `seen` puts 👀 on it; `detailed` also
   * shows the answer's progress (✍ once it is being written, 👍 when done, 👎 when it failed).
   */
  private reactions(chatId: number, messageId: number): (emoji: '👀' | '✍' | '👍' | '👎') => void {
    return (emoji) => {
      const style = this.deps.config().scene.reaction_style;
      if (style === 'off' || (style === 'seen' && emoji !== '👀')) return;
      this.bot.api.setMessageReaction(chatId, messageId, [{ type: 'emoji', emoji }]).catch(() => undefined);
    };
  }

  private refused(senderId: number, chatId: number, why: string): void {
    const key = `${senderId}:${chatId}`;
    if (this.refusedLogged.has(key) || this.refusedLogged.size > 10_000) return;
    this.refusedLogged.add(key);
    this.log('warn', `telegram: ignored a message from user ${senderId} in chat ${chatId}: ${why} (said once per sender and chat)`);
  }

  /** Asks the agent and streams its answer; returns at once, so polling goes on while the turn runs. */
  private answer(target: Target, address: ChatAddress, senderId: number, text: string, react: (emoji: ProgressReaction) => void, requestId: string): void {
    const who = this.deps.sender(senderId);
    const principal: Principal = {
      kind: 'user',
      id: who?.id ?? null,
      acting_for: null,
      role: who?.role ?? null,
      allowed_agents: who?.allowed_agents ?? [],
      origin: { transport: TELEGRAM, chat_id: address.chat_id, topic_id: address.topic_id },
    };
    answerInChat({
      agents: this.agents,
      ask: { agent: this.deps.agent, transport: TELEGRAM, chat_id: address.chat_id, topic_id: address.topic_id, text, kind: 'foreground' },
      requestId,
      delivered: () => answerDelivered(this.deps.bus, TELEGRAM, messengerStream(TELEGRAM, this.bot.botInfo.id), requestId),
      principal,
      streams: this.deps.streams,
      surface: {
        editor: this.editor(target),
        typing: () => void this.bot.api.sendChatAction(target.chat_id, 'typing', inThread(target)).catch(() => undefined),
        react,
        final: (outcome, streamed) => this.final(target, outcome, streamed),
        failed: (e) => this.sendAll(target, splitForTelegram(`⚠️ ${describeError(e)}`), []),
      },
      stopped: () => this.stopped,
      onError: (e) => this.log('error', `telegram: could not send the answer to chat ${target.chat_id}: ${describeError(e)}`, { chat_id: target.chat_id }),
    });
  }

  /** The one message an answer streams into: sent by the first preview, edited by the later ones. */
  private editor(target: Target): MessageEditor & { id(): number | null } {
    const limit = Math.min(TELEGRAM_TEXT_LIMIT, Math.max(1, this.deps.config().streaming.max_chars));
    let id: number | null = null;
    return {
      id: () => id,
      send: async (text) => {
        id = (await this.sendChunk(target, streamingPreview(text, limit), [])).message_id;
      },
      edit: async (text) => {
        if (id === null) throw new Error('nothing sent yet');
        await this.editChunk(target, id, streamingPreview(text, limit), []);
      },
    };
  }

  /** The answer, whole: the streamed message becomes its first part; the rest, files and buttons follow. */
  private async final(target: Target, outcome: TurnOutcome, streamedId: number | null): Promise<void> {
    const footer = this.deps.config().scene.technical_footer ? technicalFooter(outcome) : '';
    const chunks = splitForTelegram(answerText(outcome) + footer);
    const out = { send: (c: TelegramChunk, b: readonly ChatButton[]) => this.sendChunk(target, c, b), edit: (id: number, c: TelegramChunk, b: readonly ChatButton[]) => this.editChunk(target, id, c, b) };
    await placeAnswer(out, chunks, outcome.buttons ?? [], streamedId);
    for (const f of outcome.files) await this.sendFile(target, f);
  }

  private async sendAll(target: Target, chunks: readonly TelegramChunk[], buttons: readonly ChatButton[]): Promise<void> {
    await sendInOrder((c: TelegramChunk, b: readonly ChatButton[]) => this.sendChunk(target, c, b), chunks, buttons);
  }

  private async sendFile(target: Target, f: TurnFile): Promise<void> {
    const thread = inThread(target);
    const file = new InputFile(f.path, f.name);
    if (f.is_image) await this.bot.api.sendPhoto(target.chat_id, file, thread).catch(() => this.bot.api.sendDocument(target.chat_id, new InputFile(f.path, f.name), thread));
    else await this.bot.api.sendDocument(target.chat_id, file, thread);
  }

  /** HTML first; plain text when Telegram cannot parse it, so formatting never costs a message. */
  private async sendChunk(target: Target, chunk: TelegramChunk, buttons: readonly ChatButton[]) {
    const extra = { ...inThread(target), ...keyboard(buttons), link_preview_options: { is_disabled: true } };
    try {
      return await this.bot.api.sendMessage(target.chat_id, chunk.html, { ...extra, parse_mode: 'HTML' });
    } catch (e) {
      if (!unparsable(e)) throw e;
      return this.bot.api.sendMessage(target.chat_id, chunk.plain, extra);
    }
  }

  private async editChunk(target: Target, id: number, chunk: TelegramChunk, buttons: readonly ChatButton[]): Promise<void> {
    const extra = { ...keyboard(buttons), link_preview_options: { is_disabled: true } };
    try {
      await this.bot.api.editMessageText(target.chat_id, id, chunk.html, { ...extra, parse_mode: 'HTML' });
    } catch (e) {
      if (notModified(e)) return;
      if (!unparsable(e)) throw e;
      await this.bot.api.editMessageText(target.chat_id, id, chunk.plain, extra).catch((e2) => {
        if (!notModified(e2)) throw e2;
      });
    }
  }
}

/** The Bot API server without a trailing slash: grammY appends `/bot<token>/<method>`, the file root `/file/bot<token>`. */
function apiRootOf(cfg: Pick<AgentConfig, 'telegram_api_root'>): string {
  return cfg.telegram_api_root.replace(/\/+$/, '');
}

/** The forum topic a message goes to, when the chat has one. */
function inThread(target: Target): { message_thread_id?: number } {
  return target.thread !== null ? { message_thread_id: target.thread } : {};
}

function keyboard(buttons: readonly ChatButton[]) {
  return buttons.length === 0 ? {} : { reply_markup: { inline_keyboard: buttons.map((b) => [{ text: b.label, callback_data: b.data }]) } };
}

function unparsable(e: unknown): boolean {
  return e instanceof GrammyError && e.error_code === 400 && /can't parse entities|unsupported start tag|can't find end tag/i.test(e.description);
}

function notModified(e: unknown): boolean {
  return e instanceof GrammyError && e.error_code === 400 && /message is not modified/i.test(e.description);
}

/** One phrase for the log and the banner: what is wrong and what to check. */
export function telegramProblem(e: unknown): string {
  if (e instanceof GrammyError) {
    if (e.error_code === 401 || e.error_code === 404) return `Telegram refused the bot token (${e.error_code} ${e.description}): check telegram_token`;
    if (e.error_code === 409) return `another program is polling this bot (${e.description})`;
    return `${e.error_code} ${e.description}`;
  }
  return `cannot reach the Bot API: ${describeError(e)}`;
}
