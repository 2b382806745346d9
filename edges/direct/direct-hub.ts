import type { Subscription } from 'rxjs';
import type { AnyStateMachine } from 'xstate';
import { agentsOf, type AgentClient, type Bus, type LogLevel } from '../../bus/index.js';
import {
  AGENT_COMMANDS,
  INTERRUPTED_REASON,
  MAIN_AGENT,
  NOTIFICATION_EVENTS,
  TURN_CHUNKS,
  TURN_EVENTS,
  describeError,
  type AgentConfig,
  type ChatAddress,
  type ChatTransport,
  type Envelope,
  type Notification,
  type OutboundMessage,
  type Principal,
  type TransportHealth,
  type TurnChunk,
} from '../../schemas/index.js';
import type { HomePaths } from '../../store/index.js';
import { attemptLimitKey, localConnectionSpawner, type ConnectionSpawner } from '../http/index.js';
import { sessionErrorOf, type ProviderListing, type ServerFrame } from './direct-frames.js';
import { AuthFailureLimit } from './auth-failure-limit.js';
import { UnauthenticatedTally } from './unauthenticated-tally.js';

export interface DirectLimits {
  /** WIRE.md: the auth frame must arrive within 10 s of the upgrade. */
  authTimeoutMs: number;
  /** Frames above this are refused with `decrypt_failed` (not decrypted); the connection stays. */
  maxFrameBytes: number;
  /** uWS `maxPayloadLength`: above this uWS closes the socket (1009) before buffering more. */
  hardFrameBytes: number;
  /** Bytes waiting in the socket's send buffer before the server gives up on a slow reader. */
  maxBufferedBytes: number;
  /** Accepted client nonces remembered per connection (see CONNECTION_NONCE_CAP). */
  nonceCap: number;
  /** Bytes of one uploaded file. */
  maxUploadBytes: number;
  /** Failed authentications one client address may make per window before its failures are answered late. */
  authFailuresPerWindow: number;
  authFailureWindowMs: number;
  /** Addresses whose failures are remembered at once; the oldest window is forgotten first. */
  authFailureAddresses: number;
  /** How late a limited address's failures are answered: with the pending cap, its guesses per second. */
  authFailureDelayMs: number;
  /** Sockets one address may keep waiting to authenticate; past it its oldest waiting one is closed. */
  maxPendingPerAddress: number;
  /** The same for the whole server. */
  maxPendingTotal: number;
}

export const DEFAULT_DIRECT_LIMITS: DirectLimits = {
  authTimeoutMs: 10_000,
  maxFrameBytes: 1024 * 1024,
  hardFrameBytes: 2 * 1024 * 1024,
  maxBufferedBytes: 4 * 1024 * 1024,
  nonceCap: 100_000,
  maxUploadBytes: 50 * 1024 * 1024,
  authFailuresPerWindow: 10,
  authFailureWindowMs: 60_000,
  // ~100 bytes each: a full table stays around 1 MB.
  authFailureAddresses: 10_000,
  authFailureDelayMs: 1000,
  // A client authenticates within milliseconds of connecting; only a flood (or every client behind
  // one proxy reconnecting at once) holds this many.
  maxPendingPerAddress: 128,
  maxPendingTotal: 4096,
};

export type DirectLog = (level: LogLevel, msg: string, fields?: Record<string, unknown>) => void;

export interface DirectApiDeps {
  bus: Bus;
  /** The config in force (hot-reloaded fields such as `file_access`, `model` are read per use). */
  config(): AgentConfig;
  paths: HomePaths;
  /** For `auth_ok`: every provider with its models. */
  providers(): ProviderListing[];
  /**
   * machines/connection.machine.ts's `connectionMachine`, handed in by bin/ because edges/ may not
   * import machines/ (DESIGN.md §3).
   */
  connectionMachine: AnyStateMachine;
  /** Makes each connection's actor: the daemon's actor host; without one, a local root. */
  spawnConnection?: ConnectionSpawner;
  /** `api.token` in force; openDirectApi generates and persists it when the file has none. */
  token: string;
  /** Defaults to `bus.emitLog`. */
  log?: DirectLog;
  limits?: Partial<DirectLimits>;
  /** Milliseconds since the epoch for the auth-failure windows; defaults to `bus.now`. */
  now?: () => number;
}

/** A socket that has not authenticated yet, as the hub's caps on them see it. */
export interface WaitingConnection {
  readonly address: string;
  /** Close it now, to make room for a newer one. */
  evict(): void;
}

/** What the hub needs from one connection. */
export interface HubConnection {
  readonly id: string;
  readonly authenticated: boolean;
  readonly chatId: number | null;
  readonly channelId: number | null;
  /** Sends an encrypted frame; a no-op once the socket is gone. */
  sendSealed(frame: ServerFrame): void;
  shutdown(): void;
}

function chunkFrame(chunk: TurnChunk): ServerFrame {
  switch (chunk.type) {
    case TURN_CHUNKS.text_delta:
      return { type: 'text_delta', data: chunk.data.text };
    case TURN_CHUNKS.tool_activity:
      return { type: 'tool_activity', data: chunk.data.tool };
    case TURN_CHUNKS.system_status:
      return { type: 'system_status', data: chunk.data.status };
  }
}

/** The session key a connection's messages run under (SPEC.md "Session key (direct API)"). */
function sessionKeyOf(conn: Pick<HubConnection, 'chatId' | 'channelId'>): string {
  return conn.channelId === null ? `api:${conn.chatId}` : `api:${conn.chatId}:${conn.channelId}`;
}

/**
 * The direct API's bearer: whoever holds `api.token`, a user with no record, so no role
 * (`permission_mode`) and no agent restriction.
 */
function tokenBearer(conn: Pick<HubConnection, 'chatId' | 'channelId'>): Principal {
  return { kind: 'user', id: null, acting_for: null, role: null, allowed_agents: [], origin: { transport: 'api', chat_id: conn.chatId, topic_id: conn.channelId } };
}

/**
 * What the direct API's connections share: their requests to the agent contract (which orders
 * them per session and routes their chunks back), notification push, and the fact log.
 */
export class DirectHub implements ChatTransport {
  readonly name = 'api';
  readonly limits: DirectLimits;
  readonly log: DirectLog;
  private readonly connections = new Set<HubConnection>();
  private readonly agents: AgentClient;
  private readonly subs: Subscription[] = [];
  private closed = false;
  /** Highest send-buffer fill seen on any connection: evidence that the cap holds. */
  peakBufferedBytes = 0;
  /** All that connections which never authenticate leave behind. */
  readonly unauthenticated: UnauthenticatedTally;
  private readonly authFailures: AuthFailureLimit;
  /** Sockets waiting to authenticate, oldest first: per address key, and all of them. */
  private readonly waiting = new Map<string, Set<WaitingConnection>>();
  private readonly waitingAll = new Set<WaitingConnection>();
  private readonly now: () => number;
  /** The parent of every connection's actor: they share one actor system. */
  readonly spawnConnection: ConnectionSpawner;

  constructor(readonly deps: DirectApiDeps) {
    this.limits = { ...DEFAULT_DIRECT_LIMITS, ...deps.limits };
    this.log = deps.log ?? ((level, msg, fields) => deps.bus.emitLog(level, msg, fields));
    this.spawnConnection = deps.spawnConnection ?? localConnectionSpawner(deps.bus, this.log);
    this.agents = agentsOf(deps.bus);
    this.unauthenticated = new UnauthenticatedTally(this.log);
    this.authFailures = new AuthFailureLimit({
      maxFailures: this.limits.authFailuresPerWindow,
      windowMs: this.limits.authFailureWindowMs,
      maxAddresses: this.limits.authFailureAddresses,
    });
    this.now = deps.now ?? (() => deps.bus.now());
    this.subs.push(
      deps.bus.events$.subscribe((e: Envelope) => {
        if (e.type === NOTIFICATION_EVENTS.created) this.pushNotification(e.data);
        // A restart's recovery runs before this API starts; this covers a turn cut off while a chat is connected.
        else if (e.type === TURN_EVENTS.failed && e.data.reason === INTERRUPTED_REASON && typeof e.data.session_key === 'string') {
          this.deliverInterrupted(e.data.session_key, null);
        }
      }),
    );
  }

  add(conn: HubConnection): void {
    this.connections.add(conn);
  }

  remove(conn: HubConnection): void {
    this.connections.delete(conn);
  }

  health(): TransportHealth {
    return this.closed ? { name: this.name, state: 'stopped', detail: 'the direct API is closed' } : { name: this.name, state: 'running', detail: `${this.authenticatedCount} connection(s) open` };
  }

  /** Is a chat (its topic, or chat-scoped when null) open on an authenticated connection now? It keeps no history for one that is not. */
  reaches(to: ChatAddress): boolean {
    return this.openOf(to).length > 0;
  }

  /**
   * svc speaking in a chat outside a turn (a workflow's notify or question, a cron result), shown
   * like the interrupted-turn notices: a sealed result frame to every open connection of that chat.
   */
  async deliver(m: OutboundMessage): Promise<void> {
    const open = this.openOf(m);
    if (open.length === 0) throw new Error(`no connection of api chat ${m.chat_id} is open`);
    for (const c of open) c.sendSealed({ type: 'result', text: m.text, stream_fallback: false, files: [] });
  }

  private openOf(to: ChatAddress): HubConnection[] {
    return [...this.connections].filter((c) => c.authenticated && c.chatId === to.chat_id && c.channelId === to.topic_id);
  }

  /** Authenticated (encrypted-session) connections: what `/health` reports. */
  get authenticatedCount(): number {
    let n = 0;
    for (const c of this.connections) if (c.authenticated) n++;
    return n;
  }

  get connectionCount(): number {
    return this.connections.size;
  }

  /**
   * A socket started waiting to authenticate. Past its address's share, or the server's, the
   * oldest waiting socket is closed to make room: a flood only ever closes its own older sockets,
   * while a client with the token, which authenticates within milliseconds, always gets in.
   */
  waitingStarted(conn: WaitingConnection): void {
    const key = attemptLimitKey(conn.address);
    let mine = this.waiting.get(key);
    if (!mine) this.waiting.set(key, (mine = new Set()));
    mine.add(conn);
    this.waitingAll.add(conn);
    if (mine.size > this.limits.maxPendingPerAddress) this.evict(mine.values().next().value!);
    if (this.waitingAll.size > this.limits.maxPendingTotal) this.evict(this.waitingAll.values().next().value!);
  }

  /** It authenticated, was refused or went away. */
  waitingEnded(conn: WaitingConnection): void {
    if (!this.waitingAll.delete(conn)) return;
    const key = attemptLimitKey(conn.address);
    const mine = this.waiting.get(key);
    mine?.delete(conn);
    if (mine?.size === 0) this.waiting.delete(key);
  }

  private evict(conn: WaitingConnection): void {
    this.waitingEnded(conn);
    this.unauthenticated.count('evicted');
    conn.evict();
  }

  /** A connection from `address` failed to authenticate; true when the address is past its limit. */
  authFailed(address: string): boolean {
    return this.authFailures.fail(attemptLimitKey(address), this.now()) > 0;
  }

  /**
   * A connection's chat becomes known at authentication: the moment to hand it what a restart cut
   * off. Its `auth_ok` is already written, and sealed frames always follow it.
   */
  authenticated(conn: HubConnection): void {
    this.deliverInterrupted(sessionKeyOf(conn), conn);
  }

  /** Facts of an authenticated connection's machine, on its own stream. Never message contents. */

  /**
   * Asks the main agent; the runtime queues it behind earlier messages of the same session key (all
   * connections of one chat and channel share it). The turn runs to its end even if the connection
   * goes away meanwhile.
   */
  submit(conn: HubConnection, text: string): void {
    const asked = this.agents.ask(
      { agent: MAIN_AGENT, transport: 'api', chat_id: conn.chatId!, topic_id: conn.channelId, text, kind: 'foreground' },
      tokenBearer(conn),
    );
    asked.chunks$.subscribe((chunk) => conn.sendSealed(chunkFrame(chunk)));
    asked.outcome.then(
      (outcome) => conn.sendSealed({ type: 'result', text: outcome.text, stream_fallback: outcome.stream_fallback, files: outcome.files ?? [] }),
      (e) => this.replyError(conn, e, AGENT_COMMANDS.message.type),
    );
  }

  /** Chat-scoped (SPEC.md): kills the chat's work on every channel, and what waits behind it; not queued behind the turn it stops. */
  abort(conn: HubConnection): void {
    this.agents.abort(conn.chatId!, tokenBearer(conn)).then(
      (r) => conn.sendSealed({ type: 'abort_ok', killed: r.killed }),
      (e) => this.replyError(conn, e, AGENT_COMMANDS.abort.type),
    );
  }

  /**
   * Answers a restart cut off in this chat, shown once as the agent's (partial) reply: to the
   * connection that just authenticated, or (`to` null) to every open connection of the chat.
   */
  private deliverInterrupted(key: string, to: HubConnection | null): void {
    const targets = () => (to ? [to] : [...this.connections].filter((c) => c.authenticated && sessionKeyOf(c) === key));
    if (targets().length === 0) return;
    this.deps.bus.send(AGENT_COMMANDS.takeInterrupted, { session_key: key }, { by: 'api' }).then(
      (notices) => {
        for (const n of notices) for (const c of targets()) c.sendSealed({ type: 'result', text: n.text, stream_fallback: false, files: [], interrupted: true });
      },
      (e) => {
        // No agent runtime (an API-only test rig) has nothing to hand over.
        if (!sessionErrorOf(e).internal) return;
        this.log('warn', `direct API: could not hand interrupted answers to ${key}: ${describeError(e)}`);
      },
    );
  }

  private replyError(conn: HubConnection, e: unknown, what: string): void {
    const err = sessionErrorOf(e);
    if (err.internal) this.log('error', `direct connection ${conn.id}: ${what} failed: ${describeError(e)}`);
    conn.sendSealed({ type: 'error', code: err.code, message: err.message });
  }

  private pushNotification(data: Notification): void {
    const id = typeof data.id === 'number' || typeof data.id === 'string' ? data.id : String(data.id ?? '');
    const frame: ServerFrame = {
      type: 'notification',
      notification: {
        id,
        title: typeof data.title === 'string' ? data.title : '',
        body: typeof data.body === 'string' ? data.body : '',
        read: data.read === true,
      },
    };
    for (const c of this.connections) if (c.authenticated) c.sendSealed(frame);
  }

  /** Stops routing and closes every connection (close code 1001). */
  close(): void {
    if (this.closed) return;
    for (const c of [...this.connections]) c.shutdown();
    this.closed = true;
    this.unauthenticated.flush();
    for (const s of this.subs) s.unsubscribe();
  }
}
