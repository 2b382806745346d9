import { randomUUID } from 'node:crypto';
import { EMPTY, Subject, type Observable, type Subscription } from 'rxjs';
import {
  AGENT_CHUNKS,
  AGENT_COMMANDS,
  SvcError,
  TURN_CHUNKS,
  describeError,
  type AbortOutcome,
  type Admission,
  type AgentAbort,
  type AgentAsk,
  type AgentList,
  type AgentMessage,
  type AgentTurnAbort,
  type AgentSummary,
  type ErrorCode,
  type Principal,
  type Reply,
  type Transient,
  type TurnChunk,
  type TurnOutcome,
} from '../schemas/index.js';
import type { Bus } from './bus.js';

/*
 * The one agent contract (DESIGN.md §2): every surface asks through `AgentClient.ask`, the runtime
 * answers through `serveAgents`. Routing by request id, the merging of text deltas and the one
 * batching stage live here and nowhere else.
 */

/** A merged delta stays a modest frame: far below any socket's backpressure cap and any client's frame limit. */
export const MAX_MERGED_DELTA_CHARS = 64 * 1024;

/** One request to an agent, as its sender sees it. */
export interface Asked {
  /** Also the correlation id of every fact the request causes. */
  readonly request_id: string;
  /** Queued by the runtime, or refused with a code (no chunks, and `outcome` rejects with that code). */
  readonly accepted: Promise<Admission>;
  /** The turn's live chunks; completes when it ends. Subscribe before yielding to the event loop. */
  readonly chunks$: Observable<TurnChunk>;
  /**
   * Rejects with an SvcError: the refusal, `command-timeout` past `timeoutMs`, or a failure after
   * acceptance. `internal-error` is a broken invariant: its message is for the log, not the caller.
   */
  readonly outcome: Promise<TurnOutcome>;
}

export interface AskOptions {
  /** Bound on the whole request (queueing included); absent: the turn's own deadline. */
  timeoutMs?: number;
  /** Pinned by tests; a random UUID otherwise. */
  requestId?: string;
}

interface Route {
  chunks: Subject<TurnChunk>;
  settle(reply: Reply): void;
}

const CHUNK_TYPES = new Set<string>(Object.values(TURN_CHUNKS));

/** Who a command is recorded as coming from. */
function byOf(p: Principal): string {
  return p.id ?? p.origin.transport;
}

/** The sender's side: one transient subscription routes every request's chunks and reply. */
export class AgentClient {
  private readonly routes = new Map<string, Route>();
  private readonly sub: Subscription;

  constructor(private readonly bus: Bus) {
    this.sub = bus.transient$.subscribe({
      next: (m) => {
        if (m.type !== AGENT_CHUNKS.replied && !CHUNK_TYPES.has(m.type)) return;
        const route = this.routes.get((m.data as { request_id?: string } | null)?.request_id ?? '');
        if (!route) return;
        if (m.type === AGENT_CHUNKS.replied) route.settle(m.data);
        else route.chunks.next(m as TurnChunk);
      },
      // The bus closed: no reply can come any more.
      complete: () => this.close(),
    });
  }

  ask(message: AgentAsk, principal: Principal, opts: AskOptions = {}): Asked {
    const requestId = opts.requestId ?? randomUUID();
    // A second request under a live id would take over the first one's chunks and reply.
    if (this.routes.has(requestId)) return refusedAsk(requestId, { code: 'duplicate-request', message: `request ${requestId} is still running` });
    const chunks = new Subject<TurnChunk>();
    let settle!: (reply: Reply) => void;
    const outcome = new Promise<TurnOutcome>((resolve, reject) => {
      let timer: NodeJS.Timeout | null = null;
      settle = (reply) => {
        if (!this.routes.delete(requestId)) return;
        if (timer) clearTimeout(timer);
        chunks.complete();
        if ('outcome' in reply) resolve(reply.outcome);
        else reject(new SvcError(reply.error.code, reply.error.message));
      };
      if (opts.timeoutMs !== undefined && opts.timeoutMs > 0 && Number.isFinite(opts.timeoutMs)) {
        const ms = opts.timeoutMs;
        timer = setTimeout(() => settle({ request_id: requestId, error: { code: 'command-timeout', message: `no answer from ${message.agent} within ${ms} ms` } }), ms);
      }
    });
    // Whoever only awaits `accepted` must not leave an unhandled rejection behind.
    outcome.catch(() => undefined);
    // Registered before sending: the runtime may answer before send() returns.
    this.routes.set(requestId, { chunks, settle });
    const data: AgentMessage = { ...message, request_id: requestId, principal };
    const accepted = this.bus.send(AGENT_COMMANDS.message, data, { by: byOf(principal) }).then(
      (): Admission => ({ accepted: true }),
      (e): Admission => {
        // A failure that is not an SvcError is a broken invariant: its detail is for the log, not the caller.
        if (!(e instanceof SvcError)) this.bus.emitLog('error', `agent request ${requestId} failed: ${describeError(e)}`);
        const refusal = e instanceof SvcError ? { code: e.code, message: e.message } : { code: 'internal-error' as const, message: 'internal error' };
        settle({ request_id: requestId, error: refusal });
        return { accepted: false, ...refusal };
      },
    );
    return { request_id: requestId, accepted, chunks$: chunks.asObservable(), outcome };
  }

  /** Chat-scoped: ends the chat's running turns (on `agent` only, when given) and drops what waits behind them. */
  abort(chatId: number, principal: Principal, agent?: string): Promise<AbortOutcome> {
    const data: AgentAbort = { chat_id: chatId, principal, ...(agent ? { agent } : {}) };
    return this.bus.send(AGENT_COMMANDS.abort, data, { by: byOf(principal) });
  }

  /** Ends one running turn of `agent`, by turn id or by the request that started it; nothing queued is touched. */
  abortTurn(target: { agent: string } & ({ turn_id: string } | { request_id: string }), cause: AgentTurnAbort['cause'], principal: Principal): Promise<AbortOutcome> {
    const data: AgentTurnAbort = { ...target, cause, principal };
    return this.bus.send(AGENT_COMMANDS.abortTurn, data, { by: byOf(principal) });
  }

  /** The agents this principal may use. */
  list(principal: Principal): Promise<AgentSummary[]> {
    const data: AgentList = { principal };
    return this.bus.send(AGENT_COMMANDS.list, data, { by: byOf(principal) });
  }

  /** Ends every request still waiting with `bus-closed`. */
  close(): void {
    this.sub?.unsubscribe();
    for (const route of [...this.routes.values()]) route.settle({ request_id: '', error: { code: 'bus-closed', message: 'the bus closed before the agent answered' } });
  }
}

/** A request refused before it was sent: no chunks, and its outcome rejects with the refusal. */
function refusedAsk(requestId: string, refusal: { code: ErrorCode; message: string }): Asked {
  const outcome = Promise.reject(new SvcError(refusal.code, refusal.message));
  outcome.catch(() => undefined);
  return { request_id: requestId, accepted: Promise.resolve({ accepted: false, ...refusal }), chunks$: EMPTY, outcome };
}

const clients = new WeakMap<Bus, AgentClient>();

/** The client of a bus: every edge shares it, so a chunk is routed once however many surfaces listen. */
export function agentsOf(bus: Bus): AgentClient {
  let c = clients.get(bus);
  if (!c) clients.set(bus, (c = new AgentClient(bus)));
  return c;
}

/** The runtime's side. `accept` queues a message (throws an SvcError to refuse it) and returns its outcome to come. */
export interface AgentService {
  accept(msg: AgentMessage): { outcome: Promise<TurnOutcome> } | Promise<{ outcome: Promise<TurnOutcome> }>;
  abort(req: AgentAbort): AbortOutcome | Promise<AbortOutcome>;
  /** Served only when given (`agent.abort_turn` then has no handler). */
  abortTurn?(req: AgentTurnAbort): AbortOutcome | Promise<AbortOutcome>;
  list(req: AgentList): AgentSummary[] | Promise<AgentSummary[]>;
}

/** Registers the agent commands on the bus; unsubscribe to stop serving them. */
export function serveAgents(bus: Bus, name: string, service: AgentService): Subscription {
  const out = turnStreamOf(bus);
  const sub = bus.handle(AGENT_COMMANDS.message, name, async (cmd) => {
    const msg = cmd.data;
    const { outcome } = await service.accept(msg);
    outcome.then(
      (o) => out.reply({ request_id: msg.request_id, outcome: o }),
      (e) => out.reply({ request_id: msg.request_id, error: e instanceof SvcError ? { code: e.code, message: e.message } : { code: 'internal-error', message: describeError(e) } }),
    );
    return { accepted: true as const };
  });
  sub.add(bus.handle(AGENT_COMMANDS.abort, name, (cmd) => service.abort(cmd.data)));
  const { abortTurn } = service;
  if (abortTurn) sub.add(bus.handle(AGENT_COMMANDS.abortTurn, name, (cmd) => abortTurn.call(service, cmd.data)));
  sub.add(bus.handle(AGENT_COMMANDS.list, name, (cmd) => service.list(cmd.data)));
  return sub;
}

/**
 * The one batching stage between a turn and its listeners: chunks emitted in the same tick leave
 * together at the end of it, consecutive text deltas of one request merged (up to
 * MAX_MERGED_DELTA_CHARS), so a burst of CLI lines costs every listener one message, not one per
 * line. A reply goes through the same queue, so it never overtakes the chunks before it.
 */
export class TurnStream {
  private batch: Transient[] = [];

  constructor(private readonly bus: Bus) {}

  /** Takes the chunk over: a text delta may be appended to until its tick ends. */
  chunk(c: TurnChunk): void {
    const last = this.batch.at(-1) as TurnChunk | undefined;
    if (
      c.type === TURN_CHUNKS.text_delta &&
      last?.type === TURN_CHUNKS.text_delta &&
      last.data.request_id === c.data.request_id &&
      last.data.text.length + c.data.text.length <= MAX_MERGED_DELTA_CHARS
    ) {
      last.data.text += c.data.text;
      return;
    }
    this.push(c);
  }

  reply(r: Reply): void {
    this.push({ stream: `request:${r.request_id}`, type: AGENT_CHUNKS.replied, data: r });
  }

  private push(m: Transient): void {
    if (this.batch.length === 0) queueMicrotask(() => this.flush());
    this.batch.push(m);
  }

  private flush(): void {
    const batch = this.batch;
    this.batch = [];
    for (const m of batch) this.bus.emitTransient(m);
  }
}

const streams = new WeakMap<Bus, TurnStream>();

/** The bus's one TurnStream: every turn's chunks share its batch. */
export function turnStreamOf(bus: Bus): TurnStream {
  let s = streams.get(bus);
  if (!s) streams.set(bus, (s = new TurnStream(bus)));
  return s;
}
