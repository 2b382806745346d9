import { PROJECTIONS, SqliteEventLog, acquirePidLock, assertEventLogKept, ensureDir, loadConfig } from '../../store/index.js';
import { part } from '../subsystems.js';
import { EVENT_LOG, LOADED_CONFIG, PATHS, PID_LOCK, WAL_REPORTS } from './keys.js';

/* The home on disk: the lock that makes this run its only writer, config.json as read at start, the event log. */

/** First of all: nothing may append before the lock is held. */
export const pidLock = part({
  name: 'pid-lock',
  needs: { paths: PATHS },
  provides: { lock: PID_LOCK },
  start({ paths }) {
    ensureDir(paths.root, 0o700);
    const lock = acquirePidLock(paths.pidFile);
    return { provide: { lock: { tookOver: lock.tookOver ?? null } }, stop: () => lock.release() };
  },
});

export const configFile = part({
  name: 'config-file',
  // After the lock: loading may write the keys it adds back to config.json.
  needs: { paths: PATHS, lock: PID_LOCK },
  provides: { loaded: LOADED_CONFIG },
  start({ paths }) {
    const loaded = loadConfig(paths);
    assertEventLogKept(paths);
    return { provide: { loaded } };
  },
});

export const eventLog = part({
  name: 'event-log',
  // After config-file: a home whose event log went missing is refused before a new one is created.
  needs: { paths: PATHS, loaded: LOADED_CONFIG },
  provides: { log: EVENT_LOG, walReports: WAL_REPORTS },
  start({ paths }) {
    const walReports = { report: (message: string) => void process.stderr.write(`svc: WAL checkpoint: ${message}\n`) };
    const log = SqliteEventLog.open(paths.eventsDb, {
      projections: PROJECTIONS,
      backgroundCheckpoints: { onError: (m) => walReports.report(m) },
    });
    return {
      provide: { log, walReports },
      stop: async () => {
        await log.stopCheckpoints();
        log.close();
      },
    };
  },
});
