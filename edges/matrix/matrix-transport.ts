// Longer than 450 lines: one ChatTransport for one SDK; its client, login, sync and send paths share the
// SDK's client object, which no other file may hold. The content helpers at the bottom are its own.
import { randomUUID } from 'node:crypto';
import * as fsp from 'node:fs/promises';
import { join } from 'node:path';
import type { MatrixClient, MatrixEvent, Room, RoomMember, SyncState } from 'matrix-js-sdk';
import { agentsOf, type AgentClient, type Bus, type LogLevel } from '../../bus/index.js';
import {
  MESSENGER_EVENTS,
  SvcError,
  describeError,
  matrixChatId,
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
  answerInChat,
  answerText,
  answerDelivered,
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
import { splitForTelegram, streamingPreview, type TelegramChunk } from '../telegram/index.js';
import { CRYPTO_FILE, forgetSession, newStoreKey, readCredentials, writeCredentials, type MatrixCredentials } from './matrix-credentials.js';
import { MatrixCryptoStore } from './matrix-crypto-store.js';
import { acceptsInvite, admitMatrix } from './matrix-gate.js';
import { downloadMedia, mediaOf, uploadFile } from './matrix-media.js';

export const MATRIX = 'matrix';

/**
 * matrix-js-sdk, loaded when an account first starts: it is large, and every svc command (and a
 * daemon without Matrix) would otherwise pay for loading it.
 */
type Sdk = typeof import('matrix-js-sdk');
let sdkLoading: Promise<Sdk> | null = null;
const loadSdk = (): Promise<Sdk> => (sdkLoading ??= import('matrix-js-sdk'));

/** Matrix's own names (the SDK's enums hold the same strings, but are only there once it is loaded). */
const M = {
  message: 'm.room.message',
  reaction: 'm.reaction',
  text: 'm.text',
  emote: 'm.emote',
  notice: 'm.notice',
  replace: 'm.replace',
  annotation: 'm.annotation',
} as const;

/**
 * The most one message carries. An event may hold 64 KiB of JSON; an edit holds its text four
 * times (body and HTML, each in the fallback and in `m.new_content`), escaped.
 */
export const MATRIX_TEXT_LIMIT = 8000;

/** Past this a message still not decrypted (its key never came) is given up on. */
const DECRYPT_WAIT_MS = 10 * 60_000;

export interface MatrixDeps {
  bus: Bus;
  /** The agent this account talks for (`main`, or a sub-agent with an account of its own). */
  agent: string;
  /** The config in force: the homeserver and login at start; the allow-lists and streaming per message. */
  config(): Pick<AgentConfig, 'matrix' | 'group_mention_only' | 'streaming' | 'scene'>;
  /** `<svc_home>/<matrix.store_path>`: the session (credentials.json) and the crypto store. */
  storeDir: string;
  /** How the answer streams into its message (actors/messenger/edit-streamer.ts, paced by StreamingConfig). */
  streams: StartEditStream;
  /**
   * Events this account accepted before, from the event log: none is run twice, and nothing older
   * than `since` is answered; null: it never accepted one, and its first sync is all history (clocks
   * are not compared: the homeserver's may differ from this machine's).
   */
  accepted(botUserId: string): { ids: ReadonlySet<string>; since: number | null };
  /** Answers the agent finished for this account's rooms that svc died before sending (machines/messenger-outbox.logic.ts). */
  owed(botUserId: string): readonly OwedAnswer[];
  log?: (level: LogLevel, msg: string, fields?: Record<string, unknown>) => void;
  /** Backoff between start attempts after a failure (a refused login, a homeserver out of reach). */
  retry?: Backoff;
  /** Attachments: where they are saved, and what turns them into something the agent can read. Without it they are refused. */
  media?: MessengerMediaDeps;
}

/** A live session: the client and what it keeps. */
interface Session {
  sdk: Sdk;
  client: MatrixClient;
  store: MatrixCryptoStore;
  userId: string;
}

/**
 * The Matrix transport (matrix-js-sdk with its Rust crypto): one device that logs in once and keeps
 * its keys across restarts, so encrypted rooms stay readable; the allow-lists; answers streamed by
 * `m.replace` edits of one message, paced by StreamingConfig; buttons as numbered reply options;
 * attachments both ways, encrypted in encrypted rooms. The SDK's sync loop retries a lost
 * connection on its own; a start that fails is retried with backoff here.
 */
export class MatrixTransport implements ChatTransport {
  readonly name = MATRIX;
  private readonly agents: AgentClient;
  private readonly log: NonNullable<MatrixDeps['log']>;
  private readonly state: MessengerHealth;
  private stopped = false;
  private running: Running | null = null;
  private session: Session | null = null;
  /** Ends the session in progress: set while one runs. */
  private endSession: ((e?: unknown) => void) | null = null;
  private accepted: Set<string> = new Set();
  private since = 0;
  private handedOver = false;
  /** Rooms by chat id, filled as rooms are seen (a chat id is a hash, so it is looked up, never reversed). */
  private readonly rooms = new Map<number, string>();
  /** The buttons last offered in each room, which a reply of just their number presses. */
  private readonly offered = new Map<string, readonly ChatButton[]>();
  private readonly refusedLogged = new Set<string>();
  private readonly lanes = new ChatLanes((room, e) => this.log('error', `matrix: room ${room}: ${describeError(e)}`));

  constructor(private readonly deps: MatrixDeps) {
    this.log = deps.log ?? ((level, msg, fields) => deps.bus.emitLog(level, msg, fields));
    this.agents = agentsOf(deps.bus);
    this.state = new MessengerHealth(deps.bus, MATRIX, deps.agent);
  }

  health(): TransportHealth {
    return this.state.get();
  }

  reaches(to: ChatAddress): boolean {
    return this.state.get().state === 'running' && this.roomOf(to.chat_id) !== null;
  }

  async deliver(m: OutboundMessage): Promise<void> {
    const s = this.session;
    const room = this.roomOf(m.chat_id);
    if (!s || room === null) throw new SvcError('not-found', `matrix: no room of chat ${m.chat_id} is joined`);
    await this.sendAll(s, room, splitForTelegram(m.text, MATRIX_TEXT_LIMIT), m.buttons ?? []);
  }

  /** Connects in the background; a failure is retried with backoff, never thrown. */
  start(): void {
    if (this.running) return;
    this.stopped = false;
    this.running = keepRunning({
      health: this.state,
      target: () => this.deps.config().matrix.homeserver,
      session: (running) => this.run(running),
      problem: matrixProblem,
      stopped: () => this.stopped,
      log: this.log,
      label: `matrix account of ${this.deps.agent}`,
      backoff: this.deps.retry ?? DEFAULT_BACKOFF,
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.running?.wake();
    this.endSession?.();
    await this.running?.done;
    this.running = null;
    // Answers still running are not waited for: svc's stop ends their turns, and the next start
    // tells each room what had arrived (handOverAfterRestart).
    this.state.set('stopped', 'stopped');
  }

  /** One session: log in (once) or restore, open the keys, sync; settles when it ends. */
  private async run(running: (detail: string) => void): Promise<void> {
    const cfg = this.deps.config().matrix;
    const baseUrl = cfg.homeserver.trim().replace(/\/+$/, '');
    const sdk = await loadSdk();
    const creds = await this.credentials(sdk, baseUrl, cfg);
    let store: MatrixCryptoStore;
    try {
      store = await MatrixCryptoStore.open(join(this.deps.storeDir, CRYPTO_FILE));
    } catch (e) {
      // Keys that cannot be read are keys lost: a new device is the only way on (see credentials()).
      await forgetSession(this.deps.storeDir);
      throw e;
    }
    const client = sdk.createClient({ baseUrl, userId: creds.user_id, accessToken: creds.access_token, deviceId: creds.device_id, logger: sdkLogger(this.log) });
    const session: Session = { sdk, client, store, userId: creds.user_id };
    const ended = new Promise<void>((resolve, reject) => {
      this.endSession = (e?: unknown) => (e === undefined ? resolve() : reject(e));
      // A stop that came while logging in found no session to end.
      if (this.stopped) resolve();
    });
    try {
      // A token the server no longer knows fails here, before any key is made for it.
      await Promise.race([client.whoami(), ended]);
      if (this.stopped) return;
      await store.initCrypto(client, Buffer.from(creds.store_key, 'base64')).catch(async (e: unknown) => {
        // Keys that cannot be opened are keys lost, as an unreadable file is: the next attempt is a new device.
        await forgetSession(this.deps.storeDir);
        throw new SvcError('corrupt-file', `the Matrix crypto store in ${this.deps.storeDir} does not open with its key (${describeError(e)}); logging in again as a new device`);
      });
      const known = this.deps.accepted(creds.user_id);
      this.accepted = new Set(known.ids);
      this.since = known.since ?? Number.NEGATIVE_INFINITY;
      this.listen(session, known.since === null);
      const prepared = firstSync(sdk, client);
      await client.startClient({ initialSyncLimit: 20, lazyLoadMembers: false });
      await Promise.race([prepared, ended]);
      if (this.stopped) return;
      this.session = session;
      for (const room of client.getRooms()) this.rooms.set(matrixChatId(room.roomId), room.roomId);
      await this.joinAllowedRooms(client);
      running(`as ${creds.user_id} on ${baseUrl}`);
      // Owed answers once per start of svc: a later session may have answers of its own in flight.
      const answers = this.handedOver ? [] : this.deps.owed(creds.user_id);
      this.handedOver = true;
      handOverAfterRestart(this.deps.bus, MATRIX, this.deps.agent, this.log, { stream: messengerStream(MATRIX, creds.user_id), answers });
      await ended;
    } catch (e) {
      if (isUnknownToken(e)) await forgetSession(this.deps.storeDir);
      throw e;
    } finally {
      this.session = null;
      this.endSession = null;
      client.removeAllListeners();
      stopForGood(client);
      await store.close().catch((e: unknown) => this.log('error', `matrix: could not save the crypto store: ${describeError(e)}`));
    }
  }

  /**
   * The session to use: the explicit access_token and device_id of the config (copied into the
   * store), else the one a first login stored, else a password login now. A stored session whose
   * keys are gone cannot be that device again: it is logged out and a new device logged in.
   */
  private async credentials(sdk: Sdk, baseUrl: string, cfg: AgentConfig['matrix']): Promise<MatrixCredentials> {
    const dir = this.deps.storeDir;
    const stored = await readCredentials(dir);
    const sameAccount = stored !== null && stored.homeserver === baseUrl && stored.user_id === cfg.user_id;
    if (cfg.access_token !== '' && cfg.device_id !== '') {
      const sameDevice = sameAccount && stored.device_id === cfg.device_id;
      // Another device's keys are no use to this one (and are locked with another key).
      if (!sameDevice) await forgetSession(dir);
      const creds = { homeserver: baseUrl, user_id: cfg.user_id, access_token: cfg.access_token, device_id: cfg.device_id, store_key: sameDevice ? stored.store_key : newStoreKey() };
      if (!sameDevice || stored.access_token !== creds.access_token) await writeCredentials(dir, creds);
      return creds;
    }
    if (sameAccount && (await exists(join(dir, CRYPTO_FILE)))) return stored;
    if (cfg.password === '') {
      throw new SvcError('config-missing', stored ? `the crypto store of ${cfg.user_id} is gone; set matrix.password to log in as a new device` : 'no matrix.password to log in with');
    }
    if (sameAccount) {
      this.log('warn', `matrix: the crypto store of ${cfg.user_id} is gone; logging out device ${stored.device_id} and logging in as a new one`);
      await sdk
        .createClient({ baseUrl, userId: stored.user_id, accessToken: stored.access_token, logger: sdkLogger(this.log) })
        .logout(true)
        .catch(() => undefined);
    }
    await forgetSession(dir);
    const anon = sdk.createClient({ baseUrl, logger: sdkLogger(this.log) });
    const login = await anon.loginRequest({ type: 'm.login.password', identifier: { type: 'm.id.user', user: cfg.user_id }, password: cfg.password, initial_device_display_name: `svc (${this.deps.agent})` });
    const creds = { homeserver: baseUrl, user_id: login.user_id, access_token: login.access_token, device_id: login.device_id, store_key: newStoreKey() };
    await writeCredentials(dir, creds);
    this.log('info', `matrix: logged in as ${login.user_id} (device ${login.device_id}); the session is kept in ${join(dir, 'credentials.json')}`);
    return creds;
  }

  /** `firstStart`: the account never took a message before; what its first sync brings is history, not requests. */
  private listen(s: Session, firstStart: boolean): void {
    const { client, sdk } = s;
    const { SyncState } = sdk;
    let synced = false;
    client.on(sdk.ClientEvent.Sync, (state, _prev, data) => {
      if (state === SyncState.Syncing || state === SyncState.Prepared) {
        synced = true;
        if (this.session === s) this.state.set('running', `as ${s.userId} on ${client.baseUrl}`);
        // Each sync can carry to-device room keys and device changes: what a crash must not lose.
        s.store.saveSoon();
      } else if ((state === SyncState.Reconnecting || state === SyncState.Error) && this.session === s) {
        this.state.set('retrying', `lost the homeserver: ${describeError(data?.error ?? state)}`);
      }
    });
    client.on(sdk.HttpApiEvent.SessionLoggedOut, (e) => this.endSession?.(e));
    client.on(sdk.RoomEvent.Timeline, (event, room, toStart) => {
      if (toStart || !room || (firstStart && !synced)) return;
      this.rooms.set(matrixChatId(room.roomId), room.roomId);
      void this.onEvent(s, event, room).catch((e: unknown) => this.log('error', `matrix: event ${event.getId()}: ${describeError(e)}`));
    });
    client.on(sdk.RoomMemberEvent.Membership, (event, member) => this.onMembership(s, event, member));
  }

  /** Invites from allowed users or into allowed rooms are taken; others are left unanswered. */
  private onMembership(s: Session, event: MatrixEvent, member: RoomMember): void {
    if (member.userId !== s.userId || member.membership !== 'invite') return;
    const inviter = event.getSender() ?? '';
    if (!acceptsInvite(member.roomId, inviter, this.deps.config())) return this.refused(inviter, member.roomId, 'an invite from someone not in matrix.allowed_users');
    s.client.joinRoom(member.roomId).catch((e: unknown) => this.log('warn', `matrix: could not join ${member.roomId} on ${inviter}'s invite: ${describeError(e)}`));
  }

  /** allowed_rooms the account is not in yet, joined at start (by id or alias); one that refuses is logged and skipped. */
  private async joinAllowedRooms(client: MatrixClient): Promise<void> {
    const joined = new Set(client.getRooms().filter((r) => r.getMyMembership() === 'join').flatMap((r) => [r.roomId, r.getCanonicalAlias(), ...r.getAltAliases()]));
    for (const room of this.deps.config().matrix.allowed_rooms) {
      if (joined.has(room)) continue;
      await client.joinRoom(room).then(
        (r) => this.rooms.set(matrixChatId(r.roomId), r.roomId),
        (e: unknown) => this.log('warn', `matrix: could not join ${room} from matrix.allowed_rooms: ${describeError(e)}`),
      );
    }
  }

  private async onEvent(s: Session, event: MatrixEvent, room: Room): Promise<void> {
    if (event.getSender() === s.userId) return;
    if (event.isEncrypted()) {
      await s.client.decryptEventIfNeeded(event);
      // Its key may come in a later sync (sent to this device just after the message).
      if (event.isDecryptionFailure()) return this.onceDecrypted(s, event, room);
    }
    await this.onMessage(s, event, room);
  }

  private onceDecrypted(s: Session, event: MatrixEvent, room: Room): void {
    const timer = setTimeout(() => {
      event.off(s.sdk.MatrixEventEvent.Decrypted, retry);
      this.log('warn', `matrix: a message in ${room.roomId} from ${event.getSender()} could not be decrypted (${event.decryptionFailureReason ?? 'no key'}); ask them to send it again`);
    }, DECRYPT_WAIT_MS);
    timer.unref();
    const retry = () => {
      if (event.isDecryptionFailure()) return;
      clearTimeout(timer);
      event.off(s.sdk.MatrixEventEvent.Decrypted, retry);
      void this.onMessage(s, event, room).catch((e: unknown) => this.log('error', `matrix: event ${event.getId()}: ${describeError(e)}`));
    };
    event.on(s.sdk.MatrixEventEvent.Decrypted, retry);
  }

  private async onMessage(s: Session, event: MatrixEvent, room: Room): Promise<void> {
    if (event.getType() !== M.message || this.stopped) return;
    const content = event.getContent();
    // Edits are not new requests, and notices are what bots say: answering them could loop two bots forever.
    if (content['m.relates_to']?.rel_type === M.replace || content.msgtype === M.notice) return;
    const id = event.getId();
    if (!id || this.accepted.has(id) || event.getTs() <= this.since) return;
    const isText = content.msgtype === M.text || content.msgtype === M.emote;
    const media = isText ? null : mediaOf(content);
    const body = typeof content.body === 'string' ? withoutReplyFallback(content.body) : '';
    if (media === null && (!isText || body.trim() === '')) return;
    const sender = event.getSender()!;
    const replyTo = content['m.relates_to']?.['m.in_reply_to']?.event_id;
    const mentions = content['m.mentions'] as { user_ids?: unknown } | undefined;
    const admission = admitMatrix(
      {
        roomId: room.roomId,
        roomAliases: [room.getCanonicalAlias(), ...room.getAltAliases()].filter((a): a is string => !!a),
        memberCount: room.getInvitedAndJoinedMemberCount(),
        sender,
        text: media === null ? body : caption(content),
        botUserId: s.userId,
        botName: room.getMember(s.userId)?.name ?? '',
        mentionsBot: Array.isArray(mentions?.user_ids) && mentions.user_ids.includes(s.userId),
        repliesToBot: typeof replyTo === 'string' && room.findEventById(replyTo)?.getSender() === s.userId,
      },
      this.deps.config(),
    );
    if (!admission.admit) return this.refused(sender, room.roomId, admission.why);
    const address: ChatAddress = { chat_id: matrixChatId(room.roomId), topic_id: null };
    this.rooms.set(address.chat_id, room.roomId);
    const requestId = await this.accept(s, id, event.getTs(), address);
    const react = this.reactions(s, room.roomId, id);
    react('👀');
    if (media === null) {
      const text = this.pressed(room.roomId, admission.text);
      return this.lanes.run(room.roomId, async () => this.answer(s, room.roomId, address, sender, text, react, requestId));
    }
    this.lanes.run(room.roomId, async () => {
      const fetched = (destination: UploadDestination) => downloadMedia(s.client, media, destination);
      const prompt = await mediaPrompt(this.deps.media, media, fetched, admission.text).catch(async (e: unknown) => {
        await this.sendAll(s, room.roomId, splitForTelegram(`⚠️ ${describeError(e)}`, MATRIX_TEXT_LIMIT), []).catch(() => undefined);
        return null;
      });
      if (prompt !== null) this.answer(s, room.roomId, address, sender, prompt, react, requestId);
    });
  }

  /** Recorded before the agent is asked: the same event seen again (a restart's first sync) is skipped. */
  private async accept(s: Session, eventId: string, ts: number, address: ChatAddress): Promise<string> {
    this.accepted.add(eventId);
    const requestId = randomUUID();
    await this.deps.bus.publish({
      stream: messengerStream(MATRIX, s.userId),
      type: MESSENGER_EVENTS.update_accepted,
      data: { transport: MATRIX, update_id: ts, event_id: eventId, chat_id: address.chat_id, topic_id: null, agent: this.deps.agent, request_id: requestId },
      by: MATRIX,
    });
    return requestId;
  }

  /** A reply of just a number presses that button of the last answer in the room (Matrix has no buttons of its own). */
  private pressed(roomId: string, text: string): string {
    const buttons = this.offered.get(roomId);
    const n = /^\s*(\d{1,2})\s*$/.exec(text)?.[1];
    if (!buttons || n === undefined) return text;
    const button = buttons[Number(n) - 1];
    if (!button) return text;
    this.offered.delete(roomId);
    return button.data;
  }

  private refused(sender: string, roomId: string, why: string): void {
    const key = `${sender}:${roomId}`;
    if (this.refusedLogged.has(key) || this.refusedLogged.size > 10_000) return;
    this.refusedLogged.add(key);
    this.log('warn', `matrix: ignored ${sender} in ${roomId}: ${why} (said once per sender and room)`);
  }

  /**
   * SPEC.md scene.reaction_style on the user's message: `seen` puts 👀 on it; `detailed` also
   * marks how the answer ended (👍, 👎). Matrix reactions add up rather than replace, so the
   * "being written" mark that Telegram shows is left out.
   */
  private reactions(s: Session, roomId: string, eventId: string): (emoji: '👀' | ProgressReaction) => void {
    return (emoji) => {
      const style = this.deps.config().scene.reaction_style;
      if (style === 'off' || emoji === '✍' || (style === 'seen' && emoji !== '👀')) return;
      s.client.sendEvent(roomId, M.reaction as never, { 'm.relates_to': { rel_type: M.annotation, event_id: eventId, key: emoji } } as never).catch(() => undefined);
    };
  }

  private answer(s: Session, roomId: string, address: ChatAddress, sender: string, text: string, react: (emoji: ProgressReaction) => void, requestId: string): void {
    const principal: Principal = {
      kind: 'user',
      id: null,
      acting_for: null,
      role: null,
      allowed_agents: [],
      origin: { transport: MATRIX, chat_id: address.chat_id, topic_id: null },
    };
    this.offered.delete(roomId);
    answerInChat({
      agents: this.agents,
      ask: { agent: this.deps.agent, transport: MATRIX, chat_id: address.chat_id, topic_id: null, text, kind: 'foreground' },
      requestId,
      delivered: () => answerDelivered(this.deps.bus, MATRIX, messengerStream(MATRIX, s.userId), requestId),
      principal,
      streams: this.deps.streams,
      surface: {
        editor: this.editor(s, roomId),
        typing: () => void s.client.sendTyping(roomId, true, 30_000).catch(() => undefined),
        react,
        final: async (outcome, streamed) => {
          s.client.sendTyping(roomId, false, 0).catch(() => undefined);
          await this.final(s, roomId, outcome, streamed);
        },
        failed: async (e) => {
          s.client.sendTyping(roomId, false, 0).catch(() => undefined);
          await this.sendAll(s, roomId, splitForTelegram(`⚠️ ${describeError(e)}`, MATRIX_TEXT_LIMIT), []);
        },
      },
      stopped: () => this.stopped,
      onError: (e) => this.log('error', `matrix: could not send the answer to ${roomId} (from ${sender}): ${describeError(e)}`),
    });
  }

  /** The one message an answer streams into: sent by the first preview, replaced by `m.replace` edits after. */
  private editor(s: Session, roomId: string): MessageEditor & { id(): string | null } {
    const limit = Math.min(MATRIX_TEXT_LIMIT, Math.max(1, this.deps.config().streaming.max_chars));
    let id: string | null = null;
    return {
      id: () => id,
      send: async (text) => {
        id = await this.sendChunk(s, roomId, streamingPreview(text, limit), []);
      },
      edit: async (text) => {
        if (id === null) throw new Error('nothing sent yet');
        await this.editChunk(s, roomId, id, streamingPreview(text, limit), []);
      },
    };
  }

  private async final(s: Session, roomId: string, outcome: TurnOutcome, streamed: string | null): Promise<void> {
    const footer = this.deps.config().scene.technical_footer ? technicalFooter(outcome) : '';
    const chunks = splitForTelegram(answerText(outcome) + footer, MATRIX_TEXT_LIMIT);
    const out = { send: (c: TelegramChunk, b: readonly ChatButton[]) => this.sendChunk(s, roomId, c, b), edit: (id: string, c: TelegramChunk, b: readonly ChatButton[]) => this.editChunk(s, roomId, id, c, b) };
    await placeAnswer(out, chunks, outcome.buttons ?? [], streamed);
    for (const f of outcome.files) await this.sendFile(s, roomId, f);
  }

  private async sendAll(s: Session, roomId: string, chunks: readonly TelegramChunk[], buttons: readonly ChatButton[]): Promise<void> {
    await sendInOrder((c: TelegramChunk, b: readonly ChatButton[]) => this.sendChunk(s, roomId, c, b), chunks, buttons);
  }

  private async sendFile(s: Session, roomId: string, f: TurnFile): Promise<void> {
    const encrypted = (await s.client.getCrypto()?.isEncryptionEnabledInRoom(roomId)) ?? false;
    const content = await uploadFile(s.client, f.path, { encrypted, isImage: f.is_image, name: f.name });
    await s.client.sendMessage(roomId, content as never);
    s.store.saveSoon();
  }

  private async sendChunk(s: Session, roomId: string, chunk: TelegramChunk, buttons: readonly ChatButton[]): Promise<string> {
    if (buttons.length) this.offered.set(roomId, buttons);
    const { event_id } = await s.client.sendMessage(roomId, messageContent(withOptions(chunk, buttons)) as never);
    // Sending in an encrypted room can make a room key and Olm sessions: keep them.
    s.store.saveSoon();
    return event_id;
  }

  private async editChunk(s: Session, roomId: string, eventId: string, chunk: TelegramChunk, buttons: readonly ChatButton[]): Promise<void> {
    if (buttons.length) this.offered.set(roomId, buttons);
    const next = messageContent(withOptions(chunk, buttons));
    await s.client.sendMessage(roomId, {
      ...next,
      body: `* ${next.body}`,
      formatted_body: `* ${next.formatted_body}`,
      'm.new_content': next,
      'm.relates_to': { rel_type: M.replace, event_id: eventId },
    } as never);
  }

  /** The joined room a chat id names: a room's own id, or an allowed user's (their direct room with the bot, the main chat). */
  private roomOf(chatId: number): string | null {
    const client = this.session?.client;
    if (!client) return null;
    const id = this.rooms.get(chatId);
    const room = id === undefined ? null : client.getRoom(id);
    if (room && room.getMyMembership() === 'join') return room.roomId;
    const user = this.deps.config().matrix.allowed_users.find((u) => matrixChatId(u) === chatId);
    if (user === undefined) return null;
    const direct = client.getRooms().find((r) => r.getMyMembership() === 'join' && r.getInvitedAndJoinedMemberCount() === 2 && r.getMember(user)?.membership === 'join');
    return direct?.roomId ?? null;
  }
}

/** Telegram's HTML is a subset of what Matrix clients render, except that Matrix breaks lines with `<br>` outside `<pre>`. */
function messageContent(chunk: TelegramChunk): { msgtype: string; body: string; format: string; formatted_body: string } {
  const html = chunk.html
    .split(/(<pre>[\s\S]*?<\/pre>)/)
    .map((part, i) => (i % 2 === 1 ? part : part.replace(/\n/g, '<br>')))
    .join('');
  return { msgtype: M.text, body: chunk.plain, format: 'org.matrix.custom.html', formatted_body: html };
}

/** Buttons as numbered options under the text: a reply of the number presses one (`pressed`). */
function withOptions(chunk: TelegramChunk, buttons: readonly ChatButton[]): TelegramChunk {
  if (buttons.length === 0) return chunk;
  const lines = buttons.map((b, i) => `${i + 1}. ${b.label}`);
  const escaped = lines.map((l) => l.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;'));
  return { plain: `${chunk.plain}\n\nReply with a number:\n${lines.join('\n')}`, html: `${chunk.html}\n\n<i>Reply with a number:</i>\n${escaped.join('\n')}` };
}

/** A reply's body starts with the quoted original (`> <@who> text` lines, then a blank line): not part of what was said. */
function withoutReplyFallback(body: string): string {
  if (!body.startsWith('> ')) return body;
  const lines = body.split('\n');
  let i = 0;
  while (i < lines.length && lines[i]!.startsWith('> ')) i++;
  return lines.slice(lines[i] === '' ? i + 1 : i).join('\n');
}

/** An attachment's caption, where the client sent one (`filename` beside a `body` that differs from it). */
function caption(content: Record<string, unknown>): string {
  return typeof content.filename === 'string' && typeof content.body === 'string' && content.body !== content.filename ? content.body : '';
}

/**
 * stopClient(), and then what it misses in matrix-js-sdk 37.5: a capabilities poll in flight when it
 * is called arms the next one after it (every 6 hours, forever, holding the process open). Whatever
 * that poll arms from now on is disarmed as it is set.
 */
function stopForGood(client: MatrixClient): void {
  client.stopClient();
  const caps = (client as unknown as { serverCapabilitiesService?: object }).serverCapabilitiesService;
  if (!caps) return;
  for (const field of ['refreshTimeout', 'retryTimeout']) {
    Object.defineProperty(caps, field, {
      configurable: true,
      get: () => undefined,
      set: (timer: NodeJS.Timeout | undefined) => clearTimeout(timer),
    });
  }
}

async function exists(file: string): Promise<boolean> {
  return fsp.access(file).then(
    () => true,
    () => false,
  );
}

function firstSync(sdk: Sdk, client: MatrixClient): Promise<void> {
  return new Promise((resolve) => {
    const onSync = (state: SyncState) => {
      if (state !== sdk.SyncState.Prepared && state !== sdk.SyncState.Syncing) return;
      client.off(sdk.ClientEvent.Sync, onSync);
      resolve();
    };
    client.on(sdk.ClientEvent.Sync, onSync);
  });
}

/** A homeserver's refusal as the SDK reports it (its MatrixError, told apart by shape: the class is only there once loaded). */
function matrixError(e: unknown): { errcode?: string; httpStatus?: number; data: { error?: string }; message: string } | null {
  return e instanceof Error && 'errcode' in e && 'data' in e ? (e as never) : null;
}

function isUnknownToken(e: unknown): boolean {
  return matrixError(e)?.errcode === 'M_UNKNOWN_TOKEN';
}

/** One phrase for the log and the banner: what is wrong and what to check. */
export function matrixProblem(e: unknown): string {
  const me = matrixError(e);
  if (me) {
    if (me.errcode === 'M_FORBIDDEN' && me.httpStatus === 403) return `the homeserver refused the login (${me.errcode}): check matrix.user_id and matrix.password`;
    if (me.errcode === 'M_UNKNOWN_TOKEN') return `the homeserver no longer knows the access token (${me.errcode}); logging in again with matrix.password`;
    return `${me.httpStatus ?? ''} ${me.errcode ?? ''} ${me.data.error ?? me.message}`.trim();
  }
  if (e instanceof SvcError) return e.message;
  return `cannot reach the homeserver: ${describeError(e)}`;
}

/**
 * The SDK's own logging: its errors and warnings go to svc's log at debug (it warns about much that
 * is routine, such as a room state event for a room not yet stored); the rest is dropped.
 */
function sdkLogger(log: NonNullable<MatrixDeps['log']>) {
  const logger = {
    trace() {},
    debug() {},
    info() {},
    warn(...args: unknown[]) {
      log('debug', `matrix-js-sdk: ${args.map(String).join(' ')}`);
    },
    error(...args: unknown[]) {
      log('debug', `matrix-js-sdk: ${args.map(String).join(' ')}`);
    },
    getChild: () => logger,
  };
  return logger;
}
