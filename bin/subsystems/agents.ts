import { AgentSupervisor, ModelCacheRefresher, detectProviders, localModelSource, recoverOrphanProcesses, startAdminAgents } from '../../actors/index.js';
import type { AgentConfig } from '../../schemas/index.js';
import { agentTurnsReadModel, type HomePaths } from '../../store/index.js';
import { part } from '../subsystems.js';
import { ACTOR_HOST, AGENTS, BUS, CONFIG, EVENT_LOG, FILESHARE, HOST_ENV, MAIN_AGENT_TOKEN, MODELS, OPTIONS, ORPHANS_RECOVERED, PATHS, REGISTRY, START_CORRELATION, USERS, WORKFLOWS } from './keys.js';
import type { HostEnvironment } from './daemon-options.js';

/* The agents and what they run on: the provider model cache, the admin API's agent commands, orphan recovery, the supervisor. */

export const modelCache = part({
  name: 'model-cache',
  needs: { paths: PATHS, bus: BUS, host: HOST_ENV },
  provides: { models: MODELS },
  start({ paths, bus, host }) {
    const models = new ModelCacheRefresher({
      paths,
      now: () => bus.now(),
      fetchModels: localModelSource({ env: host.env, home: host.userHome }),
      onResult: (r) => r.error && bus.emitLog('warn', `model cache: ${r.error}`),
    });
    // Startup refresh reads local CLI files only; agents start meanwhile with whatever cache exists.
    void models.start();
    return { provide: { models }, stop: () => models.stop() };
  },
});

/** What provider discovery finds now, with the models the cache refresher knows: the direct API and the admin listing share it. */
export function detectedProviders(d: { host: HostEnvironment; paths: HomePaths; config: () => AgentConfig; models: ModelCacheRefresher }) {
  return detectProviders({
    env: d.host.env,
    home: d.host.userHome,
    paths: d.paths,
    config: d.config(),
    models: { codex: d.models.models('codex'), gemini: d.models.models('gemini') },
  });
}

export const adminAgents = part({
  name: 'admin-agents',
  needs: { bus: BUS, paths: PATHS, config: CONFIG, registry: REGISTRY, log: EVENT_LOG, models: MODELS, host: HOST_ENV },
  start({ bus, paths, config, registry, log, models, host }) {
    const adminAgents = startAdminAgents({
      bus,
      paths,
      config,
      registry,
      turns: agentTurnsReadModel(log.projectionDb()),
      providers: () => detectedProviders({ host, paths, config, models }),
      discoveredGemini: () => models.models('gemini'),
    });
    return () => adminAgents.unsubscribe();
  },
});

export const orphanRecovery = part({
  // Before anything new starts: what a crashed run left of its own helper processes.
  name: 'orphan-recovery',
  needs: { log: EVENT_LOG, bus: BUS, correlation: START_CORRELATION },
  provides: { recovered: ORPHANS_RECOVERED },
  async start({ log, bus, correlation }) {
    await recoverOrphanProcesses(log, bus, { cause: { correlation } });
    return { provide: { recovered: true as const } };
  },
});

export const agents = part({
  name: 'agents',
  needs: {
    opts: OPTIONS,
    bus: BUS,
    actorHost: ACTOR_HOST,
    log: EVENT_LOG,
    paths: PATHS,
    config: CONFIG,
    registry: REGISTRY,
    users: USERS,
    mainAgentToken: MAIN_AGENT_TOKEN,
    host: HOST_ENV,
    models: MODELS,
    orphansRecovered: ORPHANS_RECOVERED,
    // Before the agents, so their first turn already gets FILESHARE_URL.
    fileshare: FILESHARE,
  },
  // The workflow engine starts after the agents (its runs ask them) and takes the replies it waits for from then on.
  later: { workflows: WORKFLOWS },
  provides: { agents: AGENTS },
  async start({ opts, bus, actorHost, log, paths, config, registry, users, mainAgentToken, host, models, fileshare }, later) {
    const agents = new AgentSupervisor({
      bus,
      host: actorHost,
      log,
      paths,
      mainConfig: config,
      registry,
      users,
      mainAgentToken: () => mainAgentToken,
      hostEnv: host.env,
      discoveredGemini: () => models.models('gemini'),
      intercept: (msg) => later.workflows()?.takeReply(msg) ?? null,
      toolEnv: (): Record<string, string> => (fileshare ? { FILESHARE_URL: fileshare.url, FILESHARE_DOWNLOADS: fileshare.dir } : {}),
      ...(opts.killGraceMs !== undefined ? { graceMs: opts.killGraceMs } : {}),
      ...(opts.turnClock ? { clock: opts.turnClock } : {}),
    });
    const stop = () => agents.stop();
    try {
      await agents.start();
    } catch (e) {
      await stop();
      throw e;
    }
    return { provide: { agents }, stop };
  },
});
