import { startMessengers } from '../messengers.js';
import { part } from '../subsystems.js';
import { AGENTS, BUS, EVENT_LOG, OPTIONS, PATHS, TRANSPORTS, USERS } from './keys.js';

/* Telegram, Matrix and the other chat networks: each messenger configured for an agent, on the agents. */

export const messengers = part({
  name: 'messengers',
  needs: { opts: OPTIONS, bus: BUS, log: EVENT_LOG, paths: PATHS, users: USERS, transports: TRANSPORTS, agents: AGENTS },
  start({ opts, bus, log, paths, users, transports, agents }) {
    return startMessengers({
      bus,
      log,
      agentConfig: (name) => agents.agentConfig(name),
      runningAgents: () => agents.names(),
      users,
      transports,
      paths,
      ...(opts.messengerRetry ? { retry: opts.messengerRetry } : {}),
    });
  },
});
