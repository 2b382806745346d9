import { DailyJob, MemoryMaintenance, runCleanup, seedMemoryReview, userTimeZone } from '../../actors/index.js';
import { HOUSEKEEPING_STREAM, MEMORY_MAINTENANCE_EVENTS, describeError } from '../../schemas/index.js';
import { workspaceDir } from '../../store/index.js';
import { part } from '../subsystems.js';
import { housekeptAgents } from './config.js';
import { AGENTS, BUS, CONFIG, EVENT_LOG, HOST_ENV, OPTIONS, PATHS, REGISTRY, START_CORRELATION } from './keys.js';

/* The daily jobs that keep agents' workspaces in shape: cleanup and memory maintenance. */

export const cleanup = part({
  // After the agents: a sub-agent's cleanup settings come from its effective config.
  name: 'cleanup',
  needs: { opts: OPTIONS, bus: BUS, paths: PATHS, config: CONFIG, registry: REGISTRY, host: HOST_ENV, correlation: START_CORRELATION, agents: AGENTS },
  start({ opts, bus, paths, config, registry, host, correlation, agents }) {
    // SPEC.md: hot reload neither starts nor stops it; the hour and the limits do follow reloads.
    if (!config().cleanup.enabled) return;
    const job = new DailyJob({
      ...(opts.turnClock ? { clock: opts.turnClock } : {}),
      now: () => bus.now(),
      hour: () => config().cleanup.check_hour,
      timeZone: () => userTimeZone(config().user_timezone, host.env),
      run: async (at) => {
        await runCleanup({ bus, agents: housekeptAgents(registry), workspaceOf: (n) => workspaceDir(paths, n), configOf: (n) => agents.agentConfig(n).cleanup }, at, correlation);
      },
      onError: (m) => bus.emitLog('error', `cleanup: ${m}`),
    });
    job.start();
    return () => job.stop();
  },
});

export const memoryMaintenance = part({
  // After the agents: it ends their old sessions through them.
  name: 'memory-maintenance',
  needs: { opts: OPTIONS, bus: BUS, log: EVENT_LOG, paths: PATHS, config: CONFIG, registry: REGISTRY, host: HOST_ENV, correlation: START_CORRELATION, agents: AGENTS },
  async start({ opts, bus, log, paths, config, registry, host, correlation, agents }) {
    const memory = config().memory;
    if (!memory.enabled) return;
    await seedMemoryReview(
      {
        bus,
        paths,
        checkHour: memory.check_hour,
        seededBefore: () => log.read({ stream: HOUSEKEEPING_STREAM, types: [MEMORY_MAINTENANCE_EVENTS.review_seeded] }).length > 0,
      },
      correlation,
    ).catch((e: unknown) => bus.emitLog('warn', `memory review cron job not seeded: ${describeError(e)}`));
    const maintenance = new MemoryMaintenance({
      bus,
      agents: housekeptAgents(registry),
      configOf: (n) => agents.agentConfig(n).memory,
      workspaceOf: (n) => workspaceDir(paths, n),
    });
    const job = new DailyJob({
      ...(opts.turnClock ? { clock: opts.turnClock } : {}),
      now: () => bus.now(),
      hour: () => config().memory.check_hour,
      timeZone: () => userTimeZone(config().user_timezone, host.env),
      run: async (at) => void (await maintenance.run(at, correlation)),
      onError: (m) => bus.emitLog('error', `memory maintenance: ${m}`),
    });
    job.start();
    return () => job.stop();
  },
});
