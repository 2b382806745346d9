import * as v from 'valibot';
import { AuthFrameSchema, type ConnectionContext, type ConnectionEvent, type ConnectionState } from '../../schemas/index.js';
import { classifyClientPayload, type AuthErrorCode, type ServerFrame } from './direct-frames.js';
import type { DirectHub, HubConnection, WaitingConnection } from './direct-hub.js';
import { BoxSession, e2eKeyPair, encodeStdBase64, sharedKeyFor, apiTokenMatches, type OpenedFrame } from './e2e-crypto.js';
import { CLOSE_POLICY, MachineConnection, jsonObjectOf, type FrameSocket } from '../http/index.js';

const AUTH_MESSAGES: Record<AuthErrorCode, string> = {
  auth_timeout: 'no auth frame within the time allowed after connecting',
  auth_required: 'the first frame must be {"type":"auth","token":...,"e2e_pk":...}',
  auth_failed: 'authentication failed',
};

/** WS close code 1013 try again later: a failure past its address's limit, or evicted to make room. */
const CLOSE_TRY_AGAIN_LATER = 1013;

/**
 * One `/ws` client: plaintext auth, then encrypted frames only. Decisions come from the connection
 * machine; the shared host (edges/http) does the lifecycle I/O and this class the direct API's own:
 * the token and key exchange, sealing frames, the per-address limits.
 *
 * An idle connection is what a server holds most of, so its state is kept small: the key pair
 * exists only while the auth frame is handled, and the session holds just the box key and nonce.
 */
export class DirectConnection
  extends MachineConnection<ConnectionEvent, ConnectionState, ConnectionContext>
  implements HubConnection, WaitingConnection
{
  private session: BoxSession | null = null;
  /** Counted among its address's sockets waiting to authenticate. */
  private pending = false;
  /** A refusal past the address's limit, held back until its timer (or an eviction) sends it. */
  private delayedRefusal: (() => void) | null = null;
  private authFailure = '';

  constructor(
    private readonly hub: DirectHub,
    socket: FrameSocket,
    /** The client's address, as the per-address limits key it. */
    readonly address = '',
  ) {
    super(socket, {
      machine: hub.deps.connectionMachine,
      spawn: hub.spawnConnection,
      input: { nonceCap: hub.limits.nonceCap },
      limits: hub.limits,
    });
  }

  override open(): void {
    this.hub.add(this);
    this.pending = true;
    super.open();
    this.hub.waitingStarted(this);
  }

  get authenticated(): boolean {
    return this.live && this.state.value === 'encrypted';
  }

  get chatId(): number | null {
    return this.state.context.chatId;
  }

  get channelId(): number | null {
    return this.state.context.channelId;
  }

  /** A frame from the client; `text` is null for a binary frame. */
  onFrame(text: string | null, bytes: number): void {
    if (!this.live) return;
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
    if (!this.live) return;
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

  protected closeAsDecided(context: ConnectionContext): void {
    const code = context.rejection;
    if (code) {
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
        if (this.gone) return;
        this.writePlain({ type: 'error', code, message: `${message}; too many failed attempts from this address, so failures are answered after ${delayMs} ms` });
        this.socket.end(CLOSE_TRY_AGAIN_LATER, 'auth_rate_limited');
      };
      this.setTimer(this.delayedRefusal, delayMs);
    } else if (context.closeReason === 'nonce_limit') {
      this.writeSealed({ type: 'error', code: 'decrypt_failed', message: 'this connection used up its nonce budget; reconnect to continue' });
      this.socket.end(CLOSE_POLICY, 'nonce_limit');
    } else if (context.closeReason === 'backpressure') {
      this.dropSlowReader((why) => this.hub.log('warn', `direct connection ${this.id} closed: ${why}`, { conn: this.id }));
    } else {
      this.goAway();
    }
  }

  protected released(): void {
    this.settlePending();
    this.hub.remove(this);
  }

  override onClose(code: number): void {
    if (this.gone) return;
    super.onClose(code);
    // A socket that never authenticated leaves a count, not a fact.
    const { chatId, closeReason } = this.state.context;
    if (chatId === null) this.hub.unauthenticated.count(closeReason ?? 'client');
  }

  /** Chunks arrive already merged and batched by the agent contract (bus/agents.ts): each is one frame. */
  sendSealed(frame: ServerFrame): void {
    if (this.session) this.deliver(() => this.writeSealed(frame));
  }

  private sendPlain(frame: ServerFrame): void {
    if (this.live) this.writePlain(frame);
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
}
