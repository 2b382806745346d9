import { followsFrom, type Bus, type Cause } from '../../bus/index.js';
import {
  INTERRUPTED_REASON,
  TURN_TRACE_TYPES,
  interruptedNotification,
  partialText,
  traceTurns,
  type InterruptedTurnContext,
  type TurnTrace,
} from '../../machines/index.js';
import { NOTIFICATION_COMMANDS, TURN_EVENTS, describeError, type ProcSnapshot } from '../../schemas/index.js';
import { procSnapshot, type EventLog } from '../../store/index.js';
import { endGroup } from './orphan-groups.js';

/** An interrupted turn that still owes its chat the notice or a `/retry`, and the stream it lives on. */
export type InterruptedTurn = InterruptedTurnContext & { stream: string };

export interface RecoveryReport {
  /** Turn streams recorded as failed by this recovery. */
  failed: string[];
  groupsEnded: number;
  processesEnded: number;
}

export interface RecoveryOptions {
  /**
   * Told of every turn this recovery cuts, in log order, before its `turn.failed` is published.
   * Turns an earlier run cut come back through `InterruptedTurns.restore` (ActorHost.restore).
   */
  owe?: (turn: InterruptedTurn) => void;
}

/**
 * A daemon that died mid-turn leaves the CLI's process group running and the turn open in the log.
 * On start: end every live process of each open turn's recorded groups (recognised by group id,
 * leader start time and boot id, so a reused pid is never touched), record the turn as failed with
 * the text it had checkpointed, and tell the user through a notification (the chat's own notice
 * and /retry go through `opts.owe`).
 */
export async function recoverOrphanTurns(log: EventLog, bus: Bus, opts: RecoveryOptions = {}): Promise<RecoveryReport> {
  const { open } = traceTurns(log.read({ streamPrefix: 'turn:', types: TURN_TRACE_TYPES }));
  const report: RecoveryReport = { failed: [], groupsEnded: 0, processesEnded: 0 };
  let snapshot: ProcSnapshot | null = null;
  for (const turn of open) {
    let ended = 0;
    for (const group of turn.groups) {
      // One look at /proc serves every group: it is taken once something needs checking.
      snapshot ??= procSnapshot();
      const n = endGroup(group, snapshot, (why) => bus.emitLog('info', `turn ${turn.stream}: left pid ${group.pgid} alone (${why})`));
      if (n > 0) report.groupsEnded++;
      ended += n;
    }
    report.processesEnded += ended;
    const text = capped(partialText(log.read({ stream: turn.stream, types: [TURN_EVENTS.progressed, TURN_EVENTS.recovering, TURN_EVENTS.fallback] })));
    if (turn.prompt !== null) opts.owe?.(owed(turn, text));
    // The failure follows from the last thing the turn recorded, and serves the same request.
    const last = log.read({ stream: turn.stream, descending: true, limit: 1 })[0]!;
    const failed = await bus.publish(
      {
        stream: turn.stream,
        type: TURN_EVENTS.failed,
        data: {
          reason: INTERRUPTED_REASON,
          error: 'svc stopped while this turn was running',
          text,
          session_key: turn.sessionKey,
          session_id: null,
          stream_fallback: false,
          pid: turn.groups.at(-1)?.pgid ?? null,
          ended_processes: ended,
        },
        ...followsFrom(last),
      },
      // Turn streams have two writers, the turn and recovery: recovery decided on what it read.
      { expectedVersion: last.seq },
    );
    report.failed.push(turn.stream);
    if (turn.prompt !== null) await notifyInterrupted(bus, { ...turn, text }, followsFrom(failed));
  }
  if (open.length > 0) {
    bus.emitLog(
      'warn',
      `recorded ${open.length} interrupted turn(s) as failed; ended ${report.groupsEnded} orphaned CLI process group(s) (${report.processesEnded} process(es))`,
    );
  }
  return report;
}

/**
 * An answer streamed for long enough outgrows what one fact may hold (4 MiB): its start is kept,
 * so recovery never fails on it (which would stop every later start too).
 */
const MAX_RECOVERED_CHARS = 1_000_000;
const capped = (text: string) => (text.length <= MAX_RECOVERED_CHARS ? text : `${text.slice(0, MAX_RECOVERED_CHARS)}\n[… the rest of the partial answer was too long to keep]`);

function owed(t: TurnTrace, text: string): InterruptedTurn {
  return { stream: t.stream, agent: t.agent, sessionKey: t.sessionKey, prompt: t.prompt ?? '', text, noticeDelivered: t.noticeDelivered, retried: t.retried };
}

/** The warning notification for an answer a restart cut off (a crash, or svc stopping mid-turn). */
export async function notifyInterrupted(bus: Bus, turn: { stream: string; agent: string; sessionKey: string; text: string }, cause: Cause = {}): Promise<void> {
  const { title, body } = interruptedNotification(turn, turn.text);
  try {
    await bus.send(
      NOTIFICATION_COMMANDS.create,
      { source: 'system', outcome: 'error', title, body, agent: turn.agent.slice(0, 200), source_id: turn.stream.slice(0, 200), status: INTERRUPTED_REASON },
      { by: 'system', ...cause },
    );
  } catch (e) {
    bus.emitLog('warn', `turn ${turn.stream}: could not notify about the interrupted answer: ${describeError(e)}`);
  }
}
