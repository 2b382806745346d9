import { readlinkSync } from 'node:fs';
import { configWatcher, parseLogLevel, registryWatcher } from '../../actors/index.js';
import { configMachine, registryMachine, resolveTimezone } from '../../machines/index.js';
import { CONFIG_EVENTS, MAIN_AGENT, type AgentConfig, type PanelConfig, type SubAgentConfig } from '../../schemas/index.js';
import { loadRegistry, registryLocation } from '../../store/index.js';
import { panelListenOverride } from '../panel-location.js';
import { part } from '../subsystems.js';
import { ACTOR_HOST, BUS, CONFIG, LOADED_CONFIG, LOG_SINK, OPTIONS, PATHS, REGISTRY, START_CORRELATION } from './keys.js';

/* config.json and the sub-agent registry, each held by its actor and followed by its watcher. */

export const config = part({
  name: 'config',
  needs: { opts: OPTIONS, paths: PATHS, loaded: LOADED_CONFIG, host: ACTOR_HOST, bus: BUS, sink: LOG_SINK, correlation: START_CORRELATION },
  provides: { config: CONFIG },
  start({ opts, paths, loaded, host, bus, sink, correlation }) {
    const interval = opts.watchIntervalMs;
    const actor = host.spawn('config', configMachine.provide({ actors: { watcher: configWatcher } }), {
      stream: 'config',
      correlation,
      input: { config: loaded.config, file: paths.configFile, unknownKeys: loaded.unknownKeys, ...(interval ? { intervalMs: interval } : {}) },
    });
    const config = (): AgentConfig => actor.getSnapshot().context.config;
    bus.subscribe('log-level', (e) => {
      if (e.type === CONFIG_EVENTS.reloaded && !opts.verbose) sink.level = parseLogLevel(config().log_level);
    });
    return { provide: { config } };
  },
});

export const registry = part({
  name: 'registry',
  needs: { opts: OPTIONS, paths: PATHS, host: ACTOR_HOST, correlation: START_CORRELATION },
  provides: { registry: REGISTRY },
  start({ opts, paths, host, correlation }) {
    const interval = opts.watchIntervalMs;
    const actor = host.spawn('registry', registryMachine.provide({ actors: { watcher: registryWatcher } }), {
      stream: 'registry',
      correlation,
      input: {
        entries: loadRegistry(paths),
        file: registryLocation(paths) ?? paths.agentsRegistry,
        paths: { agentsRegistry: paths.agentsRegistry, legacyAgentsRegistry: paths.legacyAgentsRegistry },
        ...(interval ? { intervalMs: interval } : {}),
      },
    });
    return { provide: { registry: (): SubAgentConfig[] => actor.getSnapshot().context.entries } };
  },
});

/** `panel` as in force: config.json's, with `$SVC_PANEL_LISTEN` over `listen` when set. */
export function panelConfig(config: () => AgentConfig, env: NodeJS.ProcessEnv): PanelConfig {
  const listen = panelListenOverride(env);
  return listen ? { ...config().panel, listen } : config().panel;
}

/** The zone cron jobs without one of their own run in: user_timezone → TZ → host → UTC. */
export function defaultZone(config: () => AgentConfig, env: NodeJS.ProcessEnv): () => string {
  return () => resolveTimezone(config().user_timezone, env.TZ ?? null, hostZone());
}

/** Main and every sub-agent in the registry, running or not: their workspaces are still theirs. */
export function housekeptAgents(registry: () => SubAgentConfig[]): () => string[] {
  return () => [MAIN_AGENT, ...registry().map((e) => e.name)];
}

/** POSIX hosts name their zone by the `/etc/localtime` symlink (resolveTimezone reads the zoneinfo path). */
function hostZone(): string | null {
  try {
    return readlinkSync('/etc/localtime');
  } catch {
    return null;
  }
}
