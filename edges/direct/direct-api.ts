import { randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import { ensureApiToken } from '../../store/index.js';
import { Router, createApp, listen, mountHttp, type App, type Route, type StatusTable } from '../http/index.js';
import { DIRECT_STATUSES, directRoutes } from './direct-http.js';
import { DirectHub, type DirectApiDeps } from './direct-hub.js';
import { mountDirectWs } from './direct-ws.binding.js';

export interface DirectApiMount {
  hub: DirectHub;
  /** Closes every direct connection (1001) and stops routing turn chunks and notifications. */
  close(): void;
}

/**
 * Mounts `/ws`, `/health`, `/files`, `/upload` on an app that may also carry the admin API
 * (DESIGN.md §7: one uWS app on `api.port`).
 */
export function mountDirectApi(app: App, deps: DirectApiDeps): DirectApiMount {
  const hub = new DirectHub(deps);
  mountDirectWs(app, hub);
  const router = new Router(directRoutes(hub));
  const opts = {
    statuses: DIRECT_STATUSES,
    onInternalError: (e: unknown, req: { method: string; path: string }) =>
      hub.log('error', `direct api ${req.method} ${req.path} failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`),
  };
  // Every path not mounted more specifically (/ws upgrades, /api/*) goes through the router, so an
  // unknown one gets a 404 answer instead of uWS closing the socket without a word.
  mountHttp(app, '/*', router, opts);
  return { hub, close: () => hub.close() };
}

export interface StartDirectApiDeps extends Omit<DirectApiDeps, 'token'> {
  /** Token generator for a config without `api.token`; 32 random bytes, base64url, by default. */
  generateToken?: () => string;
  /** Overrides `api.host` / `api.port` (tests listen on port 0). */
  host?: string;
  port?: number;
  /** More `/api/*` endpoints on the same app and token (notifications, chat sessions, ...). */
  apiRoutes?: (token: string) => Route[];
  apiStatuses?: StatusTable;
}

export interface DirectApiServer {
  port: number;
  hub: DirectHub;
  close(): void;
}

/** Loopback, RFC 1918, CGNAT (tailnets), link-local and unique-local addresses, and localhost. */
export function isPrivateHost(host: string): boolean {
  const h = host.trim().toLowerCase().replace(/^\[|\]$/g, '');
  if (h === 'localhost' || h.endsWith('.localhost')) return true;
  const kind = isIP(h);
  if (kind === 4) {
    const [a, b] = h.split('.').map(Number) as [number, number];
    return a === 127 || a === 10 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168) || (a === 100 && b >= 64 && b <= 127) || (a === 169 && b === 254);
  }
  if (kind === 6) {
    if (h === '::1') return true;
    const v4 = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(h);
    if (v4) return isPrivateHost(v4[1]!);
    return /^f[cd][0-9a-f]{2}:/.test(h) || /^fe[89ab][0-9a-f]:/.test(h);
  }
  return false;
}

/**
 * Starts the direct API on `api.host:api.port` when `api.enabled`; null otherwise. A missing
 * `api.token` is generated and persisted first. Binding to a public or wildcard address without
 * `allow_public` is allowed but logged as a warning (SPEC.md ApiConfig).
 */
export async function startDirectApi(deps: StartDirectApiDeps): Promise<DirectApiServer | null> {
  const cfg = deps.config();
  if (!cfg.api.enabled) return null;
  const log = deps.log ?? ((level, msg, fields) => deps.bus.emitLog(level, msg, fields));
  const gen = deps.generateToken ?? (() => randomBytes(32).toString('base64url'));
  const { token, generated } = ensureApiToken(deps.paths, gen);
  if (generated) log('info', `api.token was empty: generated one and saved it to ${deps.paths.configFile}`);
  const host = deps.host ?? cfg.api.host;
  const port = deps.port ?? cfg.api.port;
  if (!isPrivateHost(host) && !cfg.api.allow_public) {
    log('warn', `direct API listens on ${host}, which is not a loopback or private address; put it behind a private network or set api.allow_public to silence this`, { host });
  }
  const app = createApp();
  const mounted = mountDirectApi(app, { ...deps, token, log });
  if (deps.apiRoutes) {
    mountHttp(app, '/api/*', new Router(deps.apiRoutes(token)), {
      statuses: { ...DIRECT_STATUSES, ...deps.apiStatuses },
      onInternalError: (e, req) => log('error', `api ${req.method} ${req.path} failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`),
    });
  }
  const listening = await listen(app, host, port);
  log('info', `direct API listening on ${host}:${listening.port}`);
  let closed = false;
  return {
    port: listening.port,
    hub: mounted.hub,
    close() {
      // Closing a uWS listen socket twice touches freed memory.
      if (closed) return;
      closed = true;
      mounted.close();
      listening.close();
    },
  };
}
