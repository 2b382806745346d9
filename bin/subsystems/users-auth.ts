import { randomBytes } from 'node:crypto';
import { ensureBootstrapAdmin, startLiveUsers, startUsersDirectory } from '../../actors/index.js';
import { panelListenAddress } from '../../machines/index.js';
import { describeError, type AgentConfig, type UserRecord } from '../../schemas/index.js';
import { ensureJwtSecret, ensureMainAgentToken } from '../../store/index.js';
import { part } from '../subsystems.js';
import { panelConfig } from './config.js';
import { ADMIN_API, BOOTSTRAP, BUS, CONFIG, GENERATED_API_TOKEN, HOST_ENV, JWT_SECRET, MAIN_AGENT_TOKEN, PATHS, PID_LOCK, USERS } from './keys.js';

/* Who may use svc: users.json, the main agent's token, the first-start admin and the admin API's secrets. */

export const usersFile = part({
  name: 'users-file',
  needs: { paths: PATHS, bus: BUS },
  provides: { users: USERS },
  async start({ paths, bus }) {
    // users.json in memory, reloaded by its watcher; ready before the first-start admin is written, so
    // that save lands in the copy requests read.
    const live = startLiveUsers({ bus, paths });
    await live.ready;
    const users = (): UserRecord[] => live.all();
    return { provide: { users }, stop: () => live.close() };
  },
});

export const mainAgentToken = part({
  name: 'main-agent-token',
  // Written to the home when missing: only by the run that holds the lock.
  needs: { paths: PATHS, lock: PID_LOCK },
  provides: { token: MAIN_AGENT_TOKEN },
  start({ paths }) {
    return { provide: { token: ensureMainAgentToken(paths, () => randomBytes(32).toString('base64url')) } };
  },
});

/** api.token, or the one the direct API generated at start until the config watcher reads it back. */
export const apiToken =
  (config: () => AgentConfig, generated: () => string | null): (() => string) =>
  () =>
    config().api.token || (generated() ?? '');

export const users = part({
  // Before the API server: its admin routes send the users directory's commands.
  name: 'users',
  // users.json in memory first: the first-start admin's save must land in the copy requests read.
  needs: { paths: PATHS, config: CONFIG, bus: BUS, host: HOST_ENV, users: USERS },
  later: { generatedApiToken: GENERATED_API_TOKEN },
  provides: { bootstrap: BOOTSTRAP, adminApi: ADMIN_API, jwtSecret: JWT_SECRET },
  start({ paths, config, bus, host }, { generatedApiToken }) {
    const bootstrap = ensureBootstrapAdmin(paths, config(), bus, bus.now()).catch((e: unknown) => {
      bus.emitLog('error', `could not create the first-start admin: ${describeError(e)}`);
      return null;
    });
    // Read at start only, as `api` is.
    const adminApi = config().api.enabled || panelListenAddress(panelConfig(config, host.env), false) !== null;
    let generatedJwtSecret = '';
    if (adminApi) {
      const { secret, generated } = ensureJwtSecret(paths, () => randomBytes(48).toString('base64url'));
      generatedJwtSecret = secret;
      if (generated) bus.emitLog('info', `api.jwt_secret was empty: generated one and saved it to ${paths.configFile}`);
    }
    const jwtSecret = (): string => config().api.jwt_secret || generatedJwtSecret;
    const directory = startUsersDirectory({ bus, paths, config, jwtSecret, apiToken: apiToken(config, generatedApiToken) });
    return {
      provide: { bootstrap, adminApi, jwtSecret },
      stop: async () => {
        // A start that fails early must not leave the bootstrap writing after the bus closed.
        await bootstrap;
        directory.unsubscribe();
      },
    };
  },
});
