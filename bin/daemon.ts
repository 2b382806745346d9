import type { ActorHost, AgentSupervisor } from '../actors/index.js';
import type { Bus } from '../bus/index.js';
import { describeError, type AgentConfig } from '../schemas/index.js';
import type { SqliteEventLog } from '../store/index.js';
import { DAEMON_SUBSYSTEMS, DaemonContext, type DaemonOptions } from './daemon-subsystems.js';
import { VERSION } from './package-info.js';
import { startSubsystems } from './subsystems.js';

export type { DaemonOptions } from './daemon-subsystems.js';

export interface RunningDaemon {
  bus: Bus;
  /** Where the internal API actually listens. */
  internalPort: number;
  /** Where the API server listens; null when no surface needs it (`api.enabled` false). */
  apiPort: number | null;
  host: ActorHost;
  agents: AgentSupervisor;
  log: SqliteEventLog;
  /** The config in force: hot-reloadable fields follow edits of config.json. */
  config(): AgentConfig;
  stop(reason: string): Promise<void>;
}

/**
 * Composition root: starts DAEMON_SUBSYSTEMS in order (lock, config, log, bus, actors, edges) and
 * stops them in reverse; a failed start stops those already started before the error is thrown.
 */
export async function startDaemon(opts: DaemonOptions): Promise<RunningDaemon> {
  const ctx = new DaemonContext(opts);
  const started = await startSubsystems(DAEMON_SUBSYSTEMS, ctx);
  const { bus } = ctx;
  const { paths } = opts;
  ctx.daemon.send({ type: 'ready', subsystems: [...started.names, ...ctx.agents.names().map((n) => `agent:${n}`)] });
  bus.emitLog('info', `svc ${VERSION} running`, { home: paths.root, pid: process.pid, events: paths.eventsDb });

  let stopping: Promise<void> | null = null;
  return {
    bus,
    internalPort: ctx.internalApi.port,
    apiPort: ctx.apiServer?.port ?? null,
    host: ctx.host,
    agents: ctx.agents,
    log: ctx.log,
    config: ctx.config,
    stop(reason: string) {
      stopping ??= (async () => {
        bus.emitLog('info', `stopping (${reason})`);
        ctx.endReason = reason;
        ctx.daemon.send({ type: 'stop', reason });
        await started.stop();
      })();
      return stopping;
    },
  };
}

/** `svc start`: run until SIGINT/SIGTERM, then shut down cleanly and flush the log. */
export async function runDaemon(opts: DaemonOptions): Promise<number> {
  const daemon = await startDaemon(opts);
  const signal = await new Promise<string>((resolve) => {
    process.once('SIGINT', () => resolve('SIGINT'));
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('uncaughtException', (err) => {
      daemon.bus.emitLog('error', `uncaught exception: ${describeError(err)}`, { stack: err.stack ?? '' });
      resolve('crash');
    });
  });
  await daemon.stop(signal);
  return signal === 'crash' ? 1 : 0;
}
