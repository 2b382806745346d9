import { randomBytes } from 'node:crypto';
import { ensureApiToken } from '../../store/index.js';
import { auditObserver, type Surface } from '../http/index.js';
import { DIRECT_STATUSES, directRoutes } from './direct-http.js';
import { DirectHub, type DirectApiDeps } from './direct-hub.js';
import { directTokenAuthenticator } from './direct-token.js';
import { mountDirectWs } from './direct-ws.binding.js';

export interface DirectApi {
  hub: DirectHub;
  /** `/ws`, `/files`, `/upload`, and the `direct-token` credential, to mount on the API server. */
  surface: Surface;
}

/**
 * The direct API's surface (DESIGN.md §7): `/ws`, `/files`, `/upload` and its share of `/health`,
 * with the `direct-token` authenticator that the shared `/api` routes accept too. Closing the
 * server closes every direct connection (1001) and stops routing turn chunks and notifications.
 */
export function directSurface(hub: DirectHub): Surface {
  return {
    name: 'direct',
    standalone: true,
    routes: directRoutes(hub),
    statuses: DIRECT_STATUSES,
    authenticators: [directTokenAuthenticator(hub.deps.token)],
    // Placing a file in an agent's files is an admin files write, whoever asks; an attachment to
    // api_files/ is chat traffic, which the audit log does not hold.
    observe: auditObserver(
      hub.deps.bus,
      (req) => req.query.has('agent') || req.query.has('relative_path'),
      () => hub.deps.config().api.trusted_proxies ?? [],
    ),
    mountSockets: (app) => mountDirectWs(app, hub),
    health: () => ({ connections: hub.authenticatedCount }),
    close: () => hub.close(),
  };
}

export interface OpenDirectApiDeps extends Omit<DirectApiDeps, 'token'> {
  /** Token generator for a config without `api.token`; 32 random bytes, base64url, by default. */
  generateToken?: () => string;
}

/**
 * The direct API when `api.enabled`; null otherwise. A missing `api.token` is generated and
 * persisted first.
 */
export function openDirectApi(deps: OpenDirectApiDeps): DirectApi | null {
  if (!deps.config().api.enabled) return null;
  const log = deps.log ?? ((level, msg, fields) => deps.bus.emitLog(level, msg, fields));
  const gen = deps.generateToken ?? (() => randomBytes(32).toString('base64url'));
  const { token, generated } = ensureApiToken(deps.paths, gen);
  if (generated) log('info', `api.token was empty: generated one and saved it to ${deps.paths.configFile}`);
  const hub = new DirectHub({ ...deps, token, log });
  return { hub, surface: directSurface(hub) };
}
