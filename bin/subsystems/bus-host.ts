import { join } from 'node:path';
import { ActorHost, LogSink, logConfigWarnings, parseLogLevel } from '../../actors/index.js';
import { Bus } from '../../bus/index.js';
import { daemonMachine, previousRun } from '../../machines/index.js';
import { CONFIG_EVENTS } from '../../schemas/index.js';
import { markEventLogHistory } from '../../store/index.js';
import { VERSION } from '../package-info.js';
import { part } from '../subsystems.js';
import { ACTOR_HOST, BUS, DAEMON_ACTOR, EVENT_LOG, LIFECYCLE, LOADED_CONFIG, LOG_SINK, OPTIONS, PATHS, START_CORRELATION, PID_LOCK, WAL_REPORTS } from './keys.js';

/* The bus every fact goes through, the host that runs the actors, and the daemon's own actor. */

export const bus = part({
  name: 'bus',
  // Nothing may publish before the log is open.
  needs: { opts: OPTIONS, paths: PATHS, log: EVENT_LOG, walReports: WAL_REPORTS, loaded: LOADED_CONFIG },
  provides: { bus: BUS, sink: LOG_SINK },
  start({ opts, paths, log, walReports, loaded }) {
    const bus = new Bus({ log, ...(opts.clock ? { clock: opts.clock } : {}) });
    markEventLogHistory(paths, new Date(bus.now()).toISOString());
    walReports.report = (message) => bus.emitLog('warn', `WAL checkpoint failed: ${message}`);
    const sink = new LogSink(bus, {
      level: opts.verbose ? 'debug' : parseLogLevel(loaded.config.log_level),
      file: join(paths.logsDir, 'svc.log'),
      stderr: opts.logToStderr ?? true,
    });
    return {
      provide: { bus, sink },
      stop: () => {
        // Closing commits the facts still queued (the daemon's last ones among them), and the
        // sink writes their log lines before it closes; stop waits for the file to be flushed.
        bus.close();
        return sink.close();
      },
    };
  },
});

export const actorHost = part({
  name: 'actor-host',
  needs: { bus: BUS, lock: PID_LOCK },
  provides: { host: ACTOR_HOST },
  start({ bus, lock }) {
    const host = new ActorHost(bus);
    if (lock.tookOver) bus.emitLog('info', lock.tookOver);
    bus.subscribe('log-events', (e) => bus.emitLog('debug', `${e.type} ${e.stream}`, { seq: e.seq }));
    logConfigWarnings(bus);
    return { provide: { host }, stop: () => host.stopAll() };
  },
});

export const daemon = part({
  name: 'daemon',
  needs: { paths: PATHS, loaded: LOADED_CONFIG, log: EVENT_LOG, bus: BUS, host: ACTOR_HOST, correlation: START_CORRELATION, lifecycle: LIFECYCLE },
  provides: { daemon: DAEMON_ACTOR },
  async start({ paths, loaded, log, bus, host, correlation, lifecycle }) {
    const daemon = host.spawn('daemon', daemonMachine, {
      stream: 'daemon',
      correlation,
      input: {
        pid: process.pid,
        version: VERSION,
        home: paths.root,
        node: process.version,
        previous: previousRun(log.read({ stream: 'daemon' })),
      },
    });
    // Runs after everything the daemon started has stopped, and before its actor is stopped.
    const stop = () => {
      daemon.send({ type: 'stop', reason: lifecycle.endReason });
      daemon.send({ type: 'stopped' });
    };
    try {
      await bus.publish({
        stream: 'config',
        type: CONFIG_EVENTS.loaded,
        correlation,
        data: {
          file: paths.configFile,
          created: loaded.created,
          keys_added: loaded.keysAdded,
          ...(loaded.unknownKeys.length ? { unknown_keys: loaded.unknownKeys } : {}),
        },
      });
    } catch (e) {
      stop();
      throw e;
    }
    return { provide: { daemon }, stop };
  },
});
