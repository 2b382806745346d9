import { createActor, type Actor, type AnyStateMachine, type InputFrom, type SnapshotFrom } from 'xstate';

/** xstate's scheduler clock (not exported by name): what delays run on. */
export type ActorClock = NonNullable<NonNullable<Parameters<typeof createActor>[1]>['clock']>;

import type { Subscription } from 'rxjs';
import { ACTOR_EVENTS, SvcError, describeError, type AnyEnvelope, type Fact } from '../../schemas/index.js';
import { REAL_CLOCK, followsFrom, type Bus, type Cause } from '../../bus/index.js';
import type { EventLog } from '../../store/index.js';

export interface SpawnOptions<M extends AnyStateMachine> {
  /** Stream the actor's facts go to, e.g. `task:42`. */
  stream: string;
  input?: InputFrom<M>;
  /** A state rebuilt from the log; when given, the actor resumes there instead of starting fresh. */
  snapshot?: SnapshotFrom<M>;
  /** Recorded as `by` on every fact, e.g. the user who caused the actor. */
  by?: string;
  /**
   * The request the actor serves (cause.ts): stamped on every fact it emits on its own (on start,
   * from its timers and invoked watchers). A fact emitted while handling `host.send(id, event,
   * cause)` carries that cause instead.
   */
  correlation?: string;
  /** The seq of the fact that made the actor exist, stamped with `correlation`. */
  causation?: number;
  /** Drives the machine's delays; tests pass a SimulatedClock. */
  clock?: ActorClock;
  /**
   * Where the facts of a child the actor spawns go, by the child's id (a session of an agent goes to
   * its `session:` stream); a child with no stream here emits nothing anyone records.
   */
  childStream?: (childId: string) => string | null;
  /**
   * Record the actor's inputs on its stream (`actor.started`, `actor.input`, `actor.timer`), so
   * `svc events replay --check` re-drives its machine from the log alone (journal-replay.ts). The
   * machine's invoked actors must be the only way outside news reaches it, and their events JSON.
   */
  journal?: JournalSpec;
}

/** Which machine a journaled actor runs, by the name replay looks it up under, and its version. */
export interface JournalSpec {
  machine: string;
  version: number;
}

interface Hosted {
  actor: Actor<AnyStateMachine>;
  stream: string;
  subs: { unsubscribe(): void }[];
  /** What the event being handled right now was caused by; xstate emits synchronously inside `send`. */
  handling: Cause | undefined;
  /** While `sendAndCommit` delivers an event: the appends of the facts it causes. */
  collecting: Promise<unknown>[] | null;
  /** Records an input on the actor's stream, when it is journaled. */
  journal: ((type: string, data: Record<string, unknown>) => void) | null;
}

/** How to bring children of a live actor back after a restart: each stream folded into the event that re-creates its child. */
export interface ChildRestoreSpec {
  streamPrefix: string;
  types?: readonly string[];
  /** The event to send the parent, or null when the stream holds nothing to bring back. */
  fold(stream: string, events: AnyEnvelope[]): { type: string } | null;
}

/** How to bring a kind of actor back after a restart: fold its stream into a state, or null when finished. */
export interface RestoreSpec<M extends AnyStateMachine> {
  streamPrefix: string;
  /** Only these types are read (the fold's inputs), so a restore does not load every chunk of every stream. */
  types?: readonly string[];
  machine: M;
  fold(events: AnyEnvelope[]): { value: string; context: Record<string, unknown> } | null;
}

/**
 * Owns every live actor: creates them from machines whose side effects were bound with
 * `.provide()`, publishes what they emit, reports crashes as events, and stops them cleanly.
 */
export class ActorHost {
  private readonly actors = new Map<string, Hosted>();

  constructor(private readonly bus: Bus) {}

  spawn<M extends AnyStateMachine>(id: string, machine: M, opts: SpawnOptions<M>): Actor<M> {
    if (this.actors.has(id)) throw new SvcError('actor-exists', `an actor named ${id} is already running`);
    const subs: { unsubscribe(): void }[] = [];
    const own: Cause = {
      ...(opts.causation !== undefined ? { causation: opts.causation } : {}),
      ...(opts.correlation !== undefined ? { correlation: opts.correlation } : {}),
    };
    let root: unknown = null;
    const hosted: Hosted = { actor: null as unknown as Actor<AnyStateMachine>, stream: opts.stream, subs, handling: undefined, collecting: null, journal: null };
    // What a machine hands to `emit(...)` becomes a persisted fact on its stream.
    const record = (stream: string, fact: Fact) => {
      const why = hosted.handling ?? own;
      const appended = this.bus.publish({ ...fact, stream, ...why, ...(opts.by ? { by: opts.by } : {}) });
      hosted.collecting?.push(appended);
      appended.catch((err) => this.bus.emitLog('error', `actor ${id}: could not record ${fact.type}: ${describeError(err)}`));
    };
    if (opts.journal) hosted.journal = (type, data) => record(opts.stream, { type, data: jsonSafe(data) } as Fact);
    const journal = hosted.journal;
    const clock = journal ? journaledClock(opts.clock ?? REAL_CLOCK, (n) => journal(ACTOR_EVENTS.timer, { n })) : opts.clock;
    const inspect = (ev: { type: string; actorRef: unknown; sourceRef?: { id: string }; event?: { type: string } }) => {
      if (root === null || ev.actorRef === root) {
        // News from a child it invoked (a CLI's output, a watcher's read) is an input like any other.
        if (journal && ev.type === '@xstate.event' && root !== null && ev.sourceRef && ev.sourceRef !== root) journal(ACTOR_EVENTS.input, { event: ev.event, from: ev.sourceRef.id });
        return;
      }
      // Children are announced as they are created, before they can emit: their facts are never missed.
      const child = ev.actorRef as { id: string; on?: (t: '*', fn: (f: Fact) => void) => { unsubscribe(): void } };
      if (ev.type !== '@xstate.actor' || !opts.childStream || !child.on) return;
      const stream = opts.childStream(child.id);
      if (stream !== null) subs.push(child.on('*', (fact) => record(stream, fact)));
    };
    const actor = createActor(machine, {
      id,
      ...(opts.input !== undefined ? { input: opts.input } : {}),
      ...(opts.snapshot !== undefined ? { snapshot: opts.snapshot } : {}),
      ...(clock ? { clock } : {}),
      ...(opts.childStream || journal ? { inspect } : {}),
    }) as Actor<M>;
    root = actor;
    hosted.actor = actor as Actor<AnyStateMachine>;
    subs.push(actor.on('*', (fact: Fact) => record(opts.stream, fact)));
    subs.push(
      actor.subscribe({
        error: (err) => {
          this.actors.delete(id);
          for (const s of subs) s.unsubscribe();
          void this.bus
            .publish({ stream: opts.stream, type: ACTOR_EVENTS.crashed, data: { id, error: describeError(err) }, ...(hosted.handling ?? own) })
            .catch(() => undefined);
        },
        complete: () => {
          this.actors.delete(id);
          for (const s of subs) s.unsubscribe();
        },
      }),
    );
    this.actors.set(id, hosted);
    if (opts.journal) {
      const snapshot = opts.snapshot as { value: unknown; context: unknown } | undefined;
      const from = snapshot !== undefined ? { snapshot: { value: snapshot.value, context: snapshot.context } } : { input: opts.input ?? null };
      hosted.journal!(ACTOR_EVENTS.started, { id, machine: opts.journal.machine, version: opts.journal.version, ...from });
    }
    actor.start();
    return actor;
  }

  /**
   * Deliver an event to a hosted actor, stamping `cause` (a command's, or a fact's via
   * `followsFrom`) on the facts the actor emits while handling it.
   */
  send<E extends { type: string }>(id: string, event: E, cause?: Cause): void {
    const hosted = this.actors.get(id);
    if (!hosted) throw new SvcError('no-actor', `no actor named ${id} is running`);
    const outer = hosted.handling;
    hosted.handling = cause ?? outer;
    try {
      hosted.journal?.(ACTOR_EVENTS.input, { event });
      hosted.actor.send(event);
    } finally {
      hosted.handling = outer;
    }
  }

  /**
   * `send`, then wait until the facts it caused (the actor's and its children's) are committed;
   * rejects with the first that could not be, so a caller never acknowledges what the log lacks.
   * Each call waits for its own facts only. Callers may read snapshots synchronously before awaiting.
   */
  sendAndCommit<E extends { type: string }>(id: string, event: E, cause?: Cause): Promise<void> {
    const hosted = this.actors.get(id);
    if (!hosted) throw new SvcError('no-actor', `no actor named ${id} is running`);
    const outer = hosted.collecting;
    const mine: Promise<unknown>[] = [];
    hosted.collecting = mine;
    try {
      this.send(id, event, cause);
    } finally {
      hosted.collecting = outer;
    }
    return Promise.all(mine).then(() => undefined);
  }

  get<M extends AnyStateMachine = AnyStateMachine>(id: string): Actor<M> | undefined {
    return this.actors.get(id)?.actor as Actor<M> | undefined;
  }

  ids(): string[] {
    return [...this.actors.keys()];
  }

  stop(id: string): void {
    const hosted = this.actors.get(id);
    if (!hosted) return;
    this.actors.delete(id);
    hosted.actor.stop();
    for (const s of hosted.subs) s.unsubscribe();
  }

  stopAll(): void {
    for (const id of [...this.actors.keys()].reverse()) this.stop(id);
  }

  /**
   * Re-create the unfinished actors of one kind from their streams in the log. Returns the ids
   * restored; the caller decides what to tell them (e.g. that the process they ran is gone).
   */
  restore<M extends AnyStateMachine>(log: EventLog, spec: RestoreSpec<M>, idOf: (stream: string) => string): string[] {
    const restored: string[] = [];
    for (const [stream, events] of streamsOf(log, spec)) {
      const state = spec.fold(events);
      if (!state) continue;
      const snapshot = spec.machine.resolveState(state as never) as SnapshotFrom<M>;
      const id = idOf(stream);
      // What a restored actor does on its own from now on follows from the last fact it was restored from.
      this.spawn(id, spec.machine, { stream, snapshot, ...followsFrom(events.at(-1)!) });
      restored.push(id);
    }
    return restored;
  }

  /**
   * Bring back the children of live actor `parentId` (an agent's sessions) from their streams: each
   * folds into an event the parent handles by re-creating that child. Returns how many came back.
   */
  restoreChildren(log: EventLog, parentId: string, spec: ChildRestoreSpec): number {
    let restored = 0;
    for (const [stream, events] of streamsOf(log, spec)) {
      const event = spec.fold(stream, events);
      if (!event) continue;
      this.send(parentId, event, followsFrom(events.at(-1)!));
      restored++;
    }
    return restored;
  }
}

/** Counts the delays an actor schedules, so the log can say which one fired; replay counts the same way. */
function journaledClock(inner: ActorClock, fired: (n: number) => void): ActorClock {
  let next = 0;
  return {
    setTimeout: (fn, ms) => {
      const n = next++;
      return inner.setTimeout(() => {
        fired(n);
        fn();
      }, ms);
    },
    clearTimeout: (id) => inner.clearTimeout(id),
  };
}

/** What an input becomes in the log: JSON, with an Error as its message (xstate hands errors over as objects). */
function jsonSafe(data: Record<string, unknown>): Record<string, unknown> {
  return JSON.parse(JSON.stringify(data, (_k, value: unknown) => (value instanceof Error ? { message: describeError(value) } : value))) as Record<string, unknown>;
}

/** A kind's streams in the log, each with its facts in order. */
function streamsOf(log: EventLog, spec: { streamPrefix: string; types?: readonly string[] }): Map<string, AnyEnvelope[]> {
  const byStream = new Map<string, AnyEnvelope[]>();
  for (const e of log.read({ streamPrefix: spec.streamPrefix, ...(spec.types ? { types: spec.types } : {}) })) {
    let list = byStream.get(e.stream);
    if (!list) byStream.set(e.stream, (list = []));
    list.push(e);
  }
  return byStream;
}

export type { Subscription };
