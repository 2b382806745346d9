// Longer than 450 lines: one /ws/admin edge — a connection's frames and the hub that fans the bus out
// to every connection share the per-user socket bookkeeping that drops a removed user's sockets.
import type { Subscription } from 'rxjs';
import type { AnyStateMachine } from 'xstate';
import * as v from 'valibot';
import { agentsOf, type Bus } from '../../bus/index.js';
import {
  ADMIN_ACCESS,
  ADMIN_CLIENT_FRAME_TYPES,
  AdminAbortFrameSchema,
  AdminAuthFrameSchema,
  AdminMessageFrameSchema,
  CHAT_ENVELOPE_KINDS,
  CHAT_READS_LEGACY_KEY,
  CHAT_SESSION_EVENTS,
  NOTIFICATION_EVENTS,
  SvcError,
  TURN_CHUNKS,
  USER_EVENTS,
  describeError,
  type AdminAuthRejection,
  type AdminConnectionContext,
  type AdminConnectionEvent,
  type AdminConnectionState,
  type AdminFrameKind,
  type AdminMessageFrame,
  type AdminServerFrame,
  type Envelope,
  type Principal,
  type TurnChunk,
  type UserRecord,
} from '../../schemas/index.js';
import { CLOSE_POLICY, MachineConnection, jsonObjectOf, localConnectionSpawner, roleSatisfies, type ConnectionSpawner, type FrameSocket, type SocketAuthenticate } from '../http/index.js';
import { ADMIN_CREDENTIALS } from './admin-auth.js';
import { adminTurnsOf, type AdminTurn } from './admin-turns.js';

export interface AdminSocketLimits {
  /** WIRE.md: the auth frame comes first; a socket that sends none is closed after this. */
  authTimeoutMs: number;
  /** Frames above this are refused with `frame_too_large` unread; the connection stays. */
  maxFrameBytes: number;
  /** uWS `maxPayloadLength`: above this uWS closes the socket (1009) before buffering more. */
  hardFrameBytes: number;
  /** Bytes waiting in the send buffer before a client that does not read is dropped. */
  maxBufferedBytes: number;
  /** Frames per window; more are refused with `rate_limited`. */
  maxFrames: number;
  windowMs: number;
}

export const DEFAULT_ADMIN_SOCKET_LIMITS: AdminSocketLimits = {
  authTimeoutMs: 10_000,
  // A message of MAX_CHAT_MESSAGE_CHARS characters, all of them multi-byte, still fits.
  maxFrameBytes: 1536 * 1024,
  hardFrameBytes: 2 * 1024 * 1024,
  maxBufferedBytes: 4 * 1024 * 1024,
  maxFrames: 30,
  windowMs: 10_000,
};

export interface AdminSocketDeps {
  bus: Bus;
  /** machines/admin-connection.machine.ts, handed in by bin/ (edges/ may not import machines/). */
  connectionMachine: AnyStateMachine;
  /** Makes each connection's actor: the daemon's actor host; without one, a local root. */
  spawnConnection?: ConnectionSpawner;
  /** SPEC.md "Agent-scoped access" for one socket's principal: bin/ binds the runtime's rule and registry. */
  mayUse(principal: Principal, agent: string): boolean;
  /** users.json as last loaded: the token_version a socket authenticated under. */
  users(): readonly Pick<UserRecord, 'username' | 'token_version' | 'active' | 'role' | 'allowed_agents'>[];
  /** The server's authenticators (HttpServer's `mountSockets` hands them over). */
  authenticate: SocketAuthenticate;
  /** `api.cors_origins`: pages served elsewhere that may open the socket. */
  allowedOrigins?: () => readonly string[];
  limits?: Partial<AdminSocketLimits>;
  /** Milliseconds since the epoch, for the rate window; defaults to `bus.now`. */
  now?: () => number;
}

const AUTH_MESSAGES: Record<AdminAuthRejection, string> = {
  auth_timeout: 'no auth frame within the time allowed after connecting',
  auth_required: 'the first frame must be {"type":"auth","token":"<access token or empty>"}',
  auth_failed: 'authentication failed',
};

const WS_AUTH = { accepts: ADMIN_CREDENTIALS } as const;

/** Whose sockets: a user's name, or the one key of the credential with no user (as chat_reads.json keys it). */
export function socketUserKey(p: Principal): string {
  return p.id ?? CHAT_READS_LEGACY_KEY;
}

function chunkFrame(chunk: TurnChunk, turn: AdminTurn): AdminServerFrame {
  const where = { session_id: turn.session_id, agent: turn.agent };
  switch (chunk.type) {
    case TURN_CHUNKS.text_delta:
      return { type: 'text_delta', text: chunk.data.text, ...where };
    case TURN_CHUNKS.tool_activity:
      return { type: 'tool_activity', tool: chunk.data.tool, ...where };
    case TURN_CHUNKS.system_status:
      return { type: 'system_status', data: chunk.data.status, ...where };
  }
}

type Parsed =
  | { kind: 'auth'; token: string }
  | { kind: 'message'; frame: AdminMessageFrame }
  | { kind: 'abort'; agent: string }
  | { kind: Exclude<AdminFrameKind, 'auth' | 'message' | 'abort'>; why: string };

function parseFrame(text: string | null, bytes: number, maxBytes: number): Parsed {
  if (text === null) return { kind: 'invalid', why: 'binary frames are not accepted; send JSON in a text frame' };
  if (bytes > maxBytes) return { kind: 'too_large', why: `frame of ${bytes} bytes exceeds the limit of ${maxBytes} bytes` };
  const obj = jsonObjectOf(text);
  if (!obj) return { kind: 'invalid', why: 'a frame is a JSON object' };
  if (typeof obj.type !== 'string' || !(ADMIN_CLIENT_FRAME_TYPES as readonly string[]).includes(obj.type)) {
    return { kind: 'unknown', why: `unknown frame type ${JSON.stringify(obj.type)}; expected one of ${ADMIN_CLIENT_FRAME_TYPES.join(', ')}` };
  }
  const schema = obj.type === 'auth' ? AdminAuthFrameSchema : obj.type === 'message' ? AdminMessageFrameSchema : AdminAbortFrameSchema;
  const r = v.safeParse(schema, obj);
  if (!r.success) {
    const issue = r.issues[0];
    const path = issue.path?.map((p) => String(p.key)).join('.') ?? '(frame)';
    return { kind: 'invalid', why: `${obj.type} frame: ${path}: ${issue.message}` };
  }
  const f = r.output;
  if (f.type === 'auth') return { kind: 'auth', token: f.token };
  if (f.type === 'abort') return { kind: 'abort', agent: f.agent };
  return { kind: 'message', frame: f };
}

/**
 * One `/ws/admin` client: an auth frame, then chat frames. Decisions come from the admin
 * connection machine; the shared host (edges/http) does the lifecycle I/O and this class the admin
 * socket's own: authenticating with the server's authenticators and the chat frame vocabulary.
 */
export class AdminConnection extends MachineConnection<AdminConnectionEvent, AdminConnectionState, AdminConnectionContext> {
  /** The auth frame is being checked; other frames wait their turn by being refused. */
  private authenticating = false;
  private authFailure = '';
  principal: Principal | null = null;
  /** users.json's token_version when this socket authenticated; null for a credential with no user. */
  tokenVersion: number | null = null;

  constructor(
    private readonly hub: AdminSocketHub,
    socket: FrameSocket,
    /** Who the upgrade's credential (cookie or bearer) named: an empty auth token means them. */
    private readonly upgradePrincipal: Principal,
  ) {
    super(socket, {
      machine: hub.deps.connectionMachine,
      spawn: hub.spawnConnection,
      input: { maxFrames: hub.limits.maxFrames, windowMs: hub.limits.windowMs },
      limits: hub.limits,
    });
  }

  get isOpen(): boolean {
    return this.live && this.state.value === 'open';
  }

  onFrame(text: string | null, bytes: number): void {
    if (!this.live) return;
    const parsed = parseFrame(text, bytes, this.hub.limits.maxFrameBytes);
    if (this.state.value === 'awaiting_auth') {
      if (this.authenticating) return this.send({ type: 'error', code: 'out_of_order', message: 'wait for auth_ok before sending more frames', session_id: null, agent: null });
      if (parsed.kind !== 'auth') return this.dispatch({ type: 'frame', kind: parsed.kind, at: this.hub.now() });
      return void this.authenticate(parsed.token);
    }
    if (this.state.value !== 'open') return;
    this.dispatch({ type: 'frame', kind: parsed.kind, at: this.hub.now() });
    const verdict = this.state.context.lastFrame;
    if (verdict !== 'accepted') {
      const why = verdict === 'rate_limited'
        ? `more than ${this.hub.limits.maxFrames} frames in ${this.hub.limits.windowMs} ms; slow down`
        : verdict === 'out_of_order' ? 'this connection is already authenticated' : 'why' in parsed ? parsed.why : 'refused';
      // SPEC.md's error frame names a session and agent; a refused frame belongs to neither.
      return this.send({ type: 'error', code: verdict ?? 'invalid_frame', message: why, session_id: null, agent: null });
    }
    const principal = this.hub.current(this);
    if (!principal) return;
    if (!roleSatisfies(principal.role, ADMIN_ACCESS['chat.write'])) {
      const agent = parsed.kind === 'message' ? parsed.frame.agent : parsed.kind === 'abort' ? parsed.agent : null;
      return this.send({ type: 'error', code: 'forbidden', message: `chatting needs the ${ADMIN_ACCESS['chat.write']} role or above; this user has ${principal.role ?? 'no role'}`, session_id: null, agent });
    }
    if (parsed.kind === 'message') this.hub.submit(this, parsed.frame);
    else if (parsed.kind === 'abort') this.hub.abort(this, parsed.agent);
  }

  private async authenticate(token: string): Promise<void> {
    this.authenticating = true;
    let principal: Principal | null = null;
    let why = 'the token is not valid';
    try {
      principal = token === ''
        ? this.upgradePrincipal
        : await this.hub.deps.authenticate(
          { method: 'GET', path: '/ws/admin', query: new URLSearchParams(), headers: { authorization: `Bearer ${token}` }, params: {}, body: Buffer.alloc(0), remoteAddress: '' },
          WS_AUTH,
        );
    } catch (e) {
      if (e instanceof SvcError) why = e.message;
      else this.hub.log('error', `admin socket ${this.id}: authenticating failed: ${describeError(e)}`);
    }
    this.authenticating = false;
    if (!this.live) return;
    const agents = principal ? await this.hub.visibleAgents(principal) : [];
    if (!this.live) return;
    if (principal) {
      this.principal = principal;
      this.tokenVersion = principal.id === null ? null : (this.hub.deps.users().find((u) => u.username === principal!.id)?.token_version ?? null);
    }
    this.authFailure = why;
    this.dispatch({ type: 'auth', ok: principal !== null, role: principal?.role ?? null });
    if (this.state.value !== 'open') return;
    this.clearTimer();
    this.send({ type: 'auth_ok', agents, role: principal!.role });
    this.hub.authenticated(this);
  }

  protected closeAsDecided(context: AdminConnectionContext): void {
    const { rejection, closeReason } = context;
    if (rejection) {
      const message = rejection === 'auth_failed' ? `${AUTH_MESSAGES.auth_failed}: ${this.authFailure}` : AUTH_MESSAGES[rejection];
      this.write({ type: 'auth_error', message });
      return this.socket.end(CLOSE_POLICY, rejection);
    }
    if (closeReason === 'backpressure') return this.dropSlowReader((why) => this.hub.log('warn', `admin socket ${this.id} closed: ${why}`));
    if (closeReason === 'revoked') return this.socket.end(CLOSE_POLICY, 'credentials revoked');
    this.goAway();
  }

  protected released(): void {
    this.hub.remove(this);
  }

  /** A frame to this client; past the send-buffer cap the client is dropped instead. */
  send(frame: AdminServerFrame): void {
    this.deliver(() => this.write(frame));
  }

  private write(frame: AdminServerFrame): void {
    this.socket.send(JSON.stringify(frame));
  }

}

/**
 * What the admin sockets share: turns started on any admin surface (shown on every live socket of
 * the user who asked, each under its own agent ACL), read markers (to the marker owner's sockets
 * only), notifications, chat envelopes, and closing a user's sockets when their credentials stop
 * being valid.
 */
export class AdminSocketHub {
  readonly limits: AdminSocketLimits;
  readonly now: () => number;
  private readonly connections = new Set<AdminConnection>();
  private readonly byUser = new Map<string, Set<AdminConnection>>();
  /** Turns still running, for a chat-scoped abort by agent. */
  private readonly running = new Set<AdminTurn>();
  private readonly subs: Subscription[] = [];
  private closed = false;
  readonly spawnConnection: ConnectionSpawner;

  constructor(readonly deps: AdminSocketDeps) {
    this.limits = { ...DEFAULT_ADMIN_SOCKET_LIMITS, ...deps.limits };
    this.now = deps.now ?? (() => deps.bus.now());
    this.spawnConnection = deps.spawnConnection ?? localConnectionSpawner(deps.bus, (level, msg) => this.log(level, msg));
    this.subs.push(adminTurnsOf(deps.bus).started$.subscribe((turn) => this.follow(turn)));
    this.subs.push(deps.bus.events$.subscribe((e) => this.onEvent(e)));
  }

  log(level: 'warn' | 'error', msg: string): void {
    this.deps.bus.emitLog(level, msg);
  }

  /**
   * Who the upgrade's credentials name; rejects (401/403 as for a route) when they name nobody.
   * A browser always sends Origin on an upgrade and cannot send a bearer header, so its upgrade
   * rides the session cookie: one from a page this server does not serve (neither its own host nor
   * `api.cors_origins`) is refused, so another site cannot open the socket as the user.
   */
  async authenticateUpgrade(req: Parameters<SocketAuthenticate>[0]): Promise<Principal> {
    const origin = req.headers.origin;
    if (origin !== undefined && !this.originAllowed(origin, req.headers.host ?? '')) {
      throw new SvcError('forbidden', `origin ${JSON.stringify(origin)} may not open /ws/admin: it is neither this server nor in api.cors_origins`);
    }
    return this.deps.authenticate(req, WS_AUTH);
  }

  private originAllowed(origin: string, host: string): boolean {
    let parsed: URL;
    try {
      parsed = new URL(origin);
    } catch {
      return false;
    }
    if (parsed.host === host && (parsed.protocol === 'http:' || parsed.protocol === 'https:')) return true;
    return (this.deps.allowedOrigins?.() ?? []).includes(origin);
  }

  connect(socket: FrameSocket, principal: Principal): AdminConnection {
    const conn = new AdminConnection(this, socket, principal);
    this.connections.add(conn);
    if (this.closed) conn.dispatch({ type: 'drop', reason: 'shutdown' });
    return conn;
  }

  get openCount(): number {
    let n = 0;
    for (const c of this.connections) if (c.isOpen) n++;
    return n;
  }

  authenticated(conn: AdminConnection): void {
    const key = socketUserKey(conn.principal!);
    let mine = this.byUser.get(key);
    if (!mine) this.byUser.set(key, (mine = new Set()));
    mine.add(conn);
  }

  remove(conn: AdminConnection): void {
    this.connections.delete(conn);
    if (!conn.principal) return;
    const key = socketUserKey(conn.principal);
    const mine = this.byUser.get(key);
    mine?.delete(conn);
    if (mine?.size === 0) this.byUser.delete(key);
  }

  /** The agents the runtime lets this principal use; none when no runtime answers. */
  async visibleAgents(principal: Principal): Promise<string[]> {
    try {
      return (await agentsOf(this.deps.bus).list(principal)).map((a) => a.name);
    } catch (e) {
      this.log('warn', `admin socket: could not list agents: ${describeError(e)}`);
      return [];
    }
  }

  /**
   * The connection's principal as users.json says now (a demotion or a narrower allowed_agents
   * applies to the next frame); null, with the socket dropped, when the row is gone, inactive or
   * its token_version moved (`svc users set-password` writes the file with no daemon to tell).
   */
  current(conn: AdminConnection): Principal | null {
    const principal = conn.principal!;
    if (principal.id === null) return principal;
    const row = this.deps.users().find((u) => u.username === principal.id);
    // A row removed is a `user.deleted` fact, which drops the socket; none here means nothing to refresh from.
    if (!row) return principal;
    if (!row.active || (conn.tokenVersion !== null && row.token_version !== conn.tokenVersion)) {
      conn.dispatch({ type: 'drop', reason: 'revoked' });
      return null;
    }
    conn.principal = { ...principal, role: row.role, allowed_agents: row.allowed_agents };
    return conn.principal;
  }

  submit(conn: AdminConnection, frame: AdminMessageFrame): void {
    const { type: _type, ...req } = frame;
    adminTurnsOf(this.deps.bus).start(conn.principal!, req, conn.id).catch((e: unknown) => {
      const err = e instanceof SvcError ? e : null;
      if (!err) this.log('error', `admin socket ${conn.id}: a message failed: ${describeError(e)}`);
      conn.send({ type: 'error', message: err?.message ?? 'internal error', code: err?.code ?? 'internal-error', session_id: frame.session_id ?? null, agent: frame.agent });
    });
  }

  /** Ends this user's running turns on `agent` (abort is chat-scoped: each session's chat). */
  abort(conn: AdminConnection, agent: string): void {
    const principal = conn.principal!;
    if (!this.deps.mayUse(principal, agent)) {
      return conn.send({ type: 'error', code: 'agent-not-allowed', message: `this user may not use agent "${agent}"`, session_id: null, agent });
    }
    const key = socketUserKey(principal);
    const chats = new Set([...this.running].filter((t) => t.agent === agent && socketUserKey(t.principal) === key).map((t) => t.chat_id));
    const agents = agentsOf(this.deps.bus);
    Promise.all([...chats].map((chat) => agents.abort(chat, principal, agent))).then(
      (outcomes) => conn.send({ type: 'abort_ok', killed: outcomes.reduce((n, o) => n + o.killed, 0) }),
      (e: unknown) => conn.send({ type: 'error', code: e instanceof SvcError ? e.code : 'internal-error', message: e instanceof SvcError ? e.message : 'internal error', session_id: null, agent }),
    );
  }

  /** Each of the asking user's live sockets that may use the turn's agent; each gets every frame once. */
  private audience(turn: AdminTurn): AdminConnection[] {
    const mine = this.byUser.get(socketUserKey(turn.principal));
    return mine ? [...mine].filter((c) => c.isOpen && this.deps.mayUse(c.principal!, turn.agent)) : [];
  }

  private follow(turn: AdminTurn): void {
    this.running.add(turn);
    const where = { session_id: turn.session_id, agent: turn.agent };
    turn.asked.chunks$.subscribe((chunk) => {
      const frame = chunkFrame(chunk, turn);
      for (const c of this.audience(turn)) c.send(frame);
    });
    turn.asked.outcome.then(
      (o) => {
        for (const c of this.audience(turn)) c.send({ type: 'result', text: o.text, files: o.files, ...where });
      },
      (e: unknown) => {
        const err = e instanceof SvcError ? e : null;
        for (const c of this.audience(turn)) c.send({ type: 'error', message: err?.message ?? 'internal error', code: err?.code ?? 'internal-error', ...where });
      },
    );
    void turn.recorded.finally(() => this.running.delete(turn));
  }

  private onEvent(e: Envelope): void {
    switch (e.type) {
      case CHAT_SESSION_EVENTS.read_advanced: {
        const d = e.data;
        for (const c of this.byUser.get(d.user) ?? []) {
          if (c.isOpen) c.send({ type: 'chat.read', session_id: d.id, last_read_message_id: d.last_read_message_id, unread_count: d.unread_count });
        }
        return;
      }
      case CHAT_SESSION_EVENTS.messages_merged: {
        const { agent } = e.data;
        if (agent === undefined) return;
        for (const m of e.data.messages) {
          if (typeof m.kind !== 'string' || !(CHAT_ENVELOPE_KINDS as readonly string[]).includes(m.kind)) continue;
          const meta = typeof m.meta === 'object' && m.meta !== null && !Array.isArray(m.meta) ? m.meta : {};
          const frame: AdminServerFrame = {
            type: 'chat_message', kind: m.kind, role: m.sender === 'user' ? 'user' : 'assistant', agent, session_id: e.data.id,
            content: m.content, meta, timestamp: Math.floor(Date.parse(m.timestamp) / 1000),
          };
          // Chat content: only for sockets whose role may read chats (ADMIN_ACCESS['chat.read']).
          for (const c of this.connections) if (c.isOpen && roleSatisfies(c.principal!.role, ADMIN_ACCESS['chat.read']) && this.deps.mayUse(c.principal!, agent)) c.send(frame);
        }
        return;
      }
      case NOTIFICATION_EVENTS.created: {
        const agent = e.data.agent;
        for (const c of this.connections) if (c.isOpen && (agent === null || this.deps.mayUse(c.principal!, agent))) c.send({ type: 'notification', data: e.data });
        return;
      }
      case USER_EVENTS.updated: {
        // A change of who the user is or may be ends their sockets; they reconnect with what is true now.
        const rights = e.data.fields.some((f) => ['role', 'allowed_agents', 'active', 'password'].includes(f));
        for (const c of this.byUser.get(e.data.username) ?? []) {
          if (rights || !e.data.active || (c.tokenVersion !== null && c.tokenVersion !== e.data.token_version)) c.dispatch({ type: 'drop', reason: 'revoked' });
        }
        return;
      }
      case USER_EVENTS.deleted:
        for (const c of this.byUser.get(e.data.username) ?? []) c.dispatch({ type: 'drop', reason: 'revoked' });
        return;
    }
  }

  /** Closes every connection (1001) and stops listening. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const c of [...this.connections]) c.dispatch({ type: 'drop', reason: 'shutdown' });
    for (const s of this.subs) s.unsubscribe();
  }
}
