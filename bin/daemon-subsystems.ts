import { randomUUID } from 'node:crypto';
import { homedir } from 'node:os';
import { seed, type Part, type Seed } from './subsystems.js';
import { adminOps } from './subsystems/admin-ops.js';
import { adminAgents, agents, modelCache, orphanRecovery } from './subsystems/agents.js';
import { apiServer } from './subsystems/api-server.js';
import { cron, heartbeat, webhookRecovery } from './subsystems/automation.js';
import { actorHost, bus, daemon } from './subsystems/bus-host.js';
import { chatDelivery, chatSessions, transcription } from './subsystems/chat.js';
import { config, registry } from './subsystems/config.js';
import { contentAdmin, skillSync } from './subsystems/content.js';
import type { DaemonLifecycle, DaemonOptions } from './subsystems/daemon-options.js';
import { fileshare, internalApi, webhookServer } from './subsystems/edges.js';
import { cleanup, memoryMaintenance } from './subsystems/housekeeping.js';
import { HOST_ENV, LIFECYCLE, OPTIONS, PATHS, START_CORRELATION } from './subsystems/keys.js';
import { messengers } from './subsystems/messengers.js';
import { notifications } from './subsystems/notifications.js';
import { configFile, eventLog, pidLock } from './subsystems/store.js';
import { taskHub } from './subsystems/tasks.js';
import { mainAgentToken, users, usersFile } from './subsystems/users-auth.js';
import { workflows } from './subsystems/workflows.js';

export type { DaemonLifecycle, DaemonOptions } from './subsystems/daemon-options.js';

/*
 * The daemon's parts, one module per area under subsystems/. Each part declares what it needs and
 * provides; startSubsystems computes the start order from that (and stops in reverse). The order
 * below only breaks ties between parts free to start at the same point: it is the order they
 * start in whenever the declarations allow it, so a new part goes where it should start.
 */
export const DAEMON_SUBSYSTEMS: readonly Part[] = [
  // store
  pidLock,
  configFile,
  eventLog,
  // bus & host
  bus,
  actorHost,
  daemon,
  // config
  config,
  registry,
  // users & auth
  usersFile,
  mainAgentToken,
  // agents & runtime (the cache their providers are read from)
  modelCache,
  // notifications, chats, the admin API's records
  notifications,
  chatDelivery,
  chatSessions,
  adminAgents,
  contentAdmin,
  adminOps,
  // agents & runtime
  orphanRecovery,
  transcription,
  fileshare,
  agents,
  skillSync,
  // tasks, workflows, automation, housekeeping: all on the agents
  taskHub,
  workflows,
  cron,
  cleanup,
  memoryMaintenance,
  heartbeat,
  // edges, the users directory the admin API needs, messengers
  internalApi,
  users,
  messengers,
  apiServer,
  webhookRecovery,
  webhookServer,
];

/** What the composition root hands in before any part starts. */
export function daemonSeeds(opts: DaemonOptions, lifecycle: DaemonLifecycle): Seed[] {
  const env = opts.env ?? process.env;
  return [
    seed(OPTIONS, opts),
    seed(PATHS, opts.paths),
    seed(HOST_ENV, { env, userHome: env.HOME ?? homedir() }),
    seed(START_CORRELATION, `start:${randomUUID()}`),
    seed(LIFECYCLE, lifecycle),
  ];
}
