import {
  ActorHost,
  AgentSupervisor,
  LogSink,
  ModelCacheRefresher,
  configWatcher,
  detectProviders,
  localModelSource,
  parseLogLevel,
  registryWatcher,
  startChatSessions,
  startNotifier,
  recoverOrphanProcesses,
  startTranscriber,
  type ActorClock,
} from '../actors/index.js';
import { Bus } from '../bus/index.js';
import {
  AVATAR_STATUSES,
  CHAT_SESSION_STATUSES,
  NOTIFICATION_STATUSES,
  TRANSCRIBE_STATUSES,
  avatarRoutes,
  bearerMatches,
  chatSessionRoutes,
  notificationRoutes,
  transcribeRoutes,
  startDirectApi,
  startInternalApi,
  type DirectApiServer,
  type HttpRequest,
  type Listening,
} from '../edges/index.js';
import { authOkProviders, configMachine, connectionMachine, daemonMachine, previousRun, registryMachine } from '../machines/index.js';
import { CONFIG_EVENTS, SvcError, describeError, type AgentConfig } from '../schemas/index.js';
import {
  PROJECTIONS,
  SqliteEventLog,
  acquirePidLock,
  assertEventLogKept,
  ensureDir,
  markEventLogHistory,
  ensureMainAgentToken,
  loadConfig,
  loadRegistry,
  chatSessionReadModel,
  loadUsers,
  notificationReadModel,
  registryLocation,
  type HomePaths,
  type PidLock,
} from '../store/index.js';
import { randomBytes } from 'node:crypto';
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
  /** Overrides `interagent_port` (tests use 0: any free port). */
  internalPort?: number;
  /** Overrides `api.port` when the direct API is enabled. */
  apiPort?: number;
}

export interface RunningDaemon {
  bus: Bus;
  /** Where the internal API actually listens. */
  internalPort: number;
  /** Where the direct API listens; null when `api.enabled` is false. */
  apiPort: number | null;
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
  // Every started part registers how to end it; a failed start and a stop unwind the same list.
  const teardown: (() => void | Promise<void>)[] = [() => lock.release()];
  const unwind = async () => {
    for (const end of teardown.splice(0).reverse()) await end();
  };
  try {
    const loaded = loadConfig(paths);
    assertEventLogKept(paths);
    // Checkpoint failures are reported once the bus exists to carry them.
    let reportCheckpoint = (message: string) => void process.stderr.write(`svc: WAL checkpoint: ${message}\n`);
    const log = SqliteEventLog.open(paths.eventsDb, {
      projections: PROJECTIONS,
      backgroundCheckpoints: { onError: (m) => reportCheckpoint(m) },
    });
    teardown.push(async () => {
      await log.stopCheckpoints();
      log.close();
    });
    const bus = new Bus({ log, ...(opts.clock ? { clock: opts.clock } : {}) });
    markEventLogHistory(paths, new Date(bus.now()).toISOString());
    reportCheckpoint = (message) => {
      bus.emitLog('warn', `WAL checkpoint failed: ${message}`);
    };
    const sink = new LogSink(bus, {
      level: opts.verbose ? 'debug' : parseLogLevel(loaded.config.log_level),
      file: join(paths.logsDir, 'svc.log'),
      stderr: opts.logToStderr ?? true,
    });
    teardown.push(() => sink.close());
    // Closing commits the facts still queued (the daemon's last ones among them).
    teardown.push(() => bus.close());
    const host = new ActorHost(bus);
    teardown.push(() => host.stopAll());
    if (lock.tookOver) bus.emitLog('info', lock.tookOver);
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
    // Unwound after everything the daemon ran has ended, and before its actor is stopped.
    let endReason = 'start failed';
    teardown.push(() => {
      daemon.send({ type: 'stop', reason: endReason });
      daemon.send({ type: 'stopped' });
    });
    await bus.publish({
      stream: 'config',
      type: CONFIG_EVENTS.loaded,
      data: { file: paths.configFile, created: loaded.created, keys_added: loaded.keysAdded },
    });

    const interval = opts.watchIntervalMs;
    const config = host.spawn('config', configMachine.provide({ actors: { watcher: configWatcher } }), {
      stream: 'config',
      input: { config: loaded.config, file: paths.configFile, ...(interval ? { intervalMs: interval } : {}) },
    });
    const currentConfig = () => config.getSnapshot().context.config;
    const registry = host.spawn('registry', registryMachine.provide({ actors: { watcher: registryWatcher } }), {
      stream: 'registry',
      input: {
        entries: loadRegistry(paths),
        file: registryLocation(paths) ?? paths.agentsRegistry,
        paths: { agentsRegistry: paths.agentsRegistry, legacyAgentsRegistry: paths.legacyAgentsRegistry },
        ...(interval ? { intervalMs: interval } : {}),
      },
    });
    const currentRegistry = () => registry.getSnapshot().context.entries;
    bus.subscribe('log-level', (e) => {
      if (e.type === CONFIG_EVENTS.reloaded && !opts.verbose) sink.level = parseLogLevel(currentConfig().log_level);
    });

    const hostEnv = opts.env ?? process.env;
    const userHome = hostEnv.HOME ?? homedir();
    const mainAgentToken = ensureMainAgentToken(paths, () => randomBytes(32).toString('base64url'));
    const users = () => {
      try {
        return loadUsers(paths);
      } catch (e) {
        // A broken users.json is the user's to fix; until then nobody gets a role from it.
        bus.emitLog('error', describeError(e));
        return [];
      }
    };
    const models = new ModelCacheRefresher({
      paths,
      now: () => bus.now(),
      fetchModels: localModelSource({ env: hostEnv, home: userHome }),
      onResult: (r) => r.error && bus.emitLog('warn', `model cache: ${r.error}`),
    });
    // Startup refresh reads local CLI files only; agents start meanwhile with whatever cache exists.
    void models.start();
    teardown.push(() => models.stop());
    const notifications = notificationReadModel(log.projectionDb());
    const notifier = startNotifier({ bus, readModel: notifications });
    teardown.push(() => notifier.unsubscribe());
    const chatSessions = startChatSessions({ bus, readModel: chatSessionReadModel(log.projectionDb()) });
    teardown.push(() => chatSessions.unsubscribe());
    // Before anything new starts: what a crashed run left of its own helper processes.
    await recoverOrphanProcesses(log, bus);
    const transcriber = startTranscriber({ bus, paths, config: () => currentConfig().transcription, env: hostEnv });
    teardown.push(() => transcriber.unsubscribe());

    const agents = new AgentSupervisor({
      bus,
      host,
      log,
      paths,
      mainConfig: currentConfig,
      registry: currentRegistry,
      users,
      mainAgentToken: () => mainAgentToken,
      hostEnv,
      discoveredGemini: () => models.models('gemini'),
      ...(opts.killGraceMs !== undefined ? { graceMs: opts.killGraceMs } : {}),
      ...(opts.turnClock ? { clock: opts.turnClock } : {}),
    });
    // Agents stop before the log closes: their turns must end (process groups killed) and be recorded.
    teardown.push(() => agents.stop());
    await agents.start();

    const internalApi: Listening = await startInternalApi({
      bus,
      host: '127.0.0.1',
      port: opts.internalPort ?? loaded.config.interagent_port,
      registry: currentRegistry,
      users,
      mainAgentToken: () => mainAgentToken,
      config: currentConfig,
    });
    teardown.push(() => internalApi.close());

    const directApi: DirectApiServer | null = await startDirectApi({
      bus,
      config: currentConfig,
      paths,
      connectionMachine,
      providers: () =>
        authOkProviders(
          detectProviders({
            env: hostEnv,
            home: userHome,
            paths,
            config: currentConfig(),
            models: { codex: models.models('codex'), gemini: models.models('gemini') },
          }),
        ),
      apiRoutes: (token) => {
        const authorize = (req: HttpRequest) => {
          if (!bearerMatches(req.headers.authorization, token)) throw new SvcError('unauthorized', 'missing or wrong bearer token');
        };
        return [
          ...notificationRoutes({ readModel: notifications, bus, authorize }),
          ...chatSessionRoutes({ bus, authorize }),
          ...transcribeRoutes({ bus, paths, authorize, fileAccess: () => currentConfig().file_access }),
          // Avatars are public (SPEC.md): a chat client shows them before anyone signs in.
          ...avatarRoutes({ paths }),
        ];
      },
      apiStatuses: { ...NOTIFICATION_STATUSES, ...CHAT_SESSION_STATUSES, ...TRANSCRIBE_STATUSES, ...AVATAR_STATUSES },
      ...(opts.apiPort !== undefined ? { port: opts.apiPort } : {}),
    });
    if (directApi) teardown.push(() => directApi.close());

    daemon.send({
      type: 'ready',
      subsystems: ['config', 'registry', 'notifications', 'chat-sessions', 'transcription', 'internal-api', ...(directApi ? ['direct-api'] : []), ...agents.names().map((n) => `agent:${n}`)],
    });
    bus.emitLog('info', `svc ${VERSION} running`, { home: paths.root, pid: process.pid, events: paths.eventsDb });

    let stopping: Promise<void> | null = null;
    return {
      bus,
      internalPort: internalApi.port,
      apiPort: directApi?.port ?? null,
      host,
      agents,
      log,
      config: currentConfig,
      stop(reason: string) {
        stopping ??= (async () => {
          bus.emitLog('info', `stopping (${reason})`);
          endReason = reason;
          daemon.send({ type: 'stop', reason });
          await unwind();
        })();
        return stopping;
      },
    };
  } catch (e) {
    await unwind();
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
