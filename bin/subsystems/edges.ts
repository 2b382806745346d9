import { randomBytes } from 'node:crypto';
import { startFileshareServer, startInternalApi, startWebhookServer } from '../../edges/index.js';
import { isSvcError } from '../../schemas/index.js';
import { ensureDir, ensureWebhookToken } from '../../store/index.js';
import { part } from '../subsystems.js';
import { BUS, CONFIG, FILESHARE, GENERATED_WEBHOOK_TOKEN, INTERNAL_API, MAIN_AGENT_TOKEN, OPTIONS, PATHS, REGISTRY, TASK_HUB, USERS, WEBHOOK_CALLS_RECOVERED, WEBHOOK_SERVER } from './keys.js';
import { portTaken } from './port-taken.js';

/* The listeners besides the API server (api-server.ts): fileshare, the internal API agents call, the webhook server. */

export const fileshare = part({
  // Before the agents, so their first turn already gets FILESHARE_URL. Stopped after them.
  name: 'fileshare',
  needs: { opts: OPTIONS, bus: BUS, paths: PATHS, config: CONFIG },
  provides: { server: FILESHARE },
  async start({ opts, bus, paths, config }) {
    const cfg = config().fileshare;
    if (!cfg.enabled) return { provide: { server: null } };
    ensureDir(paths.fileshareDir, 0o755);
    // A fileshare refused for its address leaves the rest running: agents and the API do not
    // depend on it, and its one error line (and `svc doctor`) says how to turn it on.
    const server = await startFileshareServer({
      paths,
      host: cfg.host,
      port: opts.filesharePort ?? cfg.port,
      allowPublic: cfg.allow_public,
      log: (level, msg, fields) => bus.emitLog(level, msg, fields),
    })
      .catch(portTaken('fileshare.port'))
      .catch((e: unknown) => {
        if (!isSvcError(e, 'public-bind-refused')) throw e;
        bus.emitLog('error', e.message, { host: cfg.host });
        return null;
      });
    if (!server) return { provide: { server: null } };
    return { provide: { server }, stop: () => server.close() };
  },
});

export const internalApi = part({
  name: 'internal-api',
  // The task hub answers its /tasks/*, so it starts first; the agents it serves are up by then.
  needs: { opts: OPTIONS, bus: BUS, config: CONFIG, registry: REGISTRY, users: USERS, mainAgentToken: MAIN_AGENT_TOKEN, hub: TASK_HUB },
  provides: { api: INTERNAL_API },
  async start({ opts, bus, config, registry, users, mainAgentToken }) {
    const api = await startInternalApi({
      bus,
      host: '127.0.0.1',
      port: opts.internalPort ?? config().interagent_port,
      registry,
      users,
      mainAgentToken: () => mainAgentToken,
      config,
    }).catch(portTaken('interagent_port'));
    return { provide: { api }, stop: () => api.close() };
  },
});

export const webhookServer = part({
  // Its calls are handled by the automation records (admin-ops) and run on the agents; the calls a
  // previous run left unsettled are dealt with before it takes new ones.
  name: 'webhook-server',
  needs: { opts: OPTIONS, bus: BUS, paths: PATHS, config: CONFIG, recovered: WEBHOOK_CALLS_RECOVERED },
  provides: { server: WEBHOOK_SERVER, generatedToken: GENERATED_WEBHOOK_TOKEN },
  async start({ opts, bus, paths, config }) {
    const cfg = config().webhooks;
    if (!cfg.enabled) return { provide: { server: null, generatedToken: '' } };
    const { token, generated } = ensureWebhookToken(paths, () => randomBytes(32).toString('base64url'));
    if (generated) bus.emitLog('info', `webhooks.token was empty: generated one and saved it to ${paths.configFile}`);
    const server = await startWebhookServer({
      bus,
      host: cfg.host,
      port: opts.webhookPort ?? cfg.port,
      maxBodyBytes: cfg.max_body_bytes,
      rateLimitPerMinute: () => config().webhooks.rate_limit_per_minute,
      ...(opts.clock ? { clock: opts.clock } : {}),
    }).catch(portTaken('webhooks.port'));
    return { provide: { server, generatedToken: token }, stop: () => server.close() };
  },
});
