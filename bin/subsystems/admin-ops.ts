import { startAuditRecorder, startAutomationRecords, startDashboard, startPortability, startTaskQueries } from '../../actors/index.js';
import { AGENT_EVENTS } from '../../schemas/index.js';
import { auditReadModel, readStreamHeads, systemSettingsReadModel, tasksReadModel } from '../../store/index.js';
import { VERSION } from '../package-info.js';
import { part } from '../subsystems.js';
import { webhookDispatch } from './automation.js';
import { defaultZone } from './config.js';
import { BUS, CONFIG, CRON_SCHEDULER, EVENT_LOG, GENERATED_WEBHOOK_TOKEN, HOST_ENV, NOTIFICATIONS, ONE_SHOT_RUNNER, PATHS, REGISTRY, TASK_HUB, TRANSPORTS, USERS } from './keys.js';

/* The admin API's records: dashboard, activity, audit, cron/webhook records, tasks and export/import. */

export const adminOps = part({
  name: 'admin-ops',
  needs: { bus: BUS, paths: PATHS, log: EVENT_LOG, config: CONFIG, registry: REGISTRY, users: USERS, notifications: NOTIFICATIONS, transports: TRANSPORTS, host: HOST_ENV },
  // Started before the audit-worthy work begins, so these attach later: until the task hub and the
  // scheduler run, their commands are answered `no-task-hub` / `no-scheduler`.
  later: { hub: TASK_HUB, cron: CRON_SCHEDULER, oneShot: ONE_SHOT_RUNNER, generatedToken: GENERATED_WEBHOOK_TOKEN },
  start({ bus, paths, log, config, registry, users, notifications, transports, host }, later) {
    const db = log.projectionDb();
    const startedAt = bus.now();
    const audit = auditReadModel(db);
    const subs = [
      startAuditRecorder({ bus, readModel: audit }),
      startDashboard({
        bus,
        paths,
        registry,
        users,
        notifications,
        audit,
        settings: systemSettingsReadModel(db),
        tasks: tasksReadModel(db),
        transports: () => transports.health(),
        agentFacts: (limit) => log.read({ streamPrefix: 'agent:', types: [AGENT_EVENTS.started, AGENT_EVENTS.stopped], descending: true, limit }),
        // An agent is online when the last fact of its stream says it started.
        onlineAgents: () => readStreamHeads(db, { prefix: 'agent:' }).filter((h) => h.last_type === AGENT_EVENTS.started).map((h) => h.stream.slice('agent:'.length)),
        version: VERSION,
        startedAt,
      }),
      startAutomationRecords({
        bus,
        paths,
        registry,
        webhooks: webhookDispatch(config, host.env, later),
        cron: later.cron,
        defaultZone: defaultZone(config, host.env),
        log,
      }),
      startTaskQueries({ bus, tasks: tasksReadModel(db), registry, hub: later.hub }),
      startPortability({ bus, paths, registry, version: VERSION }),
    ];
    return () => subs.forEach((s) => s.unsubscribe());
  },
});
