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
}

/**
 * The side of a turn that touches the OS: spawn the provider CLI in its own process group, parse
 * its lines, and report spawn, stream events and exit to the turn machine. Stopping this actor
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
    // Lines of one stdout read reach the machine as one batch: one transition, not one per line.
    let batch: StreamEvent[] = [];
    const flush = () => {
      if (batch.length === 0) return;
      const events = batch;
      batch = [];
      send({ type: 'cli.events', events });
    };
    const forward = (events: StreamEvent[]) => {
      if (events.length === 0) return;
      if (batch.length === 0) queueMicrotask(flush);
      batch.push(...events);
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
      exited = true;
      forward(parser.end());
      flush();
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
      if (!exited) {
        killedByUs = true;
        void handle.kill('stopped');
      }
    };
  });
}
