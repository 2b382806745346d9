import { randomUUID } from 'node:crypto';
import { Observable, Subject, config as rxConfig, filter, firstValueFrom, timeout, type OperatorFunction, type Subscription } from 'rxjs';
import {
  BUS_EVENTS,
  LOG_CHUNKS,
  SvcError,
  describeError,
  isSvcError,
  parseWith,
  type AnyCommandDef,
  type AnyNewEvent,
  type ChunkPayload,
  type CommandData,
  type CommandInput,
  type CommandReply,
  type Envelope,
  type EventType,
  type LogLevel,
  type NewEvent,
  type Transient,
} from '../schemas/index.js';
import { versionConflict, type EventLog } from '../store/index.js';
import { followsFrom, type Cause } from './cause.js';
import { REAL_CLOCK } from './clock.js';

/** An imperative request to whoever handles `type`; answered once, by its id. */
export interface Command<T extends string = string, D = unknown> {
  type: T;
  data: D;
  /** Who asked: a user name, `system`, or an agent; recorded on the events the handler causes. */
  by?: string;
  /**
   * The user request this command serves (see cause.ts). A handler passes it on to every fact and
   * command it causes; `send` mints one when the sender starts a new request.
   */
  correlation?: string;
  /** The seq of the fact that led to this command, if one did. */
  causation?: number;
}

interface CommandEnvelope extends Command {
  id: string;
  correlation: string;
}

interface Pending {
  event: AnyNewEvent;
  expected: number | undefined;
  resolve: (e: Envelope) => void;
  reject: (e: unknown) => void;
}

interface Outcome {
  committed: Envelope[];
  /** The publishes `committed` answers, index for index. */
  kept: Pending[];
  refused: [Pending, unknown][];
}

export interface PublishOptions {
  /** Optimistic concurrency: the version of `event.stream` the publisher decided on. */
  expectedVersion?: number;
}

type Reply = { id: string; ok: true; value: unknown } | { id: string; ok: false; error: unknown };

export type { LogLevel };
export type LogLine = ChunkPayload<typeof LOG_CHUNKS.line>;

export interface BusOptions {
  log: EventLog;
  /** Epoch milliseconds; injected so tests and replays control time. */
  clock?: () => number;
  /** Default wait for a command's reply. */
  commandTimeoutMs?: number;
}

export const DEFAULT_COMMAND_TIMEOUT_MS = 30_000;

/**
 * The in-process message bus. `publish` appends to the event log and hands events to subscribers
 * only after the append committed, so nothing is ever seen that the log does not hold. Events
 * published in the same tick are committed in one transaction.
 */
export class Bus {
  readonly events$: Observable<Envelope>;
  readonly transient$: Observable<Transient>;
  readonly commands$: Observable<Command & { id: string; correlation: string }>;

  private readonly eventLog: EventLog;
  private readonly clock: () => number;
  private readonly commandTimeoutMs: number;
  private readonly eventsSubject = new Subject<Envelope>();
  private readonly transientSubject = new Subject<Transient>();
  private readonly commandsSubject = new Subject<CommandEnvelope>();
  private readonly repliesSubject = new Subject<Reply>();
  private readonly handlers = new Map<string, string>();
  private pending: Pending[] = [];
  private flushScheduled = false;
  private nextCommandId = 1;
  private closed = false;

  constructor(opts: BusOptions) {
    this.eventLog = opts.log;
    this.clock = opts.clock ?? REAL_CLOCK.now;
    this.commandTimeoutMs = opts.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS;
    this.events$ = this.eventsSubject.asObservable();
    this.transient$ = this.transientSubject.asObservable();
    this.commands$ = this.commandsSubject.asObservable();
    liveBuses.add(this);
  }

  get log(): EventLog {
    return this.eventLog;
  }

  now(): number {
    return this.clock();
  }

  /**
   * Append one fact; resolves with its envelope once committed and delivered. With
   * `expectedVersion` (the seq of the stream's last event the publisher decided on, 0 for none)
   * it rejects with `version-conflict` when the stream moved on, and only this publish fails.
   */
  publish<T extends EventType>(event: NewEvent<T>, opts: PublishOptions = {}): Promise<Envelope<T>> {
    if (this.closed) return Promise.reject(new SvcError('bus-closed', `bus is closed; cannot publish ${event.type}`));
    return new Promise<Envelope<T>>((resolve, reject) => {
      // The log holds any event; what it gives back for this one has this one's type and payload.
      this.pending.push({ event, expected: opts.expectedVersion, resolve: resolve as (e: Envelope) => void, reject });
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        queueMicrotask(() => this.flush());
      }
    });
  }

  publishAll<T extends EventType>(events: readonly NewEvent<T>[]): Promise<Envelope<T>[]> {
    return Promise.all(events.map((e) => this.publish(e)));
  }

  /** Commit everything queued so far; used by the microtask and by shutdown. */
  flush(): void {
    this.flushScheduled = false;
    const batch = this.pending;
    if (batch.length === 0) return;
    this.pending = [];
    const at = new Date(this.clock()).toISOString();
    const outcome = batch.some((p) => p.expected !== undefined) ? this.appendExpecting(batch, at) : this.appendAll(batch, at);
    if (!outcome) return;
    outcome.committed.forEach((env, i) => {
      this.eventsSubject.next(env);
      outcome.kept[i]!.resolve(env);
    });
    for (const [p, err] of outcome.refused) p.reject(err);
  }

  private appendAll(batch: Pending[], at: string): Outcome | undefined {
    try {
      // Every event in the batch was a typed NewEvent, so what the log stamped back is an Envelope.
      return {
        committed: this.eventLog.append(
          batch.map((p) => p.event),
          at,
        ) as Envelope[],
        kept: batch,
        refused: [],
      };
    } catch (err) {
      for (const p of batch) p.reject(err);
      this.emitLog('error', `event log append failed: ${describeError(err)}`, { count: batch.length });
      return undefined;
    }
  }

  /**
   * One transaction for the tick even when some publishers expect a version: a publish whose
   * stream already got an earlier event of this tick conflicts (it cannot have seen that event),
   * the rest go to the log with their expectations, and a publish the log reports stale is taken
   * out and the batch retried. Each retry removes one publish, so it ends. Only the publishers
   * that lost see the conflict; everyone else's events commit.
   */
  private appendExpecting(batch: Pending[], at: string): Outcome | undefined {
    const stale = new Map<Pending, unknown>();
    for (;;) {
      const kept: Pending[] = [];
      const lateInTick: Pending[] = [];
      const expected = new Map<string, number>();
      const expecting = new Map<string, Pending>();
      const touched = new Set<string>();
      for (const p of batch) {
        if (stale.has(p)) continue;
        const stream = p.event.stream;
        if (p.expected !== undefined) {
          if (touched.has(stream)) {
            lateInTick.push(p);
            continue;
          }
          expected.set(stream, p.expected);
          expecting.set(stream, p);
        }
        touched.add(stream);
        kept.push(p);
      }
      let committed: Envelope[];
      try {
        committed = this.eventLog.append(
          kept.map((p) => p.event),
          at,
          expected,
        ) as Envelope[];
      } catch (err) {
        const loser = isSvcError(err, 'version-conflict') ? expecting.get(String(err.details?.stream)) : undefined;
        if (loser) {
          stale.set(loser, err);
          continue;
        }
        for (const p of [...kept, ...lateInTick, ...stale.keys()]) p.reject(err);
        this.emitLog('error', `event log append failed: ${describeError(err)}`, { count: batch.length });
        return undefined;
      }
      const refused: [Pending, unknown][] = [...stale];
      for (const p of lateInTick) refused.push([p, versionConflict(p.event.stream, p.expected!, this.eventLog.version(p.event.stream))]);
      return { committed, kept, refused };
    }
  }

  /** A stream chunk for live listeners only; never persisted. */
  emitTransient(message: Transient): void {
    this.transientSubject.next(message);
  }

  emitLog(level: LogLevel, msg: string, fields: Record<string, unknown> = {}): void {
    this.transientSubject.next({ stream: 'log', type: LOG_CHUNKS.line, data: { level, msg, ...fields } satisfies LogLine });
  }

  /**
   * Subscribe by name to persisted events. A handler that throws (or rejects) is isolated: the
   * failure becomes a `bus.subscriber_failed` event and delivery to everyone else goes on.
   */
  subscribe(name: string, handler: (e: Envelope) => void | Promise<void>, only?: (e: Envelope) => boolean): Subscription {
    return this.eventsSubject.subscribe((e) => {
      if (only && !only(e)) return;
      try {
        const r = handler(e);
        if (r && typeof (r as Promise<void>).then === 'function') {
          (r as Promise<void>).catch((err) => this.reportSubscriberFailure(name, e, err));
        }
      } catch (err) {
        this.reportSubscriberFailure(name, e, err);
      }
    });
  }

  reportSubscriberFailure(subscriber: string, e: Envelope | undefined, err: unknown): void {
    const error = describeError(err);
    this.emitLog('error', `subscriber ${subscriber} failed: ${error}`, { seq: e?.seq ?? null });
    // A failure while handling a failure report would loop; the log line above is enough.
    if (this.closed || e?.type === BUS_EVENTS.subscriber_failed) return;
    void this.publish({
      stream: 'bus',
      type: BUS_EVENTS.subscriber_failed,
      data: { subscriber, seq: e?.seq ?? null, type: e?.type ?? null, error },
      ...(e ? followsFrom(e) : {}),
    }).catch(() => undefined);
  }

  /**
   * Register the one handler for a declared command; its return value (or SvcError) is the reply.
   * The data is parsed by the declaration's schema first: a refused payload is answered with the
   * declaration's `invalidCode` and never reaches the handler.
   */
  handle<C extends AnyCommandDef>(
    command: C,
    name: string,
    handler: (cmd: Command<C['type'], CommandData<C>> & { correlation: string }) => CommandReply<C> | Promise<CommandReply<C>>,
  ): Subscription {
    const { type } = command;
    if (this.handlers.has(type)) {
      throw new SvcError('handler-exists', `command ${type} already handled by ${this.handlers.get(type)}`);
    }
    this.handlers.set(type, name);
    const sub = this.commandsSubject.pipe(filter((c) => c.type === type)).subscribe((cmd) => {
      Promise.resolve()
        .then(() => handler({ ...cmd, type, data: parseWith(command.data, cmd.data ?? {}, command.invalidCode, `${type} data`) }))
        .then(
          (value) => this.repliesSubject.next({ id: cmd.id, ok: true, value }),
          (error) => this.repliesSubject.next({ id: cmd.id, ok: false, error }),
        );
    });
    sub.add(() => this.handlers.delete(type));
    return sub;
  }

  /**
   * Send a command and await its reply; rejects with `no-handler` or `command-timeout`.
   * `timeoutMs: 0` (or Infinity) waits as long as the handler takes: a CLI turn has its own deadline.
   * The cause (`by`, `correlation`, `causation`; see cause.ts) rides on the command to the handler.
   */
  async send<C extends AnyCommandDef>(command: C, data: CommandInput<C>, opts: { timeoutMs?: number } & Cause = {}): Promise<CommandReply<C>> {
    const { timeoutMs, ...cause } = opts;
    const cmd: Command = { type: command.type, data, ...cause };
    if (this.closed) throw new SvcError('bus-closed', `bus is closed; cannot send ${cmd.type}`);
    if (!this.handlers.has(cmd.type)) throw new SvcError('no-handler', `nothing handles ${cmd.type}`);
    const id = `c${this.nextCommandId++}`;
    const waitMs = timeoutMs ?? this.commandTimeoutMs;
    const mine = this.repliesSubject.pipe(filter((r) => r.id === id));
    const bounded = waitMs > 0 && Number.isFinite(waitMs);
    const reply = firstValueFrom(
      bounded
        ? mine.pipe(
            timeout({
              first: waitMs,
              with: () => {
                throw new SvcError('command-timeout', `${cmd.type} got no reply within ${waitMs} ms`);
              },
            }),
          )
        : mine,
    );
    this.commandsSubject.next({ ...cmd, id, correlation: cmd.correlation ?? randomUUID() });
    const r = await reply;
    if (!r.ok) throw r.error;
    return r.value as CommandReply<C>;
  }

  /** Commit what is queued, then refuse further work; subscribers see completion. */
  close(): void {
    if (this.closed) return;
    this.flush();
    this.closed = true;
    liveBuses.delete(this);
    this.eventsSubject.complete();
    this.transientSubject.complete();
    this.commandsSubject.complete();
    this.repliesSubject.complete();
  }
}

/** Keep only events of the given types, narrowing the type for the consumer. */
export function ofType<T extends EventType>(...types: T[]): OperatorFunction<Envelope, Envelope<T>> {
  const set = new Set<string>(types);
  // TypeScript cannot narrow a union by a generic type parameter; the set check is that narrowing.
  return filter((e) => set.has(e.type)) as OperatorFunction<Envelope, Envelope<T>>;
}

/** Keep only events of one stream, or of every stream with a prefix when it ends with `:`. */
export function ofStream(stream: string): OperatorFunction<Envelope, Envelope> {
  return (source) => source.pipe(filter((e) => (stream.endsWith(':') ? e.stream.startsWith(stream) : e.stream === stream)));
}

/**
 * A raw `events$` observer that throws is reported by RxJS out of band; by default that would
 * crash the daemon. Route it to every live bus as a subscriber failure instead.
 */
const liveBuses = new Set<Bus>();
rxConfig.onUnhandledError = (err) => {
  if (liveBuses.size === 0) {
    queueMicrotask(() => {
      throw err;
    });
    return;
  }
  for (const bus of liveBuses) bus.reportSubscriberFailure('events$ observer', undefined, err);
};
