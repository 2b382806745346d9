import { existsSync } from 'node:fs';
import { runStatus, STATUS_TYPES, type RunStatus } from '../machines/index.js';
import { DAEMON_EVENTS, SvcError } from '../schemas/index.js';
import { SqliteEventLog, runningDaemonPid, type HomePaths } from '../store/index.js';
import { parse } from './cli-args.js';

const USAGE = `usage: svc status [--json]

The daemon of this home: whether it runs (pid, uptime, version), where it listens, its agents,
the turns running now and the last error; read from the event log, so a stopped daemon shows how
its last run ended. Exit 0 when it runs, 3 when it does not.`;

/** LSB's "program is not running", what `systemctl status` answers too. */
export const NOT_RUNNING_EXIT = 3;

function duration(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  const d = Math.floor(s / 86400);
  const h = Math.floor((s % 86400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  return [d ? `${d}d` : '', h ? `${h}h` : '', m ? `${m}m` : '', `${s % 60}s`].filter(Boolean).slice(0, 2).join(' ');
}

function readRun(paths: HomePaths): RunStatus | null {
  if (!existsSync(paths.eventsDb)) return null;
  const log = SqliteEventLog.open(paths.eventsDb, { readonly: true, projections: [] });
  try {
    const started = log.read({ stream: 'daemon', types: [DAEMON_EVENTS.started], descending: true, limit: 1 })[0];
    if (!started) return null;
    return runStatus(log.read({ after: started.seq - 1, types: STATUS_TYPES }));
  } finally {
    log.close();
  }
}

export function statusCommand(args: string[], paths: HomePaths, now = Date.now(), out: (s: string) => void = (s) => process.stdout.write(s)): number {
  const { values, positionals } = parse(args, { json: { type: 'boolean' } }, USAGE);
  if (values.help) {
    out(USAGE + '\n');
    return 0;
  }
  if (positionals.length) throw new SvcError('usage', `unexpected argument '${positionals[0]}'\n${USAGE}`);
  const pid = runningDaemonPid(paths.pidFile);
  const run = readRun(paths);
  // A run is this daemon's only if the pids agree: a log whose last run crashed is not a live picture.
  const live = pid !== null && run !== null && run.pid === pid && run.stopped_at === null;
  if (values.json) {
    out(JSON.stringify({ running: pid !== null, pid, home: paths.root, uptime_s: live ? Math.floor((now - Date.parse(run.started_at)) / 1000) : null, bootstrap_password_unchanged: existsSync(paths.initialAdminPasswordFile), run }, null, 2) + '\n');
    return pid !== null ? 0 : NOT_RUNNING_EXIT;
  }
  const lines: string[] = [];
  if (pid === null) lines.push(`svc is not running on ${paths.root}`);
  else lines.push(`svc is running on ${paths.root} (pid ${pid}${live ? `, up ${duration(now - Date.parse(run.started_at))}, version ${run.version}` : ''})`);
  if (run) {
    if (!live) {
      const ended = run.stopped_at ? `stopped ${run.stopped_at} (${run.stop_reason})` : 'ended without stopping cleanly (crashed or killed)';
      lines.push(`last run: pid ${run.pid}, version ${run.version}, started ${run.started_at}, ${ended}`);
    }
    const listening = live ? 'listening' : 'listened';
    for (const l of run.listeners) lines.push(`  ${listening.padEnd(12)}${l.surface.padEnd(14)}${l.host}:${l.port}`);
    lines.push(`  agents      ${run.agents.length ? run.agents.join(', ') : 'none'}`);
    for (const m of run.transports) {
      const label = `${m.name}${m.agent === 'main' ? '' : ` (${m.agent})`}`;
      lines.push(`  ${'transport'.padEnd(12)}${label.length < 14 ? label.padEnd(14) : `${label} `}${m.state}: ${m.detail}`);
    }
    lines.push(`  turns       ${run.running_turns.length ? run.running_turns.map((t) => `${t.agent} in ${t.session_key} since ${t.since}`).join('; ') : 'none running'}`);
    lines.push(`  last error  ${run.last_error ? `${run.last_error.at} ${run.last_error.type}: ${run.last_error.message}` : 'none'}`);
  } else lines.push('  no run recorded yet; ./bin/svc.js start starts svc');
  if (existsSync(paths.initialAdminPasswordFile)) lines.push(`  admin       the first-start password is unchanged (${paths.initialAdminPasswordFile}); svc users set-password changes it`);
  out(lines.join('\n') + '\n');
  return pid !== null ? 0 : NOT_RUNNING_EXIT;
}
