import type { TaskMachineEvent } from '../../machines/index.js';
import { SvcError, TURN_EVENTS, isSvcError, type TurnOutcome } from '../../schemas/index.js';
import type { EventLog } from '../../store/index.js';

const TURN_ENDS = [TURN_EVENTS.started, TURN_EVENTS.completed, TURN_EVENTS.failed, TURN_EVENTS.timed_out, TURN_EVENTS.aborted] as const;

/** How a run's end is told to the task machine: its outcome, or the reason it could not run (a refusal's code). */
export function endEvent(result: TurnOutcome | unknown, now: number): TaskMachineEvent {
  if (result && typeof result === 'object' && 'status' in result && 'request_id' in result) {
    const o = result as TurnOutcome;
    const run = { provider: o.provider, model: o.model, session_id: o.session_id, now };
    if (o.status === 'completed' && !o.is_error) return { type: 'complete', result: o.text, ...run };
    const reason = o.status === 'timed_out' ? 'timeout' : o.status === 'aborted' ? 'aborted' : (o.reason ?? 'error');
    return { type: 'fail', reason, result: o.text, ...run };
  }
  const code = isSvcError(result) ? result.code : 'internal-error';
  const text = result instanceof SvcError ? result.message : 'internal error';
  return { type: 'fail', reason: code, result: text, provider: null, model: null, session_id: null, now };
}

/** The last provider session each task's runs reported in their turn facts (their correlation is `task:<id>`). */
export function sessionsFromTurns(log: EventLog): Map<string, { provider: string; session_id: string }> {
  const provider = new Map<string, string>();
  const out = new Map<string, { provider: string; session_id: string }>();
  for (const e of log.read({ streamPrefix: 'turn:', types: TURN_ENDS })) {
    if (!e.correlation?.startsWith('task:')) continue;
    const d = e.data as { provider?: string; session_id?: string | null };
    if (e.type === TURN_EVENTS.started && typeof d.provider === 'string') provider.set(e.stream, d.provider);
    else if (typeof d.session_id === 'string' && d.session_id && provider.has(e.stream)) out.set(e.correlation.slice(5), { provider: provider.get(e.stream)!, session_id: d.session_id });
  }
  return out;
}

/** A task's default name: its prompt's first line, cut to 60 characters. */
export function firstLine(text: string): string {
  const line = text.trim().split('\n')[0]!.trim();
  return line.length > 60 ? `${line.slice(0, 57)}...` : line;
}
