import { REAL_CLOCK, TransportRegistry, type Bus } from '../../bus/index.js';
import { adminCors, adminSurface, apiSurface, openDirectApi, panelFiles, publicBindWarning, startApiServer, type AdminDeps, type ApiServer, type ConnectionSpawner, type Surface } from '../../edges/index.js';
import type { ActorHost } from '../../actors/index.js';
import { adminConnectionMachine, agentAccess, authOkProviders, browserUrl, connectionMachine, panelListenAddress, sameAddress } from '../../machines/index.js';
import { CONFIG_EVENTS, describeError, isSvcError, type AgentConfig } from '../../schemas/index.js';
import { VERSION } from '../package-info.js';
import { panelDir } from '../panel-location.js';
import { part } from '../subsystems.js';
import { detectedProviders } from './agents.js';
import { panelConfig } from './config.js';
import { ACTOR_HOST, ADMIN_API, API_SERVER, BUS, CONFIG, GENERATED_API_TOKEN, HOST_ENV, JWT_SECRET, LIFECYCLE, MODELS, NOTIFICATIONS, OPTIONS, PANEL_LISTENER, PATHS, REGISTRY, TRANSPORTS, USERS, type PanelListenerCell } from './keys.js';
import { whyPortTaken, portTaken } from './port-taken.js';
import { apiToken } from './users-auth.js';

/* The API server: the direct API, the admin API and panel, the shared /api/* routes, and the panel's own listener. */

export const apiServer = part({
  name: 'api-server',
  needs: {
    opts: OPTIONS,
    bus: BUS,
    paths: PATHS,
    config: CONFIG,
    registry: REGISTRY,
    users: USERS,
    notifications: NOTIFICATIONS,
    transports: TRANSPORTS,
    models: MODELS,
    host: HOST_ENV,
    actors: ACTOR_HOST,
    lifecycle: LIFECYCLE,
    adminApi: ADMIN_API,
    jwtSecret: JWT_SECRET,
  },
  provides: { server: API_SERVER, generatedApiToken: GENERATED_API_TOKEN, panelListener: PANEL_LISTENER },
  async start(d) {
    const { opts, bus, config, host, lifecycle, adminApi } = d;
    const files = panelFiles({ dir: opts.panelDir ?? panelDir(host.env) });
    const { surfaces, generatedApiToken, removeDirectTransport } = apiSurfaces(d);
    const api = config().api;
    const server = await startApiServer({
      host: api.host,
      port: opts.apiPort ?? api.port,
      allowPublic: api.allow_public,
      listenApi: api.enabled,
      surfaces,
      version: VERSION,
      log: (level, msg, fields) => bus.emitLog(level, msg, fields),
      phase: () => lifecycle.phase,
      panel: { files, enabled: () => config().panel.enabled },
      ...(adminApi ? { http: adminCors(config) } : {}),
    }).catch(portTaken('api.port'));
    const panelListener: PanelListenerCell = { current: null };
    // One change at a time: a second edit waits until the listener the first one asked for is bound.
    let applying = Promise.resolve();
    const apply = () =>
      (applying = applying.then(() => applyPanelListener({ bus, config, env: host.env, server, cell: panelListener })).catch((e: unknown) => bus.emitLog('error', `admin panel listener: ${describeError(e)}`)));
    await apply();
    const reloads = bus.subscribe('panel-listener', (e) => {
      if (e.type === CONFIG_EVENTS.reloaded && (e.data as { hot_applied: string[] }).hot_applied.includes('panel')) void apply();
    });
    return {
      provide: { server, generatedApiToken, panelListener },
      stop: async () => {
        reloads.unsubscribe();
        await applying;
        server?.close();
        panelListener.current = null;
        removeDirectTransport();
      },
    };
  },
});

/** The admin routes' own dependencies, and what the other surfaces need beside them. */
interface SurfaceDeps extends Pick<AdminDeps, 'bus' | 'paths' | 'config' | 'registry' | 'users' | 'notifications'> {
  actors: ActorHost;
  transports: TransportRegistry;
  models: Parameters<typeof detectedProviders>[0]['models'];
  host: Parameters<typeof detectedProviders>[0]['host'];
  opts: { clock?: () => number };
  adminApi: boolean;
  jwtSecret: () => string;
}

/**
 * Every surface the config enables on the API server. Today `api.enabled` is the only switch:
 * without it no surface needs the server, so nothing listens on `api.port`. The shared `/api/*`
 * routes ride on whichever surface runs. The admin API shares the switch and the port with `/ws`.
 */
function apiSurfaces(d: SurfaceDeps): { surfaces: Surface[]; generatedApiToken: string; removeDirectTransport: () => void } {
  const { bus, paths, config, registry } = d;
  // Each socket's machine is an actor of the daemon's host, like agents and turns: supervised, its facts on `conn:<id>`.
  const spawnConnection: ConnectionSpawner = (id, machine, input) => d.actors.spawn(`conn:${id}`, machine, { stream: `conn:${id}`, input });
  const direct = openDirectApi({
    bus,
    config,
    paths,
    connectionMachine,
    spawnConnection,
    providers: () => authOkProviders(detectedProviders(d)),
  });
  const generatedApiToken = direct ? direct.hub.deps.token : '';
  const removeDirectTransport = direct ? d.transports.add(direct.hub) : () => undefined;
  const surfaces = [
    ...(direct ? [direct.surface] : []),
    ...(d.adminApi
      ? [
          adminSurface({
            bus,
            paths,
            config,
            registry,
            users: d.users,
            notifications: d.notifications,
            clock: d.opts.clock ?? REAL_CLOCK.now,
            version: VERSION,
            socket: { connectionMachine: adminConnectionMachine, spawnConnection, mayUse: (p, agent) => agentAccess(p, agent, registry()).allowed },
            jwtSecret: d.jwtSecret,
            apiToken: apiToken(config, () => generatedApiToken),
          }),
        ]
      : []),
    apiSurface({
      bus,
      paths,
      readModel: d.notifications,
      fileAccess: () => config().file_access,
    }),
  ];
  return { surfaces, generatedApiToken, removeDirectTransport };
}

/**
 * Opens, moves or closes the panel's own listener to match `panel` in the config in force. A busy
 * port is one warning and no listener: the daemon runs on (the panel is still on the API port when
 * that runs). Without a server in this run there is nothing to listen with until the next start.
 */
async function applyPanelListener(d: { bus: Bus; config: () => AgentConfig; env: NodeJS.ProcessEnv; server: ApiServer | null; cell: PanelListenerCell }): Promise<void> {
  const { bus, cell, server } = d;
  const wanted = panelListenAddress(panelConfig(d.config, d.env), d.config().api.enabled);
  const current = cell.current;
  if (sameAddress(current?.address ?? null, wanted)) return;
  if (current) {
    current.listening?.close();
    cell.current = null;
    if (current.listening) bus.emitLog('info', `admin panel stopped listening on ${current.address.host}:${current.listening.port}`);
  }
  if (!wanted) return;
  if (!server) {
    bus.emitLog('warn', `panel.listen asks for the admin panel on ${wanted.host}:${wanted.port}, but this run of svc serves no HTTP; it opens at the next start`);
    return;
  }
  const warning = publicBindWarning('the admin panel', wanted.host, null);
  if (warning) bus.emitLog('warn', warning, { host: wanted.host });
  try {
    const listening = await server.open(wanted.host, wanted.port);
    cell.current = { address: wanted, listening };
    bus.emitLog('info', `admin panel listening on ${browserUrl(wanted.host, listening.port)}`);
  } catch (e) {
    if (!isSvcError(e, 'listen-failed')) throw e;
    cell.current = { address: wanted, listening: null };
    bus.emitLog('warn', `the admin panel cannot listen on ${wanted.host}:${wanted.port} (panel.port in config.json): ${whyPortTaken(wanted.port)}; svc runs on without it; svc admin start --port N serves it on another port`, { host: wanted.host, port: wanted.port });
  }
}
