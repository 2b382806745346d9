import { randomBytes } from 'node:crypto';
import { createActor, type AnyActorRef } from 'xstate';
import * as v from 'valibot';
import { AuthFrameSchema, type ConnectionContext, type ConnectionEvent, type ConnectionEventType, type ConnectionState, type Fact } from '../../schemas/index.js';
import { classifyClientPayload, jsonObjectOf, type AuthErrorCode, type ServerFrame } from './direct-frames.js';
import type { DirectHub, HubConnection, WaitingConnection } from './direct-hub.js';
import { BoxSession, e2eKeyPair, encodeStdBase64, sharedKeyFor, apiTokenMatches, type OpenedFrame } from './e2e-crypto.js';
import type { FrameSocket } from '../http/index.js';

/** The connection machine's actor as this class drives it, typed by the machine's contract in schemas/. */
interface ConnectionActor {
  send(e: ConnectionEvent): void;
  getSnapshot(): {
    /** 'error' when an action threw: the actor has stopped (the hub's root logs why). */
    status: 'active' | 'done' | 'error' | 'stopped';
    value: ConnectionState;
    context: ConnectionContext;
  };
  on(type: '*', fn: (fact: Fact<ConnectionEventType>) => void): unknown;
  start(): void;
}

const AUTH_MESSAGES: Record<AuthErrorCode, string> = {
  auth_timeout: 'no auth frame within the time allowed after connecting',
  auth_required: 'the first frame must be {"type":"auth","token":...,"e2e_pk":...}',
  auth_failed: 'authentication failed',
};

/** WS close codes: 1008 policy violation for refusals, 1001 going away on shutdown, 1013 try again later for a failure past its address's limit. */
const CLOSE_POLICY = 1008;
const CLOSE_GOING_AWAY = 1001;
const CLOSE_TRY_AGAIN_LATER = 1013;

/**
 * One `/ws` client: plaintext auth, then encrypted frames only. Decisions come from the connection
 * machine; this class does the I/O around it (crypto, timer, socket writes, backpressure).
 *
 * An idle connection is what a server holds most of, so its state is kept small: the key pair
 * exists only while the auth frame is handled, and the session holds just the box key and nonce.
 */
export class DirectConnection implements HubConnection, WaitingConnection {
  readonly id = randomBytes(8).toString('hex');
  private readonly actor: ConnectionActor;
  private session: BoxSession | null = null;
  private timer: NodeJS.Timeout | null = null;
  /** The socket's close callback ran: it must not be touched again. */
  private gone = false;
  /** The server started closing; nothing more is sent. */
  private closing = false;
  /** Counted among its address's sockets waiting to authenticate. */
  private pending = false;
  /** A refusal past the address's limit, held back until its timer (or an eviction) sends it. */
  private delayedRefusal: (() => void) | null = null;
  private authFailure = '';

  constructor(
    private readonly hub: DirectHub,
    private readonly socket: FrameSocket,
    /** The client's address, as the per-address limits key it. */
    readonly address = '',
  ) {
    this.actor = createActor(hub.deps.connectionMachine, {
      // One actor system for all connections: a root actor builds its own (maps, scheduler,
      // closures), about 1.9 KB that each idle connection would otherwise carry.
      parent: hub.connectionsRoot as AnyActorRef,
      input: { nonceCap: hub.limits.nonceCap },
    });
    this.actor.on('*', (fact) => hub.record(this.id, fact));
  }

  open(): void {
    this.hub.add(this);
    this.pending = true;
    this.actor.start();
    this.timer = setTimeout(() => this.dispatch({ type: 'timeout' }), this.hub.limits.authTimeoutMs);
    this.hub.waitingStarted(this);
  }

  private get state(): ReturnType<ConnectionActor['getSnapshot']> {
    return this.actor.getSnapshot();
  }

  get authenticated(): boolean {
    return !this.gone && !this.closing && this.state.value === 'encrypted';
  }

  get chatId(): number | null {
    return this.state.context.chatId;
  }

  get channelId(): number | null {
    return this.state.context.channelId;
  }

  /** A frame from the client; `text` is null for a binary frame. */
  onFrame(text: string | null, bytes: number): void {
    if (this.gone || this.closing) return;
    if (this.state.value === 'plaintext') return this.onAuthFrame(text);
    if (this.state.value !== 'encrypted') return;

    let why = 'the frame is not std base64 of nonce[24] || box under this connection\'s key';
    let opened: OpenedFrame | null = null;
    if (text === null) why = 'binary frames are not accepted; send base64(nonce || box) in a text frame';
    else if (bytes > this.hub.limits.maxFrameBytes) why = `frame of ${bytes} bytes exceeds the limit of ${this.hub.limits.maxFrameBytes} bytes`;
    else opened = this.session!.open(text);
    const nonce = opened?.nonceKey ?? null;
    // A nonce the machine refuses after a good decrypt can only be a replay.
    this.dispatch({ type: 'frame', nonce });
    if (this.closing || this.gone) return;
    if (this.state.context.lastFrame !== 'accepted') {
      return this.sendSealed({ type: 'error', code: 'decrypt_failed', message: nonce ? 'nonce already used on this connection (replayed frame)' : why });
    }
    const request = classifyClientPayload(opened!.payload);
    if (request.kind === 'error') return this.sendSealed({ type: 'error', code: request.code, message: request.message });
    if (request.kind === 'abort') return this.hub.abort(this);
    this.hub.submit(this, request.text);
  }

  private onAuthFrame(text: string | null): void {
    const parsed = text === null ? null : jsonObjectOf(text);
    const auth = parsed ? v.safeParse(AuthFrameSchema, parsed) : null;
    if (!auth?.success) return this.dispatch({ type: 'frame', nonce: null });
    const frame = auth.output;
    const { config } = this.hub.deps;
    const tokenValid = apiTokenMatches(frame.token, this.hub.deps.token);
    // Two X25519 operations (about a millisecond of CPU): only for a caller who holds the token.
    const keys = tokenValid ? e2eKeyPair() : null;
    const shared = keys ? sharedKeyFor(frame.e2e_pk, keys.secretKey) : null;
    const cfg = config();
    this.authFailure = !tokenValid ? 'the token is not valid' : 'e2e_pk must be std base64 of a 32-byte Curve25519 public key';
    this.dispatch({
      type: 'auth',
      tokenValid,
      keyValid: shared !== null,
      chatId: frame.chat_id,
      channelId: frame.channel_id,
      configChatId: cfg.api.chat_id,
      allowedUserIds: cfg.allowed_user_ids,
    });
    if (this.state.value !== 'encrypted') return;
    this.clearTimer();
    this.settlePending();
    this.session = new BoxSession(shared!);
    const { chatId, channelId } = this.state.context;
    this.sendPlain({
      type: 'auth_ok',
      chat_id: chatId!,
      ...(channelId !== null ? { channel_id: channelId } : {}),
      e2e_pk: encodeStdBase64(keys!.publicKey),
      providers: this.hub.deps.providers(),
      active_provider: cfg.provider,
      active_model: cfg.model,
    });
    this.hub.authenticated(this);
  }

  private authFailureMessage(): string {
    return `${AUTH_MESSAGES.auth_failed}: ${this.authFailure}`;
  }

  /** Sends the event, then carries out a close the machine decided on. */
  private dispatch(event: ConnectionEvent): void {
    this.actor.send(event);
    const snap = this.state;
    if (this.closing || this.gone) return;
    if (snap.status === 'error') {
      // No machine to decide anything any more: drop the client rather than leave it hanging.
      this.closing = true;
      this.clearTimer();
      return this.socket.abort();
    }
    if (snap.value !== 'closing') return;
    this.closing = true;
    this.clearTimer();
    const reason = snap.context.closeReason;
    if (snap.context.rejection) {
      const code = snap.context.rejection;
      const message = code === 'auth_failed' ? this.authFailureMessage() : AUTH_MESSAGES[code];
      if (!this.hub.authFailed(this.address)) {
        this.writePlain({ type: 'error', code, message });
        return this.socket.end(CLOSE_POLICY, code);
      }
      // Past its address's limit a failure is answered late, so guessing slows to a crawl while
      // the right token (never delayed) still gets in at once.
      const delayMs = this.hub.limits.authFailureDelayMs;
      this.delayedRefusal = () => {
        this.delayedRefusal = null;
        this.timer = null;
        if (this.gone) return;
        this.writePlain({ type: 'error', code, message: `${message}; too many failed attempts from this address, so failures are answered after ${delayMs} ms` });
        this.socket.end(CLOSE_TRY_AGAIN_LATER, 'auth_rate_limited');
      };
      this.timer = setTimeout(this.delayedRefusal, delayMs);
    } else if (reason === 'nonce_limit') {
      this.writeSealed({ type: 'error', code: 'decrypt_failed', message: 'this connection used up its nonce budget; reconnect to continue' });
      this.socket.end(CLOSE_POLICY, 'nonce_limit');
    } else if (reason === 'backpressure') {
      this.hub.log('warn', `direct connection ${this.id} closed: the client is not reading (${this.socket.bufferedAmount()} bytes waiting, limit ${this.hub.limits.maxBufferedBytes})`, {
        conn: this.id,
      });
      this.socket.abort();
    } else {
      this.socket.end(CLOSE_GOING_AWAY, 'server shutting down');
    }
  }

  /** The socket's close callback. */
  onClose(code: number): void {
    if (this.gone) return;
    this.gone = true;
    this.clearTimer();
    this.settlePending();
    this.hub.remove(this);
    const authenticated = this.state.context.chatId !== null;
    this.actor.send({ type: 'close', code });
    if (!authenticated) this.hub.unauthenticated.count(this.state.context.closeReason ?? 'client');
  }

  shutdown(): void {
    if (this.gone || this.closing) return;
    this.dispatch({ type: 'drop', reason: 'shutdown' });
  }

  /** Chunks arrive already merged and batched by the agent contract (bus/agents.ts): each is one frame. */
  sendSealed(frame: ServerFrame): void {
    if (this.gone || this.closing || !this.session) return;
    this.socket.cork(() => {
      if (this.roomToSend()) this.writeSealed(frame);
    });
  }

  private sendPlain(frame: ServerFrame): void {
    if (this.gone || this.closing) return;
    this.writePlain(frame);
  }

  /** Past the cap the reader is not keeping up: drop it rather than buffer without bound. */
  private roomToSend(): boolean {
    if (this.socket.bufferedAmount() <= this.hub.limits.maxBufferedBytes) return true;
    this.dispatch({ type: 'drop', reason: 'backpressure' });
    return false;
  }

  private writeSealed(frame: ServerFrame): void {
    const payload = Buffer.from(JSON.stringify(frame), 'utf8');
    this.socket.send(this.session!.seal(payload));
    const buffered = this.socket.bufferedAmount();
    if (buffered > this.hub.peakBufferedBytes) this.hub.peakBufferedBytes = buffered;
  }

  private writePlain(frame: ServerFrame): void {
    this.socket.send(JSON.stringify(frame));
  }

  /** The hub closes the oldest waiting socket to make room for a newer one. */
  evict(): void {
    this.pending = false;
    if (this.gone) return;
    if (this.delayedRefusal) {
      this.clearTimer();
      return this.delayedRefusal();
    }
    if (this.closing) return;
    this.closing = true;
    this.clearTimer();
    this.writePlain({ type: 'error', code: 'auth_timeout', message: 'closed before authenticating: too many connections from this address are waiting to authenticate, and the oldest goes first' });
    this.socket.end(CLOSE_TRY_AGAIN_LATER, 'auth_rate_limited');
  }

  private settlePending(): void {
    if (!this.pending) return;
    this.pending = false;
    this.hub.waitingEnded(this);
  }

  private clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}
