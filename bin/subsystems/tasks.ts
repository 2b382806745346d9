import { TaskHub, startInteragentDelivery } from '../../actors/index.js';
import { tasksReadModel } from '../../store/index.js';
import { part } from '../subsystems.js';
import { ACTOR_HOST, AGENTS, BUS, CONFIG, EVENT_LOG, OPTIONS, PATHS, REGISTRY, START_CORRELATION, TASK_HUB, USERS } from './keys.js';

/* Tasks agents hand each other: the hub that queues and runs them. */

export const taskHub = part({
  // After the agents (its runs go through them, and a restart's stale tasks are decided before any
  // new turn), before the internal API whose /tasks/* it answers. Stopped before the agents: the
  // runs their stop cuts are left running in the log, and the next start fails them as stale.
  name: 'task-hub',
  needs: { opts: OPTIONS, bus: BUS, host: ACTOR_HOST, log: EVENT_LOG, paths: PATHS, config: CONFIG, registry: REGISTRY, users: USERS, correlation: START_CORRELATION, agents: AGENTS },
  provides: { hub: TASK_HUB },
  async start({ opts, bus, host, log, paths, config, registry, users, correlation }) {
    const hub = new TaskHub({ bus, host, log, paths, tasks: tasksReadModel(log.projectionDb()), config, registry, users, ...(opts.turnClock ? { clock: opts.turnClock } : {}) });
    await hub.start(correlation);
    const interagent = startInteragentDelivery({ bus, log, users, registry });
    return {
      provide: { hub },
      stop: () => {
        interagent.unsubscribe();
        hub.stop();
      },
    };
  },
});
