import type { Bus } from '../../bus/index.js';
import type { AgentConfig, SubAgentConfig, UserRecord } from '../../schemas/index.js';
import type { HomePaths, NotificationReadModel } from '../../store/index.js';
import type { AdminSocketDeps } from './admin-socket.js';

/**
 * What the admin routes are built from. Handlers send commands on the bus and read read models;
 * they decide nothing about who may see what beyond the route's declared role (the runtime applies
 * `allowed_agents` where it handles the command).
 */
export interface AdminDeps {
  bus: Bus;
  paths: HomePaths;
  config: () => AgentConfig;
  registry: () => SubAgentConfig[];
  users: () => UserRecord[];
  notifications: NotificationReadModel;
  /** Epoch ms; injected so caches and expiries are tested on a simulated clock. */
  clock: () => number;
  version: string;
  /** `/ws/admin` is served when given (bin/ hands in the connection machine and the agent rule). */
  socket?: Pick<AdminSocketDeps, 'connectionMachine' | 'spawnConnection' | 'mayUse' | 'limits'>;
  /** api.jwt_secret as the daemon holds it (generated at start when missing); default: config's. */
  jwtSecret?: () => string;
  /** api.token as the daemon holds it (generated at start when missing); default: config's. */
  apiToken?: () => string;
}
