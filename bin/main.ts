import { SvcError, describeError } from '../schemas/index.js';
import { homePaths, resolveHomeRoot, expandHome } from '../store/index.js';
import { adminCommand } from './admin-command.js';
import { apiCommand } from './api-command.js';
import { askCommand } from './ask-command.js';
import { authCommand } from './auth-command.js';
import { parse } from './cli-args.js';
import { configCommand } from './config-command.js';
import { eventsCommand } from './events-command.js';
import { doctorCommand } from './doctor-command.js';
import { logsCommand } from './logs-command.js';
import { serviceCommand } from './service-command.js';
import { statusCommand } from './status-command.js';
import { stopCommand } from './stop-command.js';
import { usersCommand } from './users-command.js';
import { VERSION } from './package-info.js';

const HELP = `svc ${VERSION}: runs AI coding-agent CLIs and orchestrates them

usage: svc [command] [--home DIR]

commands:
  start               run the daemon in the foreground (the default command)
  status [--json]     whether the daemon runs: pid, uptime, listeners, agents, turns, last error
  stop [--timeout S]  stop the daemon running on this home and wait until it has exited
  config show         print the effective configuration, secrets masked
  config validate     check config.json and agents.json without starting
  config reference    every config field: type, default, hot-reloadable or not (markdown)
  api enable          enable the direct API and generate its token
  admin setup|start|stop|status|update|open
                      the admin web panel: its admin password, its own port (3000), where it is
                      served, its build (see 'svc admin --help')
  ask [--agent A] [--chat N] [--new] MSG
                      send one message to the running daemon and stream the answer (MSG "-" reads stdin)
  auth <provider>     sign a provider CLI in (claude, codex, gemini); 'auth status' shows login state
  events ...          read the event log: tail, show, replay (see 'svc events --help')
  doctor              check Node.js, native modules, home permissions, ports, provider logins,
                      transports and the API's exposure; prints the fix for each problem
  logs [-n N] [-f]    the daemon's log (~/.svc/logs/svc.log); -f follows it
  service ...         install|uninstall|status a systemd user unit running this svc
  users set-password [USER] [--disable-2fa]
                      set an admin-panel password from the terminal (default user: admin)
  --version           print the version

The home is $SVC_HOME, else ~/.svc; --home DIR overrides both.`;

/** Pull `--home DIR` out wherever it appears, so every subcommand accepts it. */
function takeHome(args: string[]): { rest: string[]; home: string | undefined } {
  const rest: string[] = [];
  let home: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--home') {
      home = args[++i];
      if (!home) throw new SvcError('usage', '--home needs a directory');
    } else if (a.startsWith('--home=')) home = a.slice('--home='.length);
    else rest.push(a);
  }
  return { rest, home };
}

/** What a shell reports for a program that SIGPIPE ended: 128 + 13. */
const CLOSED_PIPE_EXIT = 141;

/**
 * `svc events tail | head`: once the reader is gone, output has nowhere to go and nobody to tell.
 * A command ends quietly, as Unix tools do (exit 141, so `set -o pipefail` still sees it), instead
 * of dying with an EPIPE stack trace. The daemon never ends for it: `svc start | head -1` must not
 * take a running service down without its clean shutdown, so it just stops writing there.
 */
function guardClosedPipes(daemon: boolean): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (e: NodeJS.ErrnoException) => {
      // Writes after the first failure report the stream as destroyed: the same closed pipe.
      if (e.code !== 'EPIPE' && e.code !== 'ERR_STREAM_DESTROYED') throw e;
      if (!daemon) process.exit(CLOSED_PIPE_EXIT);
    });
  }
}

export async function main(argv: string[]): Promise<number> {
  try {
    const { rest, home } = takeHome(argv);
    const paths = homePaths(home ? expandHome(home) : resolveHomeRoot());
    const [cmd, ...args] = rest;
    guardClosedPipes(cmd === undefined || cmd === 'start');
    switch (cmd) {
      case undefined:
      case 'start': {
        const { values } = parse(args, { verbose: { type: 'boolean', short: 'v' } }, 'usage: svc start [--home DIR] [--verbose]');
        if (values.help) return print('usage: svc start [--home DIR] [--verbose]\n\nRuns the daemon in the foreground until SIGINT or SIGTERM.');
        // Loaded here only: the daemon's libraries (grammY, matrix-js-sdk, uWS) would slow every other command's start.
        const { runDaemon } = await import('./daemon.js');
        return await runDaemon({ paths, verbose: !!values.verbose });
      }
      case '--version':
      case '-V':
      case 'version':
        return print(VERSION);
      case 'help':
      case '--help':
      case '-h':
        return print(HELP);
      case 'config':
        return configCommand(args, paths);
      case 'api':
        return apiCommand(args, paths);
      case 'admin':
        return await adminCommand(args, paths);
      case 'auth':
        return await authCommand(args, paths);
      case 'ask':
        return await askCommand(args, paths);
      case 'events':
        return await eventsCommand(args, paths);
      case 'status':
        return statusCommand(args, paths);
      case 'stop':
        return await stopCommand(args, paths);
      case 'doctor':
        return await doctorCommand(args, paths);
      case 'logs':
        return await logsCommand(args, paths);
      case 'service':
        return serviceCommand(args, paths);
      case 'users':
        return await usersCommand(args, paths);
      default:
        throw new SvcError('usage', `unknown command '${cmd}'; see 'svc --help'`);
    }
  } catch (e) {
    process.stderr.write(`svc: ${e instanceof SvcError ? e.message : describeError(e)}\n`);
    return e instanceof SvcError && e.code === 'usage' ? 2 : 1;
  }
}

function print(text: string): number {
  process.stdout.write(text + '\n');
  return 0;
}
