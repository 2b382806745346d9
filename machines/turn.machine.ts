import { and, assign, emit, enqueueActions, fromCallback, sendTo, setup, stateIn, type EventObject } from 'xstate';
import {
  TURN_EVENTS,
  type Fact,
  type StreamEvent,
  type TurnFile,
  type TurnKind,
  type TurnStatus,
  type TurnUsage,
} from '../schemas/index.js';
import {
  CHECKPOINT_INTERVAL_MS,
  EMPTY_PROGRESS,
  checkpointDue,
  decideExit,
  extractFiles,
  foldStreamEvent,
  streamedText,
  usageOf,
  type ProcessExitInfo,
  type TurnProgress,
} from './turn.logic.js';

export interface TurnInput {
  turn_id: string;
  request_id: string;
  agent: string;
  session_key: string;
  kind: TurnKind;
  /**
   * The user's message as sent, recorded on `turn.started` so `/retry` can ask it again after a
   * restart cut the answer. The log holds answers already; this puts the questions beside them.
   */
  prompt: string;
  provider: string;
  model: string | null;
  /** Provider session being continued, if any. */
  resumeSessionId: string | null;
  /** The bucket for this kind of turn (TimeoutConfig), in ms. */
  timeoutMs: number;
  extendOnActivity: boolean;
  extensionMs: number;
  maxExtensions: number;
}

/** What the `cli` actor is told to run; the actor knows the rest of the request. */
export interface CliAttempt {
  attempt: number;
  streaming: boolean;
  /** null starts a fresh provider session (first turn, or after a SIGKILL reset). */
  resumeSessionId: string | null;
}

export type TurnEvent =
  /** `startTime` and `bootId` (from /proc, null elsewhere) let a restart recognise the group after the pid is reused. */
  | { type: 'cli.spawned'; pid: number; startTime: number | null; bootId: string | null }
  /** What the CLI's stdout held since the last such event, in order (the `cli` actor batches them). */
  | { type: 'cli.events'; events: StreamEvent[] }
  | { type: 'cli.exited'; exit: ProcessExitInfo }
  | { type: 'abort'; reason: string };

export interface TurnResult {
  status: TurnStatus;
  text: string;
  is_error: boolean;
  stream_fallback: boolean;
  files: TurnFile[];
  session_id: string | null;
  usage: TurnUsage | null;
  cost_usd: number | null;
  duration_ms: number | null;
  reason: string | null;
  error: string | null;
  /** True when the provider session was reset (SIGKILL recovery): the caller forgets the old id. */
  session_reset: boolean;
  /** The CLI's own non-zero exit code, when that is how it failed. */
  exit_code?: number;
}

interface TurnContext extends TurnInput {
  attempt: number;
  streaming: boolean;
  recovered: boolean;
  fellBack: boolean;
  extensions: number;
  pid: number | null;
  progress: TurnProgress;
  /**
   * The tail of `progress.streamed` not yet in the log as a `turn.progressed` checkpoint, kept
   * apart because slicing it off `streamed` copies the whole answer so far at every checkpoint.
   */
  unsaved: string;
  killReason: 'timeout' | 'aborted' | null;
  /** The `abort` event's reason (`user`, `shutdown`, ...): recorded so a restart can tell a stop of svc from a /stop. */
  abortCause: string | null;
  result: TurnResult | null;
  /** CLI events since the activity window was last armed. */
  heardInWindow: number;
}

const finish = (c: TurnContext, status: TurnStatus, fields: Partial<TurnResult>): TurnResult => {
  const text = fields.text ?? '';
  return {
    status,
    text,
    is_error: status !== 'completed',
    stream_fallback: c.fellBack,
    files: extractFiles(text),
    session_id: c.progress.sessionId ?? (c.recovered ? null : c.resumeSessionId),
    usage: usageOf(c.progress),
    cost_usd: c.progress.result?.costUsd ?? null,
    duration_ms: c.progress.result?.durationMs ?? null,
    reason: null,
    error: null,
    session_reset: c.recovered,
    ...fields,
  };
};

/** The CLI's own events reach live listeners from the `cli` actor directly; the machine only folds them. */
const heard = ['record'] as const;

const decide = (c: TurnContext, exit: ProcessExitInfo) => decideExit(c.progress, exit, { recovered: c.recovered, fellBack: c.fellBack });

/** A retry starts from nothing but the turn's identity and what it learned about the session. */
const freshAttempt = (c: TurnContext) => ({ attempt: c.attempt + 1, progress: EMPTY_PROGRESS, unsaved: '', pid: null, extensions: 0 });

/** Guards run before this event's `record`, so they count what the event brings on top of the context. */
const dueIs =
  (want: ReturnType<typeof checkpointDue>) =>
  ({ context, event }: { context: TurnContext; event: TurnEvent }) =>
    event.type === 'cli.events' && checkpointDue(context.unsaved.length, event.events) === want;

const resultFact = (r: TurnResult, abortCause: string | null): Fact => {
  const base = { text: r.text, session_id: r.session_id, stream_fallback: r.stream_fallback };
  switch (r.status) {
    case 'completed':
      return {
        type: TURN_EVENTS.completed,
        data: { ...base, files: r.files.map((f) => ({ ...f })), usage: r.usage ? { ...r.usage } : null, cost_usd: r.cost_usd, duration_ms: r.duration_ms },
      };
    case 'failed':
      return { type: TURN_EVENTS.failed, data: { ...base, reason: r.reason ?? 'unknown', error: r.error ?? '' } };
    case 'timed_out':
      return { type: TURN_EVENTS.timed_out, data: { ...base, reason: 'timeout' } };
    case 'aborted':
      return { type: TURN_EVENTS.aborted, data: { ...base, reason: r.reason ?? 'aborted', cause: abortCause } };
  }
};

/**
 * One CLI run for one message: spawn, stream, and end completed, failed, timed out or aborted.
 * The deadline and the "output arrived recently" window are xstate delays, so tests drive time
 * with a simulated clock; the process itself lives in the `cli` actor bound by `.provide()`.
 */
/** The name and version its journal is recorded under; a change to what it emits for the same inputs bumps the version. */
export const TURN_MACHINE = { machine: 'turn', version: 1 } as const;

export const turnMachine = setup({
  types: {
    input: {} as TurnInput,
    context: {} as TurnContext,
    events: {} as TurnEvent,
    emitted: {} as Fact,
    output: {} as TurnResult,
  },
  actors: {
    cli: fromCallback<EventObject, CliAttempt>(() => undefined),
  },
  actions: {
    /** Bound by the host: hand the machine's own stream chunks (a recovery's status) to live listeners (never persisted). */
    forward: (_, _params: { events: StreamEvent[] }) => undefined,
    /** Every state that hears the CLI folds what it said. */
    record: assign(({ context, event }) =>
      event.type === 'cli.events'
        ? {
            progress: event.events.reduce(foldStreamEvent, context.progress),
            unsaved: streamedText(context.unsaved, event.events),
            heardInWindow: context.heardInWindow + 1,
          }
        : {},
    ),
    /** Saves the text streamed since the last checkpoint; runs after `record` (its region comes later). */
    checkpoint: enqueueActions(({ context, enqueue }) => {
      const text = context.unsaved;
      if (!text) return;
      enqueue.emit({ type: TURN_EVENTS.progressed, data: { text } });
      enqueue.assign({ unsaved: '' });
    }),
  },
  delays: {
    deadline: ({ context }) => (context.extensions === 0 ? context.timeoutMs : context.extensionMs),
    activityWindow: ({ context }) => context.extensionMs,
    checkpointInterval: CHECKPOINT_INTERVAL_MS,
  },
  guards: {
    canExtend: and([
      ({ context }) => context.extendOnActivity && context.extensions < context.maxExtensions,
      stateIn('#turn.attempt.running.activity.recent'),
    ]),
  },
}).createMachine({
  id: 'turn',
  context: ({ input }) => ({
    ...input,
    attempt: 1,
    streaming: true,
    recovered: false,
    fellBack: false,
    extensions: 0,
    pid: null,
    progress: EMPTY_PROGRESS,
    unsaved: '',
    killReason: null,
    abortCause: null,
    result: null,
    heardInWindow: 0,
  }),
  entry: emit(({ context: c }) => ({
    type: TURN_EVENTS.started,
    data: {
      agent: c.agent,
      session_key: c.session_key,
      request_id: c.request_id,
      kind: c.kind,
      prompt: c.prompt,
      provider: c.provider,
      model: c.model,
      resumed: c.resumeSessionId !== null,
      timeout_ms: c.timeoutMs,
    },
  })),
  initial: 'attempt',
  states: {
    attempt: {
      invoke: {
        id: 'cli',
        src: 'cli',
        input: ({ context: c }) => ({
          attempt: c.attempt,
          streaming: c.streaming,
          resumeSessionId: c.recovered ? null : c.resumeSessionId,
        }),
      },
      on: {
        'cli.spawned': {
          actions: [
            assign({ pid: ({ event }) => event.pid }),
            // `pid` is also the group id; with the leader's start time and the boot id it names the group for a restart.
            emit(({ context, event }) => ({
              type: TURN_EVENTS.spawned,
              data: { pid: event.pid, start_time: event.startTime, boot_id: event.bootId, attempt: context.attempt, streaming: context.streaming },
            })),
          ],
        },
      },
      initial: 'running',
      states: {
        running: {
          type: 'parallel',
          states: {
            deadline: {
              initial: 'armed',
              states: {
                armed: {
                  after: {
                    deadline: [
                      {
                        guard: 'canExtend',
                        target: 'armed',
                        reenter: true,
                        actions: [
                          assign({ extensions: ({ context }) => context.extensions + 1 }),
                          emit(({ context }) => ({ type: TURN_EVENTS.extended, data: { extensions: context.extensions } })),
                        ],
                      },
                      { target: '#turn.attempt.killing', actions: assign({ killReason: 'timeout' }) },
                    ],
                  },
                },
              },
            },
            // "Output arrived recently" without a transition per chunk: chunks only count, and the
            // window's timer decides once per window whether any came (re-entering a state per
            // chunk re-armed a timer each time and cost more than the rest of the pipeline).
            activity: {
              initial: 'quiet',
              states: {
                quiet: { on: { 'cli.events': { target: 'recent', actions: heard } } },
                recent: {
                  entry: assign({ heardInWindow: 0 }),
                  on: { 'cli.events': { actions: heard } },
                  after: {
                    activityWindow: [{ guard: ({ context }) => context.heardInWindow > 0, target: 'recent', reenter: true }, { target: 'quiet' }],
                  },
                },
              },
            },
            // Streamed text reaches the log at most a second (or CHECKPOINT_MAX_CHARS) late, so a
            // crash of the daemon leaves the partial answer for recovery to hand to the user.
            checkpoint: {
              initial: 'clean',
              states: {
                clean: {
                  on: {
                    'cli.events': [
                      { guard: dueIs('now'), actions: 'checkpoint' },
                      { guard: dueIs('later'), target: 'dirty' },
                    ],
                  },
                },
                dirty: {
                  on: { 'cli.events': { guard: dueIs('now'), target: 'clean', actions: 'checkpoint' } },
                  after: { checkpointInterval: { target: 'clean', actions: 'checkpoint' } },
                },
              },
            },
          },
          on: {
            abort: { target: 'killing', actions: assign({ killReason: 'aborted', abortCause: ({ event }) => event.reason }) },
            'cli.exited': [
              {
                guard: ({ context, event }) => decide(context, event.exit).next === 'recover',
                target: '#turn.attempt',
                reenter: true,
                actions: [
                  emit(({ context, event }) => ({ type: TURN_EVENTS.recovering, data: { provider: context.provider, signal: event.exit.signal ?? 'SIGKILL' } })),
                  { type: 'forward', params: { events: [{ kind: 'status', status: 'recovering' }] } },
                  assign(({ context }) => ({ recovered: true, ...freshAttempt(context) })),
                ],
              },
              {
                guard: ({ context, event }) => decide(context, event.exit).next === 'fallback',
                target: '#turn.attempt',
                reenter: true,
                actions: [
                  emit({ type: TURN_EVENTS.fallback, data: { reason: 'no-output' } }),
                  assign(({ context }) => ({ fellBack: true, streaming: false, ...freshAttempt(context) })),
                ],
              },
              {
                target: '#turn.done',
                actions: assign({
                  result: ({ context, event }) => {
                    const d = decide(context, event.exit);
                    return d.next === 'completed'
                      ? finish(context, 'completed', { text: d.text })
                      : d.next === 'failed'
                        ? finish(context, 'failed', { text: d.text, reason: d.reason, error: d.error, ...(d.exitCode !== undefined ? { exit_code: d.exitCode } : {}) })
                        : finish(context, 'failed', { reason: 'internal', error: 'no decision' });
                  },
                }),
              },
            ],
          },
        },
        killing: {
          entry: sendTo('cli', { type: 'kill' }),
          on: {
            abort: {},
            'cli.events': { actions: heard },
            'cli.exited': {
              target: '#turn.done',
              actions: assign({
                result: ({ context: c }) =>
                  c.killReason === 'timeout'
                    ? finish(c, 'timed_out', { text: c.progress.streamed, reason: 'timeout', error: `no answer within the turn's time limit` })
                    : finish(c, 'aborted', { text: c.progress.streamed, reason: 'aborted' }),
              }),
            },
          },
        },
      },
    },
    done: {
      type: 'final',
      entry: emit(({ context }) => resultFact(context.result!, context.abortCause)),
    },
  },
  output: ({ context }) => context.result!,
});
