import type { ActorHost, AgentSupervisor } from '../actors/index.js';
import type { Bus } from '../bus/index.js';
import { panelBuilt, type MountedRoute } from '../edges/index.js';
import { browserUrl, sandboxStatus, transportStatuses } from '../machines/index.js';
import { describeError, type AgentConfig, type Listener } from '../schemas/index.js';
import { resolveHomeRoot, type SqliteEventLog } from '../store/index.js';
import { DAEMON_SUBSYSTEMS, DaemonContext, type DaemonOptions } from './daemon-subsystems.js';
import { VERSION } from './package-info.js';
import { panelDir } from './panel-location.js';
import { startBanner, type PanelFacts } from './start-banner.js';
import { startSubsystems } from './subsystems.js';

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
 * Composition root: starts DAEMON_SUBSYSTEMS in order (lock, config, log, bus, actors, edges) and
 * stops them in reverse; a failed start stops those already started before the error is thrown.
 */
export async function startDaemon(opts: DaemonOptions): Promise<RunningDaemon> {
  const ctx = new DaemonContext(opts);
  const started = await startSubsystems(DAEMON_SUBSYSTEMS, ctx);
  const { bus } = ctx;
  const { paths } = opts;
  const bootstrap = await ctx.bootstrap;
  const listeners: Listener[] = [{ surface: 'internal API', host: '127.0.0.1', port: ctx.internalApi.port }];
  if (ctx.apiServer?.port != null) listeners.push({ surface: 'direct API', host: ctx.config().api.host, port: ctx.apiServer.port });
  const ownPanel = ctx.panelListener;
  if (ownPanel?.listening) listeners.push({ surface: 'admin panel', host: ownPanel.address.host, port: ownPanel.listening.port });
  const panel = await panelFacts(ctx.panelConfig().enabled, opts.panelDir ?? panelDir(ctx.hostEnv), listeners, ownPanel);
  if (ctx.webhookServer) listeners.push({ surface: 'webhooks', host: ctx.config().webhooks.host, port: ctx.webhookServer.port });
  if (ctx.fileshare) listeners.push({ surface: 'fileshare', host: ctx.config().fileshare.host, port: ctx.fileshare.port });
  // Committed before the banner says it runs: `svc status` right after it must find daemon.ready.
  await ctx.host.sendAndCommit('daemon', { type: 'ready', subsystems: [...started.names, ...ctx.agents.names().map((n) => `agent:${n}`)], listeners });
  // Restart-required (SPEC.md), so said once per start: what docker.enabled asked for and svc does not do.
  for (const warning of sandboxStatus(ctx.config()).warnings) bus.emitLog('warn', warning);
  ctx.phase = 'up';
  bus.emitLog('info', `svc ${VERSION} running`, { home: paths.root, pid: process.pid, events: paths.eventsDb });

  let stopping: Promise<void> | null = null;
  return {
    bus,
    internalPort: ctx.internalApi.port,
    apiPort: ctx.apiServer?.port ?? null,
    webhookPort: ctx.webhookServer?.port ?? null,
    filesharePort: ctx.fileshare?.port ?? null,
    panelPort: () => ctx.panelListener?.listening?.port ?? null,
    listeners,
    apiRoutes: () => ctx.apiServer?.routes() ?? [],
    banner: () =>
      startBanner({
        version: VERSION,
        pid: process.pid,
        paths,
        configCreated: ctx.loaded.created,
        listeners,
        transports: transportStatuses(ctx.config()),
        sandbox: sandboxStatus(ctx.config()),
        agents: ctx.agents.names(),
        apiEnabled: ctx.config().api.enabled,
        panel,
        bootstrapPasswordFile: bootstrap?.created ? bootstrap.passwordFile : null,
        svc: paths.root === resolveHomeRoot() ? './bin/svc.js' : `./bin/svc.js --home ${/\s/.test(paths.root) ? JSON.stringify(paths.root) : paths.root}`,
      }),
    host: ctx.host,
    agents: ctx.agents,
    log: ctx.log,
    config: ctx.config,
    stop(reason: string) {
      stopping ??= (async () => {
        bus.emitLog('info', `stopping (${reason})`);
        // A script waiting on /health must not take a daemon tearing down for a ready one.
        ctx.phase = 'stopping';
        ctx.endReason = reason;
        ctx.daemon.send({ type: 'stop', reason });
        await started.stop();
      })();
      return stopping;
    },
  };
}

/** What the banner says of the panel at start: where it is served, or why it is not. */
async function panelFacts(enabled: boolean, dir: string, listeners: readonly Listener[], own: DaemonContext['panelListener']): Promise<PanelFacts> {
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
