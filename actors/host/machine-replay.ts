import { createActor, type AnyStateMachine, type EventFrom, type InputFrom } from 'xstate';
import * as v from 'valibot';
import { agentMachine, applySessionEvent, daemonMachine, inputOfRecord, interruptedTurnMachine, previousRun, restoreInterruptedTurn, sessionMachine, taskMachine, taskRunsMachine, workflowRunMachine, type TaskCreated, type TaskMachineEvent } from '../../machines/index.js';
import type { ActorClock } from './actor-host.js';
import {
  ACTOR_EVENTS,
  AGENT_EVENTS,
  DAEMON_EVENTS,
  INTERRUPTED_REASON,
  PrincipalSchema,
  RunDefinitionSchema,
  SESSION_EVENTS,
  SHUTDOWN_ABORT,
  TASK_EVENTS,
  TASK_RUN_EVENTS,
  TURN_EVENTS,
  WORKFLOW_RUN_EVENTS,
  type AnyEnvelope,
  type Listener,
  type EventPayload,
  type WorkflowDefinition,
} from '../../schemas/index.js';

import { redriveJournal, JOURNALED_MACHINES } from './journal-replay.js';
import { show, type EmittedFact, type ReplayDiff } from './replay-diff.js';

/*
 * Replay as a test (DESIGN.md §8): re-drive a machine from the inputs its stream records and
 * compare what it emits with the facts the log holds, as Temporal replays a workflow's history.
 *
 * How inputs are recovered: the log does not store the events a machine was sent, so each spec
 * reads them back from the facts. A machine's facts record what it was given (`daemon.started`
 * holds the run's input, `daemon.stopping` the stop reason, `turn.notice_delivered` the chat that
 * asked), and a fact some other writer recorded on the stream can start an actor (the
 * `turn.failed` recovery records opens an interrupted turn). What the check then proves is that
 * the machine, given those inputs, emits exactly the log's facts in the log's order — nothing
 * missing (a `daemon.recovered` the log lacks), nothing extra, no payload that contradicts the
 * machine's state (a `daemon.stopped` whose reason is not the stop's).
 *
 * Machines whose inputs are outside the log are not re-driven: config and registry (the file's
 * text), turns (the CLI's output, of which the log keeps only checkpoints), connections (frames).
 * Sessions are, except for an expiry: the rules it was decided by are config, so a session the log
 * says expired is taken as given and re-driven from there.
 */

/** What one fact tells the replay: the machine was started or sent something, and whether the fact is the machine's own. */
export interface RecordedInput<M extends AnyStateMachine> {
  /** A fresh actor (given with `send`: started first, then sent it). */
  start?: InputFrom<M> | { snapshot: { value: string; context: object } };
  send?: EventFrom<M>;
  /** The machine emits this fact (compare it); false for facts other writers put on the stream. */
  own: boolean;
  /**
   * For a machine with delays (`clocked`): the fact's time. The replay clock is moved there before
   * the fact, firing the delays due by then; with `restart`, it jumps there without firing them,
   * since the process that had armed them was gone.
   */
  at?: number;
  restart?: boolean;
}

export interface MachineReplay<M extends AnyStateMachine = AnyStateMachine> {
  name: string;
  machine: M;
  /** The streams this machine's actors write. */
  streams(stream: string): boolean;
  /** Its actors run on a replay clock moved by the facts' times (`at`), so their own delays fire where the log says. */
  clocked?: boolean;
  /** `prior` is the stream's facts before `fact`, in order. */
  inputOf(fact: AnyEnvelope, prior: readonly AnyEnvelope[]): RecordedInput<M>;
}

const daemonReplay: MachineReplay<typeof daemonMachine> = {
  name: 'daemon',
  machine: daemonMachine,
  streams: (s) => s === 'daemon',
  inputOf(fact, prior) {
    const d = fact.data;
    switch (fact.type) {
      case DAEMON_EVENTS.started:
        return {
          start: { pid: Number(d.pid), version: String(d.version), home: String(d.home), node: String(d.node), previous: previousRun(prior) },
          own: true,
        };
      case DAEMON_EVENTS.ready:
        return {
          send: {
            type: 'ready',
            subsystems: Array.isArray(d.subsystems) ? d.subsystems.map(String) : [],
            ...(Array.isArray(d.listeners) ? { listeners: d.listeners as Listener[] } : {}),
          },
          own: true,
        };
      case DAEMON_EVENTS.stopping:
        return { send: { type: 'stop', reason: String(d.reason) }, own: true };
      case DAEMON_EVENTS.stopped:
        return { send: { type: 'stopped' }, own: true };
      default:
        // daemon.recovered follows from the start; anything else the daemon machine would have to explain.
        return { own: true };
    }
  },
};

const interruptedTurnReplay: MachineReplay<typeof interruptedTurnMachine> = {
  name: 'interrupted-turn',
  machine: interruptedTurnMachine,
  streams: (s) => s.startsWith('turn:'),
  inputOf(fact, prior) {
    const d = fact.data;
    const cut = (fact.type === TURN_EVENTS.failed && d.reason === INTERRUPTED_REASON) || (fact.type === TURN_EVENTS.aborted && d.cause === SHUTDOWN_ABORT);
    if (cut) {
      const state = restoreInterruptedTurn([...prior, fact]);
      return state ? { start: { snapshot: state }, own: false } : { own: false };
    }
    if (fact.type === TURN_EVENTS.notice_delivered) return { send: { type: 'notice.take', session_key: String(d.session_key) }, own: true };
    if (fact.type === TURN_EVENTS.retried) return { send: { type: 'retry.take', request_id: String(d.request_id) }, own: true };
    return { own: false };
  },
};

const agentReplay: MachineReplay<typeof agentMachine> = {
  name: 'agent',
  machine: agentMachine,
  streams: (s) => s.startsWith('agent:'),
  inputOf(fact) {
    const d = fact.data;
    // Each run of the daemon starts the agent afresh on the same stream.
    if (fact.type === AGENT_EVENTS.started) {
      return { start: { name: String(d.name), is_main: d.is_main === true, provider: String(d.provider), model: String(d.model), workspace: String(d.workspace) }, own: true };
    }
    if (fact.type === AGENT_EVENTS.stopped) return { send: { type: 'stop', reason: String(d.reason) }, own: true };
    return { own: true };
  },
};

/** The default of `session_age_warning_hours`, for facts recorded before they carried it. */
const DEFAULT_WARNING_HOURS = 12;

const sessionReplay: MachineReplay<typeof sessionMachine> = {
  name: 'session',
  machine: sessionMachine,
  streams: (s) => s.startsWith('session:'),
  inputOf(fact, prior) {
    const d = fact.data;
    if (fact.type === SESSION_EVENTS.started) {
      const where = { agent: String(d.agent), key: String(d.key), transport: String(d.transport), chat_id: Number(d.chat_id), topic_id: d.topic_id === null ? null : Number(d.topic_id) };
      const now = Number(d.created_at);
      if (d.reason === 'new' || d.reason === 'reset') return { ...(prior.length === 0 ? { start: { state: null } } : {}), send: { type: 'reset', where, reason: d.reason, now }, own: true };
      if (d.reason === 'first') {
        // The rules do not matter to a chat's first message: there is no session to expire.
        const rules = { idleTimeoutMinutes: 0, dailyResetEnabled: false, dailyResetHour: 0, timezone: 'UTC', maxSessionMessages: 0 };
        return { ...(prior.length === 0 ? { start: { state: null } } : {}), send: { type: 'begin-turn', where, freshAsked: false, rules, now }, own: true };
      }
      return { start: { snapshot: { value: 'open', context: { state: applySessionEvent(null, fact), refused: null } } }, own: false };
    }
    if (fact.type === SESSION_EVENTS.turn_recorded) {
      return {
        send: {
          type: 'record-turn',
          turn_id: String(d.turn_id),
          provider: String(d.provider),
          session_id: d.session_id === null ? null : String(d.session_id),
          session_reset: d.session_reset === true,
          warningHours: typeof d.warning_hours === 'number' ? d.warning_hours : DEFAULT_WARNING_HOURS,
          now: Number(d.at_ms),
        },
        own: true,
      };
    }
    if (fact.type === SESSION_EVENTS.ended) return { send: { type: 'end', reason: String(d.reason), now: Number(d.at_ms) }, own: true };
    return { own: false };
  },
};

/**
 * Every task fact is the machine's own and names the event that caused it (times included, since
 * the hub hands the machine its clock), so a task stream re-drives fact by fact: what it proves is
 * that each transition was legal from where the task stood (no answer without a question, no
 * resume of a task without a session, no delete of a running one) and that the payloads agree.
 */
const taskReplay: MachineReplay<typeof taskMachine> = {
  name: 'task',
  machine: taskMachine,
  streams: (s) => s.startsWith('task:'),
  inputOf(fact) {
    // The log's payloads passed the event schemas when they were appended.
    const d = fact.data as { question: string; answer: string; prompt: string; result: string; reason: string; at: number; provider?: string | null; model?: string | null; session_id?: string | null };
    const send = (event: TaskMachineEvent) => ({ send: event, own: true });
    const run = { provider: d.provider ?? null, model: d.model ?? null, session_id: d.session_id ?? null, now: d.at };
    switch (fact.type) {
      case TASK_EVENTS.created:
        return { start: d as unknown as TaskCreated, own: true };
      case TASK_EVENTS.question_asked:
        return send({ type: 'ask', question: d.question, now: d.at });
      case TASK_EVENTS.answered:
        return send({ type: 'answer', answer: d.answer, now: d.at });
      case TASK_EVENTS.resumed:
        return send({ type: 'resume', prompt: d.prompt, now: d.at, ...(d.provider && d.session_id ? { found: { provider: d.provider, session_id: d.session_id } } : {}) });
      case TASK_EVENTS.completed:
        return send({ type: 'complete', result: d.result, ...run });
      case TASK_EVENTS.failed:
        return send({ type: 'fail', reason: d.reason, result: d.result, ...run });
      case TASK_EVENTS.cancelled:
        return send({ type: 'cancel', now: d.at });
      case TASK_EVENTS.deleted:
        return send({ type: 'delete', now: d.at });
      default:
        return { own: false };
    }
  },
};

/**
 * The task run queue journals every input it is given (a run asked for, a run's end, a drop, the
 * sweep timer's fire) as the first fact it emits for it, with the `max_parallel` it decided by, and
 * each daemon start opens a fresh queue (`task_run.opened`). So the stream alone re-drives it, and
 * what is checked is the decisions: which queued run started when, and that none started past
 * `max_parallel` or out of arrival order.
 */
const taskRunsReplay: MachineReplay<typeof taskRunsMachine> = {
  name: 'task-runs',
  machine: taskRunsMachine,
  streams: (s) => s === 'task-runs',
  inputOf(fact) {
    const d = fact.data as { task_id: string; run: number; chat_id: number; max_parallel: number };
    switch (fact.type) {
      case TASK_RUN_EVENTS.opened:
        return { start: {} as never, own: true };
      case TASK_RUN_EVENTS.queued:
        return { send: { type: 'request', task_id: d.task_id, run: d.run, chat_id: d.chat_id, max_parallel: d.max_parallel }, own: true };
      case TASK_RUN_EVENTS.ended:
        return { send: { type: 'ended', task_id: d.task_id, run: d.run, max_parallel: d.max_parallel }, own: true };
      case TASK_RUN_EVENTS.dropped:
        return { send: { type: 'drop', task_id: d.task_id, run: d.run, max_parallel: d.max_parallel }, own: true };
      case TASK_RUN_EVENTS.sweep_due:
        return { send: { type: 'sweep' }, own: true };
      default:
        // task_run.started: the machine's own decision.
        return { own: true };
    }
  },
};

/**
 * A run's outside inputs are journaled (`workflow.input_received`) and sent as they are; its start is
 * the `workflow.run_started` it wrote. Timeouts and retry delays are the machine's own delays, fired
 * by the replay clock as the facts' times pass, and a resume after a restart jumps the clock without
 * firing what the old process had armed. Every other fact the machine must emit on its own.
 */
const workflowRunReplay: MachineReplay<typeof workflowRunMachine> = {
  name: 'workflow-run',
  machine: workflowRunMachine,
  streams: (s) => s.startsWith('run:'),
  clocked: true,
  inputOf(fact) {
    // The log's payloads passed the event schemas when they were appended.
    const at = Number((fact.data as { at_ms?: unknown }).at_ms);
    if (fact.type === WORKFLOW_RUN_EVENTS.run_started) {
      const d = fact.data as EventPayload<typeof WORKFLOW_RUN_EVENTS.run_started>;
      const { at_ms: _at, workflow_id: _w, definition, principal, ...start } = d;
      return {
        start: { ...start, definition: v.parse(RunDefinitionSchema, definition) as WorkflowDefinition, principal: v.parse(PrincipalSchema, principal) },
        send: { type: 'start', now: at },
        own: true,
        at,
      };
    }
    if (fact.type === WORKFLOW_RUN_EVENTS.input_received) {
      const { input } = fact.data as EventPayload<typeof WORKFLOW_RUN_EVENTS.input_received>;
      return { send: inputOfRecord(input, at), own: true, at, restart: input.type === 'resume' };
    }
    return Number.isFinite(at) ? { own: true, at } : { own: true };
  },
};

/** Every machine the log holds enough to re-drive. */
export const MACHINE_REPLAYS: readonly MachineReplay[] = [
  daemonReplay as unknown as MachineReplay,
  interruptedTurnReplay as unknown as MachineReplay,
  agentReplay as unknown as MachineReplay,
  sessionReplay as unknown as MachineReplay,
  taskReplay as unknown as MachineReplay,
  taskRunsReplay as unknown as MachineReplay,
  workflowRunReplay as unknown as MachineReplay,
];

const HOST_WRITTEN = new Set<string>(Object.values(ACTOR_EVENTS));

/** Re-drives one stream; returns where the machine and the log disagree (empty when they agree). */
export function redriveStream(spec: MachineReplay, stream: string, facts: readonly AnyEnvelope[]): ReplayDiff[] {
  const diffs: ReplayDiff[] = [];
  const diff = (seq: number | null, line: string) => diffs.push({ machine: spec.name, stream, seq, line });
  let actor: ReturnType<typeof createActor<AnyStateMachine>> | undefined;
  const clock = spec.clocked ? new ReplayClock() : undefined;
  let emitted: EmittedFact[] = [];
  const leftover = (after: number) => {
    for (const e of emitted) diff(after, `after seq ${after} the machine emitted ${show(e)}, which the log does not hold`);
    emitted = [];
  };
  try {
    for (let i = 0; i < facts.length; i++) {
      const fact = facts[i]!;
      // Written by the host (a crash, a journaled actor's inputs), not emitted by the machine.
      if (HOST_WRITTEN.has(fact.type)) continue;
      const recorded = spec.inputOf(fact, facts.slice(0, i));
      if (clock && recorded.at !== undefined) {
        if (recorded.restart) clock.jump(recorded.at);
        else clock.advance(recorded.at);
      }
      if (recorded.start !== undefined) {
        leftover(facts[i - 1]?.seq ?? 0);
        actor?.stop();
        const start = recorded.start as { snapshot?: { value: string; context: object } };
        actor = createActor(
          spec.machine,
          { ...(start.snapshot ? { snapshot: spec.machine.resolveState(start.snapshot as never) } : { input: recorded.start }), ...(clock ? { clock } : {}) },
        );
        actor.on('*', (e: EmittedFact) => void emitted.push(e));
        actor.start();
      }
      if (recorded.send !== undefined) {
        if (!actor) diff(fact.seq, `seq ${fact.seq} ${show(fact)}: no ${spec.name} actor was running to be sent ${recorded.send.type}`);
        else actor.send(recorded.send);
      }
      if (!recorded.own) continue;
      const next = emitted.shift();
      if (!next) {
        if (actor || recorded.send === undefined) diff(fact.seq, `seq ${fact.seq}: the log has ${show(fact)}, the machine emitted nothing`);
      } else if (show(next) !== show(fact)) {
        diff(fact.seq, `seq ${fact.seq}: the log has ${show(fact)}, the machine emitted ${show(next)}`);
      }
    }
    leftover(facts.at(-1)?.seq ?? 0);
  } catch (err) {
    diff(null, `the machine threw while being re-driven: ${(err as Error).message}`);
  } finally {
    actor?.stop();
  }
  return diffs;
}

/**
 * The time of a replay: it moves only when a fact's time says so, and runs the delays due by then in
 * the order a clock would (earliest first, then in the order they were armed).
 */
class ReplayClock implements ActorClock {
  private now = 0;
  private nextId = 1;
  private readonly timers = new Map<number, { at: number; fn: () => void }>();

  setTimeout(fn: (...args: unknown[]) => void, ms: number): number {
    const id = this.nextId++;
    this.timers.set(id, { at: this.now + ms, fn });
    return id;
  }

  clearTimeout(id: unknown): void {
    this.timers.delete(id as number);
  }

  advance(to: number): void {
    for (;;) {
      let next: [number, { at: number; fn: () => void }] | undefined;
      for (const entry of this.timers) if (entry[1].at <= to && (!next || entry[1].at < next[1].at)) next = entry;
      if (!next) break;
      this.timers.delete(next[0]);
      this.now = Math.max(this.now, next[1].at);
      next[1].fn();
    }
    this.now = Math.max(this.now, to);
  }

  jump(to: number): void {
    this.now = Math.max(this.now, to);
  }
}

/**
 * Re-drives every machine over every stream it writes in `events` (any order of streams, log order
 * within): a journaled actor's stream from its journal, the others from what their facts record.
 */
export function redriveMachines(events: Iterable<AnyEnvelope>, specs: readonly MachineReplay[] = MACHINE_REPLAYS): { machines: number; streams: number; diffs: ReplayDiff[] } {
  const byStream = new Map<string, AnyEnvelope[]>();
  const journaled = new Set<string>();
  const runStarts: number[] = [];
  for (const e of events) {
    if (e.type === ACTOR_EVENTS.started) journaled.add(e.stream);
    if (e.type === DAEMON_EVENTS.started) runStarts.push(e.seq);
    if (!journaled.has(e.stream) && !specs.some((s) => s.streams(e.stream))) continue;
    let list = byStream.get(e.stream);
    if (!list) byStream.set(e.stream, (list = []));
    list.push(e);
  }
  const diffs: ReplayDiff[] = [];
  for (const [stream, facts] of byStream) {
    if (journaled.has(stream)) diffs.push(...redriveJournal(stream, facts, runStarts));
    for (const spec of specs) if (spec.streams(stream)) diffs.push(...redriveStream(spec, stream, facts));
  }
  return { machines: specs.length + JOURNALED_MACHINES.length, streams: byStream.size, diffs };
}
