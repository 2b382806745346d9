import type { ActorHost, AgentSupervisor } from '../actors/index.js';
import type { Bus } from '../bus/index.js';
import { panelBuilt, type MountedRoute } from '../edges/index.js';
import { browserUrl, sandboxStatus, transportStatuses } from '../machines/index.js';
import { describeError, type AgentConfig, type Listener } from '../schemas/index.js';
import { resolveHomeRoot, type SqliteEventLog } from '../store/index.js';
import { DAEMON_SUBSYSTEMS, daemonSeeds, type DaemonLifecycle, type DaemonOptions } from './daemon-subsystems.js';
import { VERSION } from './package-info.js';
import { panelDir } from './panel-location.js';
import { startBanner, type PanelFacts } from './start-banner.js';
import { startSubsystems } from './subsystems.js';
import { panelConfig } from './subsystems/config.js';
import { ACTOR_HOST, AGENTS, API_SERVER, BOOTSTRAP, BUS, CONFIG, DAEMON_ACTOR, EVENT_LOG, FILESHARE, HOST_ENV, INTERNAL_API, LOADED_CONFIG, PANEL_LISTENER, WEBHOOK_SERVER, type PanelListenerState } from './subsystems/keys.js';

export type { DaemonOptions } from './daemon-subsystems.js';

export interface RunningDaemon {
  bus: Bus;
  /** Where the internal API actually listens. */
  internalPort: number;
  /** Where the API server listens; null when no surface needs it (`api.enabled` false). */
  apiPort: number | null;
  /** Where the webhook server listens; null unless `webhooks.enabled`. */
  webhookPort: number | null;
  /** Where the fileshare server listens; null unless `fileshare.enabled`. */
  filesharePort: number | null;
  /** Where the admin panel's own listener is bound now; null while it is not (see `panel.listen`). */
  panelPort(): number | null;
  /** Every port this run serves. */
  listeners: Listener[];
  /** The API server's routes as mounted; empty when it does not run. */
  apiRoutes(): readonly MountedRoute[];
  /** The start banner: home, config, listeners, transports, next step. */
  banner(): string;
  host: ActorHost;
  agents: AgentSupervisor;
  log: SqliteEventLog;
  /** The config in force: hot-reloadable fields follow edits of config.json. */
  config(): AgentConfig;
  stop(reason: string): Promise<void>;
}

/**
 * Composition root: starts DAEMON_SUBSYSTEMS in the order their needs give (lock, config, log, bus,
 * actors, edges) and stops them in reverse; a failed start stops those already started before the
 * error is thrown.
 */
export async function startDaemon(opts: DaemonOptions): Promise<RunningDaemon> {
  const lifecycle: DaemonLifecycle = { phase: 'starting', endReason: 'start failed' };
  const started = await startSubsystems(DAEMON_SUBSYSTEMS, daemonSeeds(opts, lifecycle));
  const bus = started.get(BUS);
  const config = started.get(CONFIG);
  const agents = started.get(AGENTS);
  const host = started.get(ACTOR_HOST);
  const log = started.get(EVENT_LOG);
  const daemon = started.get(DAEMON_ACTOR);
  const internalApi = started.get(INTERNAL_API);
  const apiServer = started.get(API_SERVER);
  const panelListener = started.get(PANEL_LISTENER);
  const webhookServer = started.get(WEBHOOK_SERVER);
  const fileshare = started.get(FILESHARE);
  const env = started.get(HOST_ENV).env;
  const loaded = started.get(LOADED_CONFIG);
  const { paths } = opts;
  const bootstrap = await started.get(BOOTSTRAP);
  const listeners: Listener[] = [{ surface: 'internal API', host: '127.0.0.1', port: internalApi.port }];
  if (apiServer?.port != null) listeners.push({ surface: 'direct API', host: config().api.host, port: apiServer.port });
  const ownPanel = panelListener.current;
  if (ownPanel?.listening) listeners.push({ surface: 'admin panel', host: ownPanel.address.host, port: ownPanel.listening.port });
  const panel = await panelFacts(panelConfig(config, env).enabled, opts.panelDir ?? panelDir(env), listeners, ownPanel);
  if (webhookServer) listeners.push({ surface: 'webhooks', host: config().webhooks.host, port: webhookServer.port });
  if (fileshare) listeners.push({ surface: 'fileshare', host: config().fileshare.host, port: fileshare.port });
  // Committed before the banner says it runs: `svc status` right after it must find daemon.ready.
  await host.sendAndCommit('daemon', { type: 'ready', subsystems: [...started.names, ...agents.names().map((n) => `agent:${n}`)], listeners });
  // Restart-required (SPEC.md), so said once per start: what docker.enabled asked for and svc does not do.
  for (const warning of sandboxStatus(config()).warnings) bus.emitLog('warn', warning);
  lifecycle.phase = 'up';
  bus.emitLog('info', `svc ${VERSION} running`, { home: paths.root, pid: process.pid, events: paths.eventsDb });

  let stopping: Promise<void> | null = null;
  return {
    bus,
    internalPort: internalApi.port,
    apiPort: apiServer?.port ?? null,
    webhookPort: webhookServer?.port ?? null,
    filesharePort: fileshare?.port ?? null,
    panelPort: () => panelListener.current?.listening?.port ?? null,
    listeners,
    apiRoutes: () => apiServer?.routes() ?? [],
    banner: () =>
      startBanner({
        version: VERSION,
        pid: process.pid,
        paths,
        configCreated: loaded.created,
        listeners,
        transports: transportStatuses(config()),
        sandbox: sandboxStatus(config()),
        agents: agents.names(),
        apiEnabled: config().api.enabled,
        panel,
        bootstrapPasswordFile: bootstrap?.created ? bootstrap.passwordFile : null,
        svc: paths.root === resolveHomeRoot() ? './bin/svc.js' : `./bin/svc.js --home ${/\s/.test(paths.root) ? JSON.stringify(paths.root) : paths.root}`,
      }),
    host,
    agents,
    log,
    config,
    stop(reason: string) {
      stopping ??= (async () => {
        bus.emitLog('info', `stopping (${reason})`);
        // A script waiting on /health must not take a daemon tearing down for a ready one.
        lifecycle.phase = 'stopping';
        lifecycle.endReason = reason;
        daemon.send({ type: 'stop', reason });
        await started.stop();
      })();
      return stopping;
    },
  };
}

/** What the banner says of the panel at start: where it is served, or why it is not. */
async function panelFacts(enabled: boolean, dir: string, listeners: readonly Listener[], own: PanelListenerState | null): Promise<PanelFacts> {
  const urls = listeners.filter((l) => l.surface === 'admin panel' || l.surface === 'direct API').map((l) => browserUrl(l.host, l.port));
  return {
    enabled,
    built: await panelBuilt(dir),
    urls: enabled ? urls : [],
    busy: own && !own.listening ? own.address : null,
  };
}

/**
 * `svc start`: run until SIGINT/SIGTERM, then shut down cleanly and flush the log. The first line
 * is printed before anything is opened, so whoever started svc sees it at once; a signal that
 * arrives while svc is still starting stops it as soon as the start is complete.
 */
export async function runDaemon(opts: DaemonOptions, out: NodeJS.WritableStream = process.stdout): Promise<number> {
  const signalled = new Promise<string>((resolve) => {
    process.once('SIGINT', () => resolve('SIGINT'));
    process.once('SIGTERM', () => resolve('SIGTERM'));
  });
  out.write(`svc ${VERSION} starting on ${opts.paths.root}\n`);
  const daemon = await startDaemon(opts);
  out.write(daemon.banner() + '\n');
  const signal = await new Promise<string>((resolve) => {
    void signalled.then(resolve);
    process.once('uncaughtException', (err) => {
      daemon.bus.emitLog('error', `uncaught exception: ${describeError(err)}`, { stack: err.stack ?? '' });
      resolve('crash');
    });
  });
  await daemon.stop(signal);
  return signal === 'crash' ? 1 : 0;
}
