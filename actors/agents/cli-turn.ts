import { fromCallback, type EventObject } from 'xstate';
import type { CliAttempt, TurnEvent } from '../../machines/index.js';
import { describeError } from '../../schemas/index.js';
import { runProcess } from '../recovery/process-group.js';
import { readBootId } from '../../store/index.js';
import type { ProviderAdapter, StreamEvent, TurnRequest } from '../providers/provider.js';

export interface CliRunSpec {
  adapter: ProviderAdapter;
  /** Everything but what changes per attempt (streaming, resume). */
  request: Omit<TurnRequest, 'streaming' | 'resumeSessionId'>;
  /** The child's whole environment (host env, provider settings, .env, SVC_*), already composed. */
  env: Record<string, string>;
  /** Unique to this turn: gemini's system-prompt file goes here. */
  tempDir: string;
  graceMs?: number;
  /**
   * Each stdout read's events, in order, as soon as they are read: live listeners get them here,
   * not from the turn machine (which hears them batched, see MACHINE_BATCH_MS). Nothing comes after
   * the attempt reported its exit or was stopped.
   */
  live(events: StreamEvent[]): void;
}

/**
 * How long the turn machine may hear the CLI's events late. It only folds them (the answer so far,
 * activity, checkpoints), so a batch every few dozen milliseconds decides the same; a transition
 * per stdout read was most of the CPU a relayed line cost. A checkpoint can lag this much more.
 */
export const MACHINE_BATCH_MS = 25;

/**
 * The side of a turn that touches the OS: spawn the provider CLI in its own process group, parse
 * its lines, hand their events to live listeners, and report spawn, stream events and exit to the
 * turn machine (events always before the exit that follows them). Stopping this actor
 * (daemon shutdown) kills the process group, so a stopped turn never leaves a CLI running.
 */
export function cliTurnLogic(spec: CliRunSpec) {
  return fromCallback<EventObject, CliAttempt>(({ input, sendBack, receive }) => {
    const send = (e: TurnEvent) => sendBack(e);
    const request: TurnRequest = {
      ...spec.request,
      streaming: input.streaming,
      ...(input.resumeSessionId ? { resumeSessionId: input.resumeSessionId } : {}),
    };
    let killedByUs = false;
    let exited = false;
    let invocation;
    try {
      invocation = spec.adapter.buildInvocation(request, { tempDir: spec.tempDir });
    } catch (e) {
      exited = true;
      queueMicrotask(() =>
        send({ type: 'cli.exited', exit: { code: null, signal: null, killedByUs: false, errorText: '', spawnError: describeError(e) } }),
      );
      return () => undefined;
    }
    const parser = spec.adapter.createParser(input.resumeSessionId ? { sessionId: input.resumeSessionId } : {});
    let batch: StreamEvent[] = [];
    let batchTimer: NodeJS.Timeout | null = null;
    const flush = () => {
      if (batchTimer) clearTimeout(batchTimer);
      batchTimer = null;
      if (batch.length === 0) return;
      const events = batch;
      batch = [];
      send({ type: 'cli.events', events });
    };
    const forward = (events: StreamEvent[]) => {
      if (events.length === 0 || exited) return;
      spec.live(events);
      if (batch.length === 0) batchTimer = setTimeout(flush, MACHINE_BATCH_MS);
      for (const e of events) batch.push(e);
    };
    const handle = runProcess(
      { ...invocation, env: { ...spec.env, ...invocation.env }, cwd: request.cwd },
      {
        onLine: (line) => forward(parser.push(line)),
        onStderr: () => undefined,
        onOversizeLine: (length) => forward([{ kind: 'malformed', reason: `line of ${length} bytes over the limit`, sample: '' }]),
      },
      { inheritEnv: false, ...(spec.graceMs !== undefined ? { graceMs: spec.graceMs } : {}) },
    );
    if (handle.pid !== null) send({ type: 'cli.spawned', pid: handle.pid, startTime: handle.startTime, bootId: readBootId() });
    void handle.done.then((exit) => {
      if (exited) return;
      forward(parser.end());
      flush();
      exited = true;
      send({
        type: 'cli.exited',
        exit: {
          code: exit.code,
          signal: exit.signal,
          killedByUs: killedByUs || exit.killReason !== null,
          errorText: spec.adapter.errorText(exit.stderr),
          spawnError: exit.spawnError,
        },
      });
    });
    receive((e) => {
      if (e.type === 'kill' && !exited) {
        killedByUs = true;
        void handle.kill('svc');
      }
    });
    return () => {
      if (batchTimer) clearTimeout(batchTimer);
      if (!exited) {
        // Stopped: its machine hears nothing more, and neither does anyone live.
        exited = true;
        killedByUs = true;
        void handle.kill('stopped');
      }
    };
  });
}
