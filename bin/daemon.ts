import {
  ActorHost,
  AgentSupervisor,
  LogSink,
  ModelCacheRefresher,
  configWatcher,
  localModelSource,
  parseLogLevel,
  registryWatcher,
  startNotifier,
  type ActorClock,
} from '../actors/index.js';
import { Bus } from '../bus/index.js';
import { configMachine, daemonMachine, previousRun, registryMachine } from '../machines/index.js';
import { describeError, type AgentConfig } from '../schemas/index.js';
import {
  PROJECTIONS,
  SqliteEventLog,
  acquirePidLock,
  ensureDir,
  loadConfig,
  loadRegistry,
  loadUsers,
  notificationReadModel,
  registryLocation,
  type HomePaths,
  type PidLock,
} from '../store/index.js';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { VERSION } from './package-info.js';

export interface DaemonOptions {
  paths: HomePaths;
  verbose?: boolean;
  /** Injected in tests; epoch ms. */
  clock?: () => number;
  /** Poll interval of the config and registry watchers (SPEC.md: 5 s). */
  watchIntervalMs?: number;
  /** Tests keep stderr quiet; the log file is written either way. */
  logToStderr?: boolean;
  /** The environment CLIs inherit (tests put the fake CLIs on PATH); default process.env. */
  env?: NodeJS.ProcessEnv;
  /** Between SIGTERM and SIGKILL of a turn's process group. */
  killGraceMs?: number;
  /** Drives turn deadlines; tests pass a SimulatedClock. */
  turnClock?: ActorClock;
}

export interface RunningDaemon {
  bus: Bus;
  host: ActorHost;
  agents: AgentSupervisor;
  log: SqliteEventLog;
  /** The config in force: hot-reloadable fields follow edits of config.json. */
  config(): AgentConfig;
  stop(reason: string): Promise<void>;
}

/**
 * Composition root: lock the home, load config, open the log, start the bus and the actors.
 * Order matters: nothing may append before the lock is held, and nothing may publish before the log is open.
 */
export async function startDaemon(opts: DaemonOptions): Promise<RunningDaemon> {
  const { paths } = opts;
  ensureDir(paths.root, 0o700);
  const lock: PidLock = acquirePidLock(paths.pidFile);
  let log: SqliteEventLog | undefined;
  try {
    const loaded = loadConfig(paths);
    log = SqliteEventLog.open(paths.eventsDb, { projections: PROJECTIONS });
    const bus = new Bus({ log, ...(opts.clock ? { clock: opts.clock } : {}) });
    const sink = new LogSink(bus, {
      level: opts.verbose ? 'debug' : parseLogLevel(loaded.config.log_level),
      file: join(paths.logsDir, 'svc.log'),
      stderr: opts.logToStderr ?? true,
    });
    const host = new ActorHost(bus);
    bus.subscribe('log-events', (e) => bus.emitLog('debug', `${e.type} ${e.stream}`, { seq: e.seq }));

    const daemon = host.spawn('daemon', daemonMachine, {
      stream: 'daemon',
      input: {
        pid: process.pid,
        version: VERSION,
        home: paths.root,
        node: process.version,
        previous: previousRun(log.read({ stream: 'daemon' })),
      },
    });
    await bus.publish({
      stream: 'config',
      type: 'config.loaded',
      data: { file: paths.configFile, created: loaded.created, keys_added: loaded.keysAdded },
    });

    const interval = opts.watchIntervalMs;
    const config = host.spawn('config', configMachine.provide({ actors: { watcher: configWatcher } }), {
      stream: 'config',
      input: { config: loaded.config, file: paths.configFile, ...(interval ? { intervalMs: interval } : {}) },
    });
    const registry = host.spawn('registry', registryMachine.provide({ actors: { watcher: registryWatcher } }), {
      stream: 'registry',
      input: {
        entries: loadRegistry(paths),
        file: registryLocation(paths) ?? paths.agentsRegistry,
        paths: { agentsRegistry: paths.agentsRegistry, legacyAgentsRegistry: paths.legacyAgentsRegistry },
        ...(interval ? { intervalMs: interval } : {}),
      },
    });
    bus.subscribe('log-level', (e) => {
      if (e.type === 'config.reloaded' && !opts.verbose) sink.level = parseLogLevel(config.getSnapshot().context.config.log_level);
    });

    const hostEnv = opts.env ?? process.env;
    const models = new ModelCacheRefresher({
      paths,
      now: () => bus.now(),
      fetchModels: localModelSource({ env: hostEnv, home: hostEnv.HOME ?? homedir() }),
      onResult: (r) => r.error && bus.emitLog('warn', `model cache: ${r.error}`),
    });
    // Startup refresh reads local CLI files only; agents start meanwhile with whatever cache exists.
    void models.start();
    const notifier = startNotifier({ bus, readModel: notificationReadModel(log.projectionDb()) });
    const agents = new AgentSupervisor({
      bus,
      host,
      log,
      paths,
      mainConfig: () => config.getSnapshot().context.config,
      registry: () => registry.getSnapshot().context.entries,
      users: () => {
        try {
          return loadUsers(paths);
        } catch (e) {
          // A broken users.json is the user's to fix; until then nobody gets a role from it.
          bus.emitLog('error', describeError(e));
          return [];
        }
      },
      mainAgentToken: () => null,
      hostEnv,
      discoveredGemini: () => models.models('gemini'),
      ...(opts.killGraceMs !== undefined ? { graceMs: opts.killGraceMs } : {}),
      ...(opts.turnClock ? { clock: opts.turnClock } : {}),
    });
    await agents.start();

    daemon.send({ type: 'ready', subsystems: ['config', 'registry', 'notifications', ...agents.names().map((n) => `agent:${n}`)] });
    bus.emitLog('info', `svc ${VERSION} running`, { home: paths.root, pid: process.pid, events: paths.eventsDb });

    let stopping: Promise<void> | null = null;
    const openLog = log;
    return {
      bus,
      host,
      agents,
      log: openLog,
      config: () => config.getSnapshot().context.config,
      stop(reason: string) {
        stopping ??= (async () => {
          bus.emitLog('info', `stopping (${reason})`);
          daemon.send({ type: 'stop', reason });
          // Agents first: their turns must end (process groups killed) while the log can still record it.
          await agents.stop();
          models.stop();
          notifier.unsubscribe();
          for (const id of host.ids()) if (id !== 'daemon') host.stop(id);
          daemon.send({ type: 'stopped' });
          host.stopAll();
          // Closing commits the facts still queued (the daemon's last ones among them).
          bus.close();
          await sink.close();
          openLog.close();
          lock.release();
        })();
        return stopping;
      },
    };
  } catch (e) {
    log?.close();
    lock.release();
    throw e;
  }
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
