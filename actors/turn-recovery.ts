import { readFileSync } from 'node:fs';
import type { Bus } from '../bus/index.js';
import type { EventLog } from '../store/index.js';

const TERMINAL = new Set(['turn.completed', 'turn.failed', 'turn.timed_out', 'turn.aborted']);
const CLI_NAMES = ['claude', 'codex', 'gemini', 'docker'];

/**
 * A daemon that died mid-turn leaves the CLI running in its own process group and the turn open
 * in the log. On start: end each such group (only when /proc still shows a provider CLI under
 * that pid, so a recycled pid is never touched) and record the turn as failed.
 */
export async function recoverOrphanTurns(log: EventLog, bus: Bus): Promise<{ failed: string[]; killed: number[] }> {
  const open = new Map<string, number | null>();
  for (const e of log.read({ streamPrefix: 'turn:' })) {
    if (e.type === 'turn.started') open.set(e.stream, null);
    else if (e.type === 'turn.spawned' && open.has(e.stream)) open.set(e.stream, Number(e.data.pid));
    else if (TERMINAL.has(e.type)) open.delete(e.stream);
  }
  const killed: number[] = [];
  for (const [stream, pid] of open) {
    if (pid && looksLikeProviderCli(pid)) {
      try {
        process.kill(-pid, 'SIGKILL');
        killed.push(pid);
      } catch {
        // Already gone between the check and the kill.
      }
    }
    await bus.publish({
      stream,
      type: 'turn.failed',
      data: { reason: 'daemon-restarted', error: 'svc stopped while this turn was running', text: '', session_id: null, stream_fallback: false, pid },
    });
  }
  if (open.size > 0) bus.emitLog('warn', `recorded ${open.size} interrupted turn(s) as failed; ended ${killed.length} orphaned CLI process group(s)`);
  return { failed: [...open.keys()], killed };
}

function looksLikeProviderCli(pid: number): boolean {
  try {
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    return argv.slice(0, 3).some((a) => CLI_NAMES.includes(a.slice(a.lastIndexOf('/') + 1)));
  } catch {
    return false;
  }
}
