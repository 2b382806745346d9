import { randomBytes } from 'node:crypto';
import { createActor, fromTransition, type AnyActorRef, type AnyStateMachine } from 'xstate';
import { describeError, isPlainObject, type ConnectionEventType, type ConnectionLifecycleEvent, type Fact } from '../../schemas/index.js';
import type { Bus } from '../../bus/index.js';
import type { FrameConnection, FrameSocket } from './uws-ws.binding.js';

/** WS close codes every surface uses: 1008 for a refusal, 1001 when the server goes away. */
export const CLOSE_POLICY = 1008;
export const CLOSE_GOING_AWAY = 1001;

/** A connection machine's actor as the host drives it: the surface's contract in schemas/ types it. */
interface HostedActor<Event, State, Context> {
  send(e: Event | ConnectionLifecycleEvent): void;
  getSnapshot(): {
    /** 'error' when an action threw: the actor has stopped (the root logs why). */
    status: 'active' | 'done' | 'error' | 'stopped';
    value: State;
    context: Context;
  };
  start(): void;
}

/**
 * The parent of a surface's connection actors, so that they share one actor system: a root actor
 * builds its own (maps, scheduler, closures), about 1.9 KB that each idle connection would
 * otherwise carry. xstate hands a child's failure to its parent instead of throwing it, so it is
 * reported here; a child's end is ignored.
 */
export function connectionActorsRoot(failed: (error: unknown) => void): AnyActorRef {
  return createActor(
    fromTransition((_: null, e: { type: string; error?: unknown }) => {
      if (e.type.startsWith('xstate.error.actor')) failed(e.error);
      return null;
    }, null),
  ).start() as AnyActorRef;
}

/** A connection machine's actor, made for the connection `id` (not yet started, or already running). */
type ConnectionActorRef = Pick<AnyActorRef, 'send' | 'getSnapshot' | 'on' | 'start'>;

/**
 * Makes a connection's actor. The daemon hands in its actor host's (bin/subsystems/api-server.ts):
 * the host supervises the actor like any other and records what it emits on `conn:<id>`. A surface
 * opened on its own (a test, a bench) uses `localConnectionSpawner`.
 */
export type ConnectionSpawner = (id: string, machine: AnyStateMachine, input: unknown) => ConnectionActorRef;

/**
 * Without a host: the surface's actors under one root (a crash is logged by the root) and their facts
 * published on `conn:<id>`, as the host would.
 */
export function localConnectionSpawner(bus: Pick<Bus, 'publish'>, log: (level: 'error', msg: string) => void): ConnectionSpawner {
  const root = connectionActorsRoot((e) => log('error', `connection actor failed: ${describeError(e)}`));
  return (id, machine, input) => {
    const actor = createActor(machine, { parent: root, input });
    actor.on('*', (fact: Fact<ConnectionEventType>) =>
      void bus.publish({ ...fact, stream: `conn:${id}` }).catch((e: unknown) => log('error', `connection ${id}: could not record ${fact.type}: ${describeError(e)}`)),
    );
    return actor;
  };
}

/** A text frame (plaintext or decrypted) as JSON, or null when it is not a JSON object. */
export function jsonObjectOf(text: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(text);
    return isPlainObject(value) ? value : null;
  } catch {
    return null;
  }
}

export interface MachineConnectionSetup {
  machine: AnyStateMachine;
  spawn: ConnectionSpawner;
  input: unknown;
  /** The surface's limits object, shared by its connections (one pointer per connection, not two numbers). */
  limits: ConnectionLimits;
}

export interface ConnectionLimits {
  /** A socket that sends no auth frame within this is closed. */
  authTimeoutMs: number;
  /** Bytes waiting in the send buffer before a client that does not read is dropped. */
  maxBufferedBytes: number;
}

/**
 * One WebSocket client whose decisions come from its surface's connection machine (`/ws`,
 * `/ws/admin`): this host does the I/O every surface shares — the auth timer, carrying out a close
 * the machine decided on, corked writes with the backpressure cap, the socket going away. A
 * surface adds its authenticator and frame vocabulary: `open`, `onFrame` and how each close reads.
 *
 * An idle connection is what a server holds most of, so the host keeps only what it needs.
 */
export abstract class MachineConnection<Event, State extends string, Context extends { closeReason: string | null }>
  implements FrameConnection
{
  readonly id = randomBytes(8).toString('hex');
  protected readonly actor: HostedActor<Event, State, Context>;
  private timer: NodeJS.Timeout | null = null;
  /** The socket's close callback ran: it must not be touched again. */
  protected gone = false;
  /** The server started closing; nothing more is sent. */
  protected closing = false;
  private readonly limits: ConnectionLimits;

  constructor(
    protected readonly socket: FrameSocket,
    setup: MachineConnectionSetup,
  ) {
    this.actor = setup.spawn(this.id, setup.machine, setup.input) as unknown as HostedActor<Event, State, Context>;
    this.limits = setup.limits;
  }

  abstract onFrame(text: string | null, bytes: number): void;

  /** The surface's bookkeeping once the socket is gone (before the machine hears `close`). */
  protected abstract released(): void;

  /**
   * Closes the socket as the machine decided (its context's `rejection`, `closeReason`); the
   * surface writes its own refusal frame. `dropSlowReader` and `goAway` are the shared endings.
   */
  protected abstract closeAsDecided(context: Context): void;

  /** Starts the machine and the auth timer: a socket that never authenticates is closed by its machine. */
  open(): void {
    this.actor.start();
    this.setTimer(() => this.dispatch({ type: 'timeout' }), this.limits.authTimeoutMs);
  }

  protected get state(): ReturnType<HostedActor<Event, State, Context>['getSnapshot']> {
    return this.actor.getSnapshot();
  }

  /** Neither closed by the client nor being closed by the server. */
  protected get live(): boolean {
    return !this.gone && !this.closing;
  }

  /** Sends the event, then carries out a close the machine decided on. */
  dispatch(event: Event | ConnectionLifecycleEvent): void {
    // Stopped with its host (svc stopping) before the socket's last callback: nothing left to decide.
    if (this.state.status === 'stopped') return;
    this.actor.send(event);
    if (!this.live) return;
    const snap = this.state;
    if (snap.status === 'error') {
      // No machine to decide anything any more: drop the client rather than leave it hanging.
      this.closing = true;
      this.clearTimer();
      return this.socket.abort();
    }
    if (snap.value !== 'closing') return;
    this.closing = true;
    this.clearTimer();
    this.closeAsDecided(snap.context);
  }

  /** The socket's close callback. */
  onClose(code: number): void {
    if (this.gone) return;
    this.gone = true;
    this.clearTimer();
    this.released();
    this.actor.send({ type: 'close', code });
  }

  shutdown(): void {
    if (this.live) this.dispatch({ type: 'drop', reason: 'shutdown' });
  }

  /** Runs `write` corked, unless the client stopped reading: past the cap it is dropped instead of buffered without bound. */
  protected deliver(write: () => void): void {
    if (!this.live) return;
    this.socket.cork(() => {
      if (this.socket.bufferedAmount() > this.limits.maxBufferedBytes) return this.dispatch({ type: 'drop', reason: 'backpressure' });
      write();
    });
  }

  /** A peer that does not read would never take a close frame: the socket is dropped at once. */
  protected dropSlowReader(log: (detail: string) => void): void {
    log(`the client is not reading (${this.socket.bufferedAmount()} bytes waiting, limit ${this.limits.maxBufferedBytes})`);
    this.socket.abort();
  }

  protected goAway(): void {
    this.socket.end(CLOSE_GOING_AWAY, 'server shutting down');
  }

  protected setTimer(fire: () => void, ms: number): void {
    this.clearTimer();
    this.timer = setTimeout(fire, ms);
  }

  protected clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}
