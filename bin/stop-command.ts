import { SvcError } from '../schemas/index.js';
import { runningDaemonPid, type HomePaths } from '../store/index.js';
import { parse } from './cli-args.js';

const USAGE = `usage: svc stop [--timeout S]

Stops the daemon running on this home: SIGTERM, then waits until it has ended its CLIs, flushed
its log and exited (at most S seconds, default 30). Exit 0 when it stopped or was not running,
1 when it is still running after S seconds.`;

const POLL_MS = 100;

export async function stopCommand(args: string[], paths: HomePaths, out: (s: string) => void = (s) => process.stdout.write(s)): Promise<number> {
  const { values, positionals } = parse(args, { timeout: { type: 'string', short: 't' } }, USAGE);
  if (values.help) {
    out(USAGE + '\n');
    return 0;
  }
  if (positionals.length) throw new SvcError('usage', `unexpected argument '${positionals[0]}'\n${USAGE}`);
  const timeoutS = values.timeout === undefined ? 30 : Number(values.timeout);
  if (!Number.isFinite(timeoutS) || timeoutS <= 0 || timeoutS > 3600) throw new SvcError('usage', `--timeout ${values.timeout}: expected seconds, more than 0 and at most 3600\n${USAGE}`);

  const pid = runningDaemonPid(paths.pidFile);
  if (pid === null) {
    out(`svc is not running on ${paths.root}\n`);
    return 0;
  }
  try {
    process.kill(pid, 'SIGTERM');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ESRCH') {
      out(`svc is not running on ${paths.root}\n`);
      return 0;
    }
    throw new SvcError('stop-failed', `cannot signal svc (pid ${pid}): ${(e as Error).message}`);
  }
  // The daemon removes its pid file last, after the log is flushed: gone (or naming another process) means stopped.
  const deadline = Date.now() + timeoutS * 1000;
  while (Date.now() < deadline) {
    if (runningDaemonPid(paths.pidFile) !== pid) {
      out(`stopped svc (pid ${pid}) on ${paths.root}\n`);
      return 0;
    }
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
  process.stderr.write(`svc: svc (pid ${pid}) did not stop within ${timeoutS} s and is still running; 'kill -9 ${pid}' ends it without a clean shutdown\n`);
  return 1;
}
