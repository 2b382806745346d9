import { randomBytes, randomUUID } from 'node:crypto';
import { readlinkSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import {
  ActorHost,
  AgentSupervisor,
  LogSink,
  logConfigWarnings,
  ModelCacheRefresher,
  configWatcher,
  detectProviders,
  localModelSource,
  parseLogLevel,
  recoverOrphanProcesses,
  recoverWebhookCalls,
  registryWatcher,
  startAdminAgents,
  startAuditRecorder,
  startAutomationRecords,
  startChatSessions,
  startChatDelivery,
  adminChatTransport,
  WorkflowEngine,
  startDashboard,
  startMemoryAdmin,
  startRagAdmin,
  startSkillsAdmin,
  SkillSync,
  bundledSkillsDir,
  startUserFilesAdmin,
  startNotifier,
  startOutcomeNotifications,
  startPortability,
  startTaskQueries,
  startInteragentDelivery,
  TaskHub,
  DailyJob,
  Heartbeat,
  MemoryMaintenance,
  seedMemoryReview,
  deliverToOriginChat,
  runCleanup,
  userTimeZone,
  CronScheduler,
  OneShotRuns,
  startTranscriber,
  startLiveUsers,
  startUsersDirectory,
  ensureBootstrapAdmin,
  type ActorClock,
  type BootstrapResult,
  type LiveUsers,
  type OneShotRunner,
  type WebhookDispatchDeps,
} from '../actors/index.js';
import { Bus, REAL_CLOCK, TransportRegistry } from '../bus/index.js';
import {
  adminCors,
  adminSurface,
  apiSurface,
  openDirectApi,
  panelFiles,
  publicBindWarning,
  startApiServer,
  startInternalApi,
  startWebhookServer,
  startFileshareServer,
  type ApiServer,
  type DaemonPhase,
  type FileshareServer,
  type InternalApi,
  type Listening,
  type Surface,
  type WebhookServer,
} from '../edges/index.js';
import { adminConnectionMachine, agentAccess, authOkProviders, browserUrl, panelListenAddress, sameAddress, type PanelAddress, checkWorkflowExpression, configMachine, connectionMachine, daemonMachine, previousRun, registryMachine, resolveTimezone } from '../machines/index.js';
import { AGENT_EVENTS, CONFIG_EVENTS, HOUSEKEEPING_STREAM, MAIN_AGENT, MEMORY_MAINTENANCE_EVENTS, SvcError, describeError, isSvcError, type AgentConfig, type PanelConfig, type SubAgentConfig, type UserRecord } from '../schemas/index.js';
import {
  PROJECTIONS,
  SqliteEventLog,
  acquirePidLock,
  agentTurnsReadModel,
  assertEventLogKept,
  auditReadModel,
  chatSessionReadModel,
  ensureDir,
  loadWorkflowDefinitions,
  ensureMainAgentToken,
  ensureJwtSecret,
  ensureWebhookToken,
  homeDefaultsDir,
  loadConfig,
  loadRegistry,
  listeningPortHolder,
  loadUsers,
  markEventLogHistory,
  notificationReadModel,
  readStreamHeads,
  registryLocation,
  systemSettingsReadModel,
  tasksReadModel,
  type HomePaths,
  type LoadedConfig,
  type NotificationReadModel,
  workspaceDir,
} from '../store/index.js';
import { startMessengers } from './messengers.js';
import { panelDir, panelListenOverride } from './panel-location.js';
import { VERSION } from './package-info.js';
import type { Subsystem } from './subsystems.js';

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
  /** Overrides `api.port` when the API server runs. */
  apiPort?: number;
  /** Backoff between a messenger's start attempts (tests shorten it). */
  messengerRetry?: { firstMs: number; maxMs: number };
  /** Overrides `webhooks.port` when the webhook server runs. */
  webhookPort?: number;
  /** Overrides `fileshare.port` when the fileshare server runs. */
  filesharePort?: number;
  /** Drives the cron scheduler's fires, retries and file polling; tests pass a SimulatedClock (with `clock` reading it). */
  cronClock?: ActorClock;
  /** How often the cron scheduler checks cron_jobs.json for hand edits (default 2 s). */
  cronWatchIntervalMs?: number;
  /** The built admin panel; default `dist/panel` (or `$SVC_PANEL_DIR`). */
  panelDir?: string;
}

/** The panel's own listener as this run has it: open, or asked for and refused (its port busy). */
export interface PanelListenerState {
  address: PanelAddress;
  /** null: the port could not be bound (logged); the daemon runs on without it. */
  listening: Listening | null;
}

type DaemonActor = ReturnType<ActorHost['spawn']>;

/**
 * What the subsystems hand on to the ones after them. A field is set by the subsystem that starts
 * it (named beside it) and read only by subsystems later in DAEMON_SUBSYSTEMS.
 */
export class DaemonContext {
  /** pid-lock: what the lock says about a previous owner it took over from, said once the bus exists. */
  tookOver: string | null = null;
  /** config-file */
  loaded!: LoadedConfig;
  /** event-log */
  log!: SqliteEventLog;
  /** Where WAL checkpoint failures go: stderr until the bus exists to carry them. */
  reportCheckpoint: (message: string) => void = (message) => void process.stderr.write(`svc: WAL checkpoint: ${message}\n`);
  /** bus */
  bus!: Bus;
  sink!: LogSink;
  /** actor-host */
  host!: ActorHost;
  /** daemon */
  daemon!: DaemonActor;
  /** The reason the daemon's actor records when it stops; a stop that never got one was a failed start. */
  endReason = 'start failed';
  /** What svc does on its own during this run (start, reloads, recovery, stop) serves this start. */
  readonly startCorrelation = `start:${randomUUID()}`;
  /** config, registry */
  config!: () => AgentConfig;
  registry!: () => SubAgentConfig[];
  /** main-agent-token */
  mainAgentToken!: string;
  /** model-cache */
  models!: ModelCacheRefresher;
  /** notifications */
  notifications!: NotificationReadModel;
  /** agents */
  agents!: AgentSupervisor;
  /** task-hub; null until it runs, so the admin API answers `no-task-hub` meanwhile. */
  taskHub: TaskHub | null = null;
  /** workflows; null until it starts (the agents' reply interceptor asks it from then on). */
  workflows: WorkflowEngine | null = null;
  /** internal-api */
  internalApi!: InternalApi;
  /** users: the first-start admin (said once in the banner) and api.jwt_secret as generated at start. */
  /**
   * Runs beside the later subsystems (scrypt takes a noticeable part of a second on a small host);
   * awaited before `ready`. null: nothing was created, or creating it failed (logged).
   */
  bootstrap: Promise<BootstrapResult | null> = Promise.resolve(null);
  /** `up` once every subsystem started and `ready` is committed, `stopping` from a stop's first step: what `/health` says. */
  phase: DaemonPhase = 'starting';
  generatedJwtSecret = '';
  readonly jwtSecret = (): string => this.config().api.jwt_secret || this.generatedJwtSecret;
  /** api-server: api.token as the direct API generated it, until the config watcher reads it back. */
  generatedApiToken = '';
  /** The chat transports running now (the admin chat, the direct API, messengers): chat delivery asks them whether a chat can be told. */
  readonly transports = new TransportRegistry();
  removeDirectTransport: () => void = () => undefined;
  readonly apiToken = (): string => this.config().api.token || this.generatedApiToken;
  /** api-server; null when no surface needs it. */
  apiServer: ApiServer | null = null;
  /**
   * users: whether this run serves the admin API: `api.enabled`, or the panel's own listener needs
   * it at start. Read at start only, as `api` is.
   */
  adminApi = false;
  /** api-server: the panel's own listener, opened and closed as `panel` in config.json says. */
  panelListener: PanelListenerState | null = null;
  /** `panel` as in force: config.json's, with `$SVC_PANEL_LISTEN` over `listen` when set. */
  readonly panelConfig = (): PanelConfig => {
    const listen = panelListenOverride(this.hostEnv);
    return listen ? { ...this.config().panel, listen } : this.config().panel;
  };
  /** webhook-server: webhooks.token as generated at start, until the config watcher reads it back. */
  generatedWebhookToken = '';
  readonly webhookToken = (): string => this.config().webhooks.token || this.generatedWebhookToken;
  /** webhook-server; null unless `webhooks.enabled`. */
  webhookServer: WebhookServer | null = null;
  /** fileshare; null unless `fileshare.enabled`. Its address reaches agent tools through `toolEnv`. */
  fileshare: FileshareServer | null = null;
  readonly toolEnv = (): Record<string, string> =>
    this.fileshare ? { FILESHARE_URL: this.fileshare.url, FILESHARE_DOWNLOADS: this.fileshare.dir } : {};
  /** What `cron_task` webhooks run through; the task hub attaches it. Null: such calls are recorded as failed. */
  oneShotRunner: OneShotRunner | null = null;
  /** What a webhook call's dispatch needs, live (admin-ops) or after a restart (webhook-recovery). */
  readonly webhookDispatch: WebhookDispatchDeps = { globalToken: this.webhookToken, config: () => this.config(), timezone: () => this.defaultZone(), oneShot: () => this.oneShotRunner };
  /** cron; null until it runs, so a manual run answers `no-scheduler` meanwhile. */
  cronScheduler: CronScheduler | null = null;
  /** The zone cron jobs without one of their own run in: user_timezone → TZ → host → UTC. */
  readonly defaultZone = (): string => resolveTimezone(this.config().user_timezone, this.hostEnv.TZ ?? null, hostZone());

  readonly hostEnv: NodeJS.ProcessEnv;
  readonly userHome: string;

  constructor(readonly opts: DaemonOptions) {
    this.hostEnv = opts.env ?? process.env;
    this.userHome = this.hostEnv.HOME ?? homedir();
  }

  get paths(): HomePaths {
    return this.opts.paths;
  }

  /** users.json in memory, reloaded by its watcher; null until the `users` part starts. */
  liveUsers: LiveUsers | null = null;

  readonly users = (): UserRecord[] => {
    if (this.liveUsers) return this.liveUsers.all();
    try {
      return loadUsers(this.paths);
    } catch (e) {
      // A broken users.json is the user's to fix; until then nobody gets a role from it.
      this.bus.emitLog('error', describeError(e));
      return [];
    }
  };
}

/**
 * The daemon's parts in start order; they stop in reverse. Order matters: nothing may append
 * before the lock is held, nothing may publish before the log is open, and agents stop (their
 * turns killed and recorded) before the log closes.
 */
export const DAEMON_SUBSYSTEMS: readonly Subsystem<DaemonContext>[] = [
  {
    name: 'pid-lock',
    start(ctx) {
      ensureDir(ctx.paths.root, 0o700);
      const lock = acquirePidLock(ctx.paths.pidFile);
      ctx.tookOver = lock.tookOver ?? null;
      return () => lock.release();
    },
  },
  {
    name: 'config-file',
    start(ctx) {
      ctx.loaded = loadConfig(ctx.paths);
      assertEventLogKept(ctx.paths);
    },
  },
  {
    name: 'event-log',
    start(ctx) {
      const log = SqliteEventLog.open(ctx.paths.eventsDb, {
        projections: PROJECTIONS,
        backgroundCheckpoints: { onError: (m) => ctx.reportCheckpoint(m) },
      });
      ctx.log = log;
      return async () => {
        await log.stopCheckpoints();
        log.close();
      };
    },
  },
  {
    name: 'bus',
    start(ctx) {
      const { opts, paths } = ctx;
      const bus = new Bus({ log: ctx.log, ...(opts.clock ? { clock: opts.clock } : {}) });
      ctx.bus = bus;
      markEventLogHistory(paths, new Date(bus.now()).toISOString());
      ctx.reportCheckpoint = (message) => bus.emitLog('warn', `WAL checkpoint failed: ${message}`);
      const sink = new LogSink(bus, {
        level: opts.verbose ? 'debug' : parseLogLevel(ctx.loaded.config.log_level),
        file: join(paths.logsDir, 'svc.log'),
        stderr: opts.logToStderr ?? true,
      });
      ctx.sink = sink;
      return () => {
        // Closing commits the facts still queued (the daemon's last ones among them), and the
        // sink writes their log lines before it closes; stop waits for the file to be flushed.
        bus.close();
        return sink.close();
      };
    },
  },
  {
    name: 'actor-host',
    start(ctx) {
      const host = new ActorHost(ctx.bus);
      ctx.host = host;
      if (ctx.tookOver) ctx.bus.emitLog('info', ctx.tookOver);
      ctx.bus.subscribe('log-events', (e) => ctx.bus.emitLog('debug', `${e.type} ${e.stream}`, { seq: e.seq }));
      logConfigWarnings(ctx.bus);
      return () => host.stopAll();
    },
  },
  {
    name: 'daemon',
    async start(ctx) {
      const { paths, loaded } = ctx;
      const daemon = ctx.host.spawn('daemon', daemonMachine, {
        stream: 'daemon',
        correlation: ctx.startCorrelation,
        input: {
          pid: process.pid,
          version: VERSION,
          home: paths.root,
          node: process.version,
          previous: previousRun(ctx.log.read({ stream: 'daemon' })),
        },
      });
      ctx.daemon = daemon;
      // Runs after everything the daemon started has stopped, and before its actor is stopped.
      const stop = () => {
        daemon.send({ type: 'stop', reason: ctx.endReason });
        daemon.send({ type: 'stopped' });
      };
      try {
        await ctx.bus.publish({
          stream: 'config',
          type: CONFIG_EVENTS.loaded,
          correlation: ctx.startCorrelation,
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
      return stop;
    },
  },
  {
    name: 'config',
    start(ctx) {
      const interval = ctx.opts.watchIntervalMs;
      const config = ctx.host.spawn('config', configMachine.provide({ actors: { watcher: configWatcher } }), {
        stream: 'config',
        correlation: ctx.startCorrelation,
        input: { config: ctx.loaded.config, file: ctx.paths.configFile, unknownKeys: ctx.loaded.unknownKeys, ...(interval ? { intervalMs: interval } : {}) },
      });
      ctx.config = () => config.getSnapshot().context.config;
      ctx.bus.subscribe('log-level', (e) => {
        if (e.type === CONFIG_EVENTS.reloaded && !ctx.opts.verbose) ctx.sink.level = parseLogLevel(ctx.config().log_level);
      });
    },
  },
  {
    name: 'registry',
    start(ctx) {
      const { paths } = ctx;
      const interval = ctx.opts.watchIntervalMs;
      const registry = ctx.host.spawn('registry', registryMachine.provide({ actors: { watcher: registryWatcher } }), {
        stream: 'registry',
        correlation: ctx.startCorrelation,
        input: {
          entries: loadRegistry(paths),
          file: registryLocation(paths) ?? paths.agentsRegistry,
          paths: { agentsRegistry: paths.agentsRegistry, legacyAgentsRegistry: paths.legacyAgentsRegistry },
          ...(interval ? { intervalMs: interval } : {}),
        },
      });
      ctx.registry = () => registry.getSnapshot().context.entries;
    },
  },
  {
    name: 'main-agent-token',
    start(ctx) {
      ctx.mainAgentToken = ensureMainAgentToken(ctx.paths, () => randomBytes(32).toString('base64url'));
    },
  },
  {
    name: 'model-cache',
    start(ctx) {
      const models = new ModelCacheRefresher({
        paths: ctx.paths,
        now: () => ctx.bus.now(),
        fetchModels: localModelSource({ env: ctx.hostEnv, home: ctx.userHome }),
        onResult: (r) => r.error && ctx.bus.emitLog('warn', `model cache: ${r.error}`),
      });
      ctx.models = models;
      // Startup refresh reads local CLI files only; agents start meanwhile with whatever cache exists.
      void models.start();
      return () => models.stop();
    },
  },
  {
    name: 'notifications',
    start(ctx) {
      ctx.notifications = notificationReadModel(ctx.log.projectionDb());
      const notifier = startNotifier({ bus: ctx.bus, readModel: ctx.notifications });
      const outcomes = startOutcomeNotifications({ bus: ctx.bus, log: ctx.log });
      return () => {
        outcomes.unsubscribe();
        notifier.unsubscribe();
      };
    },
  },
  {
    name: 'chat-delivery',
    start(ctx) {
      const removeAdmin = ctx.transports.add(adminChatTransport(ctx.bus));
      const delivery = startChatDelivery({ bus: ctx.bus, transports: ctx.transports });
      return () => {
        delivery.unsubscribe();
        removeAdmin();
      };
    },
  },
  {
    name: 'chat-sessions',
    start(ctx) {
      const chatSessions = startChatSessions({
        bus: ctx.bus,
        readModel: chatSessionReadModel(ctx.log.projectionDb()),
        paths: ctx.paths,
        registry: () => ctx.registry(),
      });
      return () => chatSessions.unsubscribe();
    },
  },
  {
    name: 'admin-agents',
    start(ctx) {
      const adminAgents = startAdminAgents({
        bus: ctx.bus,
        paths: ctx.paths,
        config: ctx.config,
        registry: ctx.registry,
        turns: agentTurnsReadModel(ctx.log.projectionDb()),
        providers: () => detectedProviders(ctx),
        discoveredGemini: () => ctx.models.models('gemini'),
      });
      return () => adminAgents.unsubscribe();
    },
  },
  {
    // The admin API's memory, RAG, skills and files: they act on the home's files, each for a principal.
    name: 'content-admin',
    start(ctx) {
      const deps = { bus: ctx.bus, paths: ctx.paths, registry: ctx.registry, config: ctx.config };
      const subs = [startMemoryAdmin(deps), startRagAdmin(deps), startSkillsAdmin(deps), startUserFilesAdmin(deps)];
      return () => subs.forEach((s) => s.unsubscribe());
    },
  },
  {
    // The admin API's dashboard, activity, audit, cron/webhook records, tasks and export/import.
    name: 'admin-ops',
    start(ctx) {
      const { bus, paths } = ctx;
      const db = ctx.log.projectionDb();
      const startedAt = bus.now();
      const audit = auditReadModel(db);
      const subs = [
        startAuditRecorder({ bus, readModel: audit }),
        startDashboard({
          bus,
          paths,
          registry: ctx.registry,
          users: ctx.users,
          notifications: ctx.notifications,
          audit,
          settings: systemSettingsReadModel(db),
          transports: () => ctx.transports.health(),
          agentFacts: (limit) => ctx.log.read({ streamPrefix: 'agent:', types: [AGENT_EVENTS.started, AGENT_EVENTS.stopped], descending: true, limit }),
          // An agent is online when the last fact of its stream says it started.
          onlineAgents: () => readStreamHeads(db, { prefix: 'agent:' }).filter((h) => h.last_type === AGENT_EVENTS.started).map((h) => h.stream.slice('agent:'.length)),
          version: VERSION,
          startedAt,
        }),
        startAutomationRecords({
          bus,
          paths,
          registry: ctx.registry,
          webhooks: ctx.webhookDispatch,
          cron: () => ctx.cronScheduler,
          defaultZone: ctx.defaultZone,
          log: ctx.log,
        }),
        startTaskQueries({ bus, tasks: tasksReadModel(db), registry: ctx.registry, hub: () => ctx.taskHub }),
        startPortability({ bus, paths, registry: ctx.registry, version: VERSION }),
      ];
      return () => subs.forEach((s) => s.unsubscribe());
    },
  },
  {
    // Before anything new starts: what a crashed run left of its own helper processes.
    name: 'orphan-recovery',
    async start(ctx) {
      await recoverOrphanProcesses(ctx.log, ctx.bus, { cause: { correlation: ctx.startCorrelation } });
    },
  },
  {
    name: 'transcription',
    start(ctx) {
      const transcriber = startTranscriber({ bus: ctx.bus, paths: ctx.paths, config: () => ctx.config().transcription, env: ctx.hostEnv });
      return () => transcriber.unsubscribe();
    },
  },
  {
    // Before the agents, so their first turn already gets FILESHARE_URL. Stopped after them.
    name: 'fileshare',
    async start(ctx) {
      const cfg = ctx.config().fileshare;
      if (!cfg.enabled) return;
      ensureDir(ctx.paths.fileshareDir, 0o755);
      // A fileshare refused for its address leaves the rest running: agents and the API do not
      // depend on it, and its one error line (and `svc doctor`) says how to turn it on.
      const server = await startFileshareServer({
        paths: ctx.paths,
        host: cfg.host,
        port: ctx.opts.filesharePort ?? cfg.port,
        allowPublic: cfg.allow_public,
        log: (level, msg, fields) => ctx.bus.emitLog(level, msg, fields),
      })
        .catch(portTaken('fileshare.port'))
        .catch((e: unknown) => {
          if (!isSvcError(e, 'public-bind-refused')) throw e;
          ctx.bus.emitLog('error', e.message, { host: cfg.host });
          return null;
        });
      if (!server) return;
      ctx.fileshare = server;
      return () => {
        ctx.fileshare = null;
        server.close();
      };
    },
  },
  {
    name: 'agents',
    async start(ctx) {
      const { opts } = ctx;
      const agents = new AgentSupervisor({
        bus: ctx.bus,
        host: ctx.host,
        log: ctx.log,
        paths: ctx.paths,
        mainConfig: ctx.config,
        registry: ctx.registry,
        users: ctx.users,
        mainAgentToken: () => ctx.mainAgentToken,
        hostEnv: ctx.hostEnv,
        discoveredGemini: () => ctx.models.models('gemini'),
        intercept: (msg) => ctx.workflows?.takeReply(msg) ?? null,
        toolEnv: ctx.toolEnv,
        ...(opts.killGraceMs !== undefined ? { graceMs: opts.killGraceMs } : {}),
        ...(opts.turnClock ? { clock: opts.turnClock } : {}),
      });
      ctx.agents = agents;
      const stop = () => agents.stop();
      try {
        await agents.start();
      } catch (e) {
        await stop();
        throw e;
      }
      return stop;
    },
  },
  {
    // After the agents, whose start seeds the workspaces that hold the per-agent skill roots. It
    // always runs (SPEC.md: a sync at start-up, then a watcher); a failure is logged, never fatal:
    // skills are a convenience, the agents work without them.
    name: 'skill-sync',
    async start(ctx) {
      const sync = new SkillSync({
        bus: ctx.bus,
        paths: ctx.paths,
        registry: ctx.registry,
        config: ctx.config,
        env: ctx.hostEnv,
        userHome: ctx.userHome,
        bundledDir: bundledSkillsDir(homeDefaultsDir()),
      });
      await sync.start().catch((e: unknown) => ctx.bus.emitLog('warn', `skill sync at start-up failed: ${describeError(e)}`));
      // A sub-agent added later gets its workspace when it starts: its roots join then.
      const sub = ctx.bus.subscribe('skill-sync', () => sync.poke(), (e) => e.type === AGENT_EVENTS.started);
      return async () => {
        sub.unsubscribe();
        await sync.stop();
      };
    },
  },
  {
    // After the agents (its runs go through them, and a restart's stale tasks are decided before any
    // new turn), before the internal API whose /tasks/* it answers. Stopped before the agents: the
    // runs their stop cuts are left running in the log, and the next start fails them as stale.
    name: 'task-hub',
    async start(ctx) {
      const hub = new TaskHub({
        bus: ctx.bus,
        host: ctx.host,
        log: ctx.log,
        paths: ctx.paths,
        tasks: tasksReadModel(ctx.log.projectionDb()),
        config: ctx.config,
        registry: ctx.registry,
        users: ctx.users,
        ...(ctx.opts.turnClock ? { clock: ctx.opts.turnClock } : {}),
      });
      await hub.start(ctx.startCorrelation);
      ctx.taskHub = hub;
      const interagent = startInteragentDelivery({ bus: ctx.bus, log: ctx.log, users: ctx.users, registry: ctx.registry });
      return () => {
        interagent.unsubscribe();
        ctx.taskHub = null;
        hub.stop();
      };
    },
  },
  {
    // After the agents (a run asks them), so it stops before them: what a stop cuts is then left for
    // the next start's restore instead of being recorded as the step's failure.
    name: 'workflows',
    async start(ctx) {
      ensureDir(ctx.paths.workflowsDir, 0o700);
      const engine = new WorkflowEngine({
        bus: ctx.bus,
        host: ctx.host,
        log: ctx.log,
        dir: ctx.paths.workflowsDir,
        load: () => loadWorkflowDefinitions(ctx.paths.workflowsDir, { checkExpression: checkWorkflowExpression }),
        config: () => ctx.config().workflow,
        ...(ctx.opts.turnClock ? { clock: ctx.opts.turnClock } : {}),
      });
      await engine.start();
      ctx.workflows = engine;
      return async () => {
        ctx.workflows = null;
        await engine.stop();
      };
    },
  },
  {
    // After the task hub, on the agents: one-shot runs (cron jobs, webhook cron_task) and the
    // scheduler. A run or fire the log holds unfinished was cut by the previous stop: queued again
    // when its CLI had not started, else recorded failed, before anything fires. Stopped before the
    // agents, like the hub.
    name: 'cron',
    async start(ctx) {
      const runner = new OneShotRuns({ bus: ctx.bus, log: ctx.log, paths: ctx.paths, config: ctx.config, timezone: ctx.defaultZone });
      const scheduler = new CronScheduler({
        bus: ctx.bus,
        log: ctx.log,
        paths: ctx.paths,
        runner,
        defaultZone: ctx.defaultZone,
        ...(ctx.opts.cronClock ? { clock: ctx.opts.cronClock } : {}),
        ...(ctx.opts.cronWatchIntervalMs !== undefined ? { watchIntervalMs: ctx.opts.cronWatchIntervalMs } : {}),
      });
      // Recovers the runner's cut runs first, then the scheduler's cut fires.
      await scheduler.start(ctx.startCorrelation);
      ctx.oneShotRunner = runner;
      ctx.cronScheduler = scheduler;
      return () => {
        ctx.cronScheduler = null;
        ctx.oneShotRunner = null;
        scheduler.stop();
        runner.stop();
      };
    },
  },
  {
    // After the agents: a sub-agent's cleanup settings come from its effective config.
    name: 'cleanup',
    start(ctx) {
      // SPEC.md: hot reload neither starts nor stops it; the hour and the limits do follow reloads.
      if (!ctx.config().cleanup.enabled) return;
      const now = () => ctx.bus.now();
      const job = new DailyJob({
        ...(ctx.opts.turnClock ? { clock: ctx.opts.turnClock } : {}),
        now,
        hour: () => ctx.config().cleanup.check_hour,
        timeZone: () => userTimeZone(ctx.config().user_timezone, ctx.hostEnv),
        run: async (at) => {
          await runCleanup({ bus: ctx.bus, agents: () => housekeptAgents(ctx), workspaceOf: (n) => workspaceDir(ctx.paths, n), configOf: (n) => ctx.agents.agentConfig(n).cleanup }, at, ctx.startCorrelation);
        },
        onError: (m) => ctx.bus.emitLog('error', `cleanup: ${m}`),
      });
      job.start();
      return () => job.stop();
    },
  },
  {
    // After the agents: it ends their old sessions through them.
    name: 'memory-maintenance',
    async start(ctx) {
      const memory = ctx.config().memory;
      if (!memory.enabled) return;
      await seedMemoryReview(
        {
          bus: ctx.bus,
          paths: ctx.paths,
          checkHour: memory.check_hour,
          seededBefore: () => ctx.log.read({ stream: HOUSEKEEPING_STREAM, types: [MEMORY_MAINTENANCE_EVENTS.review_seeded] }).length > 0,
        },
        ctx.startCorrelation,
      ).catch((e: unknown) => ctx.bus.emitLog('warn', `memory review cron job not seeded: ${describeError(e)}`));
      const maintenance = new MemoryMaintenance({
        bus: ctx.bus,
        agents: () => housekeptAgents(ctx),
        configOf: (n) => ctx.agents.agentConfig(n).memory,
        workspaceOf: (n) => workspaceDir(ctx.paths, n),
      });
      const job = new DailyJob({
        ...(ctx.opts.turnClock ? { clock: ctx.opts.turnClock } : {}),
        now: () => ctx.bus.now(),
        hour: () => ctx.config().memory.check_hour,
        timeZone: () => userTimeZone(ctx.config().user_timezone, ctx.hostEnv),
        run: async (at) => void (await maintenance.run(at, ctx.startCorrelation)),
        onError: (m) => ctx.bus.emitLog('error', `memory maintenance: ${m}`),
      });
      job.start();
      return () => job.stop();
    },
  },
  {
    // After the agents it asks and whose stale turns it ends; stopped before them.
    name: 'heartbeat',
    start(ctx) {
      const turns = agentTurnsReadModel(ctx.log.projectionDb());
      const heartbeat = new Heartbeat({
        bus: ctx.bus,
        ...(ctx.opts.turnClock ? { clock: ctx.opts.turnClock } : {}),
        agents: () => housekeptAgents(ctx),
        configOf: (n) => ctx.agents.agentConfig(n),
        timeZoneOf: (n) => userTimeZone(ctx.agents.agentConfig(n).user_timezone, ctx.hostEnv),
        runningTurns: (n) => turns.running(n),
        deliver: deliverToOriginChat(ctx.bus),
      });
      // SPEC.md: enabled at start or not at all; a later reload changes what a tick does, not whether loops run.
      heartbeat.start();
      return () => heartbeat.stop();
    },
  },
  {
    name: 'internal-api',
    async start(ctx) {
      const api = await startInternalApi({
        bus: ctx.bus,
        host: '127.0.0.1',
        port: ctx.opts.internalPort ?? ctx.loaded.config.interagent_port,
        registry: ctx.registry,
        users: ctx.users,
        mainAgentToken: () => ctx.mainAgentToken,
        config: ctx.config,
      }).catch(portTaken('interagent_port'));
      ctx.internalApi = api;
      return () => api.close();
    },
  },
  {
    // Before the API server: its admin routes send the users directory's commands.
    name: 'users',
    async start(ctx) {
      // Before the bootstrap admin is written: its save must land in the copy requests read.
      const live = startLiveUsers({ bus: ctx.bus, paths: ctx.paths });
      ctx.liveUsers = live;
      await live.ready;
      ctx.bootstrap = ensureBootstrapAdmin(ctx.paths, ctx.config(), ctx.bus, ctx.bus.now()).catch((e: unknown) => {
        ctx.bus.emitLog('error', `could not create the first-start admin: ${describeError(e)}`);
        return null;
      });
      ctx.adminApi = ctx.config().api.enabled || panelListenAddress(ctx.panelConfig(), false) !== null;
      if (ctx.adminApi) {
        const { secret, generated } = ensureJwtSecret(ctx.paths, () => randomBytes(48).toString('base64url'));
        ctx.generatedJwtSecret = secret;
        if (generated) ctx.bus.emitLog('info', `api.jwt_secret was empty: generated one and saved it to ${ctx.paths.configFile}`);
      }
      const users = startUsersDirectory({ bus: ctx.bus, paths: ctx.paths, config: ctx.config, jwtSecret: ctx.jwtSecret, apiToken: ctx.apiToken });
      return async () => {
        // A start that fails early must not leave the bootstrap writing after the bus closed.
        await ctx.bootstrap;
        users.unsubscribe();
        ctx.liveUsers = null;
        await live.close();
      };
    },
  },
  {
    name: 'messengers',
    start(ctx) {
      return startMessengers({ bus: ctx.bus, log: ctx.log, agentConfig: (name) => ctx.agents.agentConfig(name), runningAgents: () => ctx.agents.names(), users: ctx.users, transports: ctx.transports, paths: ctx.paths, ...(ctx.opts.messengerRetry ? { retry: ctx.opts.messengerRetry } : {}) });
    },
  },
  {
    name: 'api-server',
    async start(ctx) {
      const files = panelFiles({ dir: ctx.opts.panelDir ?? panelDir(ctx.hostEnv) });
      ctx.apiServer = await startApiServer({
        ...apiListenAddress(ctx),
        listenApi: ctx.config().api.enabled,
        surfaces: apiSurfaces(ctx),
        version: VERSION,
        log: (level, msg, fields) => ctx.bus.emitLog(level, msg, fields),
        phase: () => ctx.phase,
        panel: { files, enabled: () => ctx.config().panel.enabled },
        ...(ctx.adminApi ? { http: adminCors(ctx.config) } : {}),
      }).catch(
        portTaken('api.port'),
      );
      const server = ctx.apiServer;
      // One change at a time: a second edit waits until the listener the first one asked for is bound.
      let applying = Promise.resolve();
      const apply = () => (applying = applying.then(() => applyPanelListener(ctx)).catch((e: unknown) => ctx.bus.emitLog('error', `admin panel listener: ${describeError(e)}`)));
      await apply();
      const reloads = ctx.bus.subscribe('panel-listener', (e) => {
        if (e.type === CONFIG_EVENTS.reloaded && (e.data as { hot_applied: string[] }).hot_applied.includes('panel')) void apply();
      });
      return async () => {
        reloads.unsubscribe();
        await applying;
        server?.close();
        ctx.panelListener = null;
        ctx.removeDirectTransport();
      };
    },
  },
  {
    // After the agents and the one-shot runs, before the webhook server takes new calls: accepted
    // calls the previous run never settled are run now if the agent never saw them, else settled
    // once from the log; none is asked twice.
    name: 'webhook-recovery',
    async start(ctx) {
      await recoverWebhookCalls({ bus: ctx.bus, log: ctx.log, paths: ctx.paths, dispatch: ctx.webhookDispatch });
    },
  },
  {
    // Its calls are handled by the automation records (admin-ops) and run on the agents.
    name: 'webhook-server',
    async start(ctx) {
      const cfg = ctx.config().webhooks;
      if (!cfg.enabled) return;
      const { token, generated } = ensureWebhookToken(ctx.paths, () => randomBytes(32).toString('base64url'));
      ctx.generatedWebhookToken = token;
      if (generated) ctx.bus.emitLog('info', `webhooks.token was empty: generated one and saved it to ${ctx.paths.configFile}`);
      const server = await startWebhookServer({
        bus: ctx.bus,
        host: cfg.host,
        port: ctx.opts.webhookPort ?? cfg.port,
        maxBodyBytes: cfg.max_body_bytes,
        rateLimitPerMinute: () => ctx.config().webhooks.rate_limit_per_minute,
        ...(ctx.opts.clock ? { clock: ctx.opts.clock } : {}),
      }).catch(portTaken('webhooks.port'));
      ctx.webhookServer = server;
      return () => server.close();
    },
  },
];

/**
 * A port that cannot be bound stops the start with one line naming the port, the config key that
 * sets it and, when /proc shows it, the process holding it.
 */
function portTaken(key: string): (e: unknown) => never {
  return (e) => {
    if (!isSvcError(e, 'listen-failed')) throw e;
    const { host, port } = (e.details ?? {}) as { host?: string; port?: number };
    const holder = typeof port === 'number' && port > 0 ? listeningPortHolder(port) : null;
    const why = holder ? `it is in use by pid ${holder.pid} (${holder.command})` : 'it is in use, or not an address of this machine';
    throw new SvcError('listen-failed', `cannot listen on ${host}:${port} (${key} in config.json): ${why}; stop that process or choose another ${key}`, e.details);
  };
}

/** Main and every sub-agent in the registry, running or not: their workspaces are still theirs. */
function housekeptAgents(ctx: DaemonContext): string[] {
  return [MAIN_AGENT, ...ctx.registry().map((e) => e.name)];
}

/** What provider discovery finds now, with the models the cache refresher knows: the direct API and the admin listing share it. */
function detectedProviders(ctx: DaemonContext) {
  return detectProviders({
    env: ctx.hostEnv,
    home: ctx.userHome,
    paths: ctx.paths,
    config: ctx.config(),
    models: { codex: ctx.models.models('codex'), gemini: ctx.models.models('gemini') },
  });
}

/**
 * Opens, moves or closes the panel's own listener to match `panel` in the config in force. A busy
 * port is one warning and no listener: the daemon runs on (the panel is still on the API port when
 * that runs). Without a server in this run there is nothing to listen with until the next start.
 */
async function applyPanelListener(ctx: DaemonContext): Promise<void> {
  const wanted = panelListenAddress(ctx.panelConfig(), ctx.config().api.enabled);
  const current = ctx.panelListener;
  if (sameAddress(current?.address ?? null, wanted)) return;
  if (current) {
    current.listening?.close();
    ctx.panelListener = null;
    if (current.listening) ctx.bus.emitLog('info', `admin panel stopped listening on ${current.address.host}:${current.listening.port}`);
  }
  if (!wanted) return;
  const server = ctx.apiServer;
  if (!server) {
    ctx.bus.emitLog('warn', `panel.listen asks for the admin panel on ${wanted.host}:${wanted.port}, but this run of svc serves no HTTP; it opens at the next start`);
    return;
  }
  const warning = publicBindWarning('the admin panel', wanted.host, null);
  if (warning) ctx.bus.emitLog('warn', warning, { host: wanted.host });
  try {
    const listening = await server.open(wanted.host, wanted.port);
    ctx.panelListener = { address: wanted, listening };
    ctx.bus.emitLog('info', `admin panel listening on ${browserUrl(wanted.host, listening.port)}`);
  } catch (e) {
    if (!isSvcError(e, 'listen-failed')) throw e;
    ctx.panelListener = { address: wanted, listening: null };
    const holder = wanted.port > 0 ? listeningPortHolder(wanted.port) : null;
    const why = holder ? `it is in use by pid ${holder.pid} (${holder.command})` : 'it is in use, or not an address of this machine';
    ctx.bus.emitLog('warn', `the admin panel cannot listen on ${wanted.host}:${wanted.port} (panel.port in config.json): ${why}; svc runs on without it; svc admin start --port N serves it on another port`, { host: wanted.host, port: wanted.port });
  }
}

function apiListenAddress(ctx: DaemonContext): { host: string; port: number; allowPublic: boolean } {
  const api = ctx.config().api;
  return { host: api.host, port: ctx.opts.apiPort ?? api.port, allowPublic: api.allow_public };
}

/**
 * Every surface the config enables on the API server. Today `api.enabled` is the only switch:
 * without it no surface needs the server, so nothing listens on `api.port`. The shared `/api/*`
 * routes ride on whichever surface runs. The admin API shares the switch and the port with `/ws`.
 */
function apiSurfaces(ctx: DaemonContext): Surface[] {
  const { bus, paths } = ctx;
  const direct = openDirectApi({
    bus,
    config: ctx.config,
    paths,
    connectionMachine,
    providers: () => authOkProviders(detectedProviders(ctx)),
  });
  if (direct) ctx.generatedApiToken = direct.hub.deps.token;
  if (direct) ctx.removeDirectTransport = ctx.transports.add(direct.hub);
  return [
    ...(direct ? [direct.surface] : []),
    ...(ctx.adminApi
      ? [
          adminSurface({
            bus,
            paths,
            config: ctx.config,
            registry: ctx.registry,
            users: ctx.users,
            notifications: ctx.notifications,
            clock: ctx.opts.clock ?? REAL_CLOCK.now,
            version: VERSION,
            socket: { connectionMachine: adminConnectionMachine, mayUse: (p, agent) => agentAccess(p, agent, ctx.registry()).allowed },
            jwtSecret: ctx.jwtSecret,
            apiToken: ctx.apiToken,
          }),
        ]
      : []),
    apiSurface({
      bus,
      paths,
      readModel: ctx.notifications,
      fileAccess: () => ctx.config().file_access,
    }),
  ];
}

/** POSIX hosts name their zone by the `/etc/localtime` symlink (resolveTimezone reads the zoneinfo path). */
function hostZone(): string | null {
  try {
    return readlinkSync('/etc/localtime');
  } catch {
    return null;
  }
}
