import { CronScheduler, Heartbeat, OneShotRuns, deliverToOriginChat, recoverWebhookCalls, userTimeZone, type OneShotRunner, type WebhookDispatchDeps } from '../../actors/index.js';
import type { AgentConfig } from '../../schemas/index.js';
import { agentTurnsReadModel } from '../../store/index.js';
import { part } from '../subsystems.js';
import { defaultZone, housekeptAgents } from './config.js';
import { AGENTS, BUS, CONFIG, CRON_SCHEDULER, EVENT_LOG, GENERATED_WEBHOOK_TOKEN, HOST_ENV, ONE_SHOT_RUNNER, OPTIONS, PATHS, REGISTRY, START_CORRELATION, WEBHOOK_CALLS_RECOVERED } from './keys.js';

/* What runs without being asked: cron jobs and one-shot runs, the heartbeat, webhook calls a previous run left unsettled. */

/** What a webhook call's dispatch needs, live (admin-ops) or after a restart (webhook-recovery). */
export function webhookDispatch(config: () => AgentConfig, env: NodeJS.ProcessEnv, later: { oneShot: () => OneShotRunner | null; generatedToken: () => string | null }): WebhookDispatchDeps {
  return {
    globalToken: () => config().webhooks.token || (later.generatedToken() ?? ''),
    config,
    timezone: defaultZone(config, env),
    // Null until the cron part runs: `cron_task` calls are then recorded as failed.
    oneShot: later.oneShot,
  };
}

export const cron = part({
  // After the task hub, on the agents: one-shot runs (cron jobs, webhook cron_task) and the
  // scheduler. A run or fire the log holds unfinished was cut by the previous stop: queued again
  // when its CLI had not started, else recorded failed, before anything fires. Stopped before the
  // agents, like the hub.
  name: 'cron',
  needs: { opts: OPTIONS, bus: BUS, log: EVENT_LOG, paths: PATHS, config: CONFIG, host: HOST_ENV, correlation: START_CORRELATION, agents: AGENTS },
  provides: { runner: ONE_SHOT_RUNNER, scheduler: CRON_SCHEDULER },
  async start({ opts, bus, log, paths, config, host, correlation }) {
    const zone = defaultZone(config, host.env);
    const runner = new OneShotRuns({ bus, log, paths, config, timezone: zone });
    const scheduler = new CronScheduler({
      bus,
      log,
      paths,
      runner,
      defaultZone: zone,
      ...(opts.cronClock ? { clock: opts.cronClock } : {}),
      ...(opts.cronWatchIntervalMs !== undefined ? { watchIntervalMs: opts.cronWatchIntervalMs } : {}),
    });
    // Recovers the runner's cut runs first, then the scheduler's cut fires.
    await scheduler.start(correlation);
    return {
      provide: { runner, scheduler },
      stop: () => {
        scheduler.stop();
        runner.stop();
      },
    };
  },
});

export const heartbeat = part({
  // After the agents it asks and whose stale turns it ends; stopped before them.
  name: 'heartbeat',
  needs: { opts: OPTIONS, bus: BUS, log: EVENT_LOG, registry: REGISTRY, host: HOST_ENV, agents: AGENTS },
  start({ opts, bus, log, registry, host, agents }) {
    const turns = agentTurnsReadModel(log.projectionDb());
    const heartbeat = new Heartbeat({
      bus,
      ...(opts.turnClock ? { clock: opts.turnClock } : {}),
      agents: housekeptAgents(registry),
      configOf: (n) => agents.agentConfig(n),
      timeZoneOf: (n) => userTimeZone(agents.agentConfig(n).user_timezone, host.env),
      runningTurns: (n) => turns.running(n),
      deliver: deliverToOriginChat(bus),
    });
    // SPEC.md: enabled at start or not at all; a later reload changes what a tick does, not whether loops run.
    heartbeat.start();
    return () => heartbeat.stop();
  },
});

export const webhookRecovery = part({
  // After the agents and the one-shot runs, before the webhook server takes new calls: accepted
  // calls the previous run never settled are run now if the agent never saw them, else settled
  // once from the log; none is asked twice.
  name: 'webhook-recovery',
  needs: { bus: BUS, log: EVENT_LOG, paths: PATHS, config: CONFIG, host: HOST_ENV, runner: ONE_SHOT_RUNNER },
  later: { generatedToken: GENERATED_WEBHOOK_TOKEN, oneShot: ONE_SHOT_RUNNER },
  provides: { recovered: WEBHOOK_CALLS_RECOVERED },
  async start({ bus, log, paths, config, host }, later) {
    await recoverWebhookCalls({ bus, log, paths, dispatch: webhookDispatch(config, host.env, later) });
    return { provide: { recovered: true as const } };
  },
});
