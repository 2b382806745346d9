import { isIP } from 'node:net';
import type { LogLevel } from '../../bus/index.js';
import { describeError } from '../../schemas/index.js';
import { isLoopback } from './client-address.js';
import { json } from './http.js';
import { openApiDocument } from './openapi.js';
import type { PanelFiles } from './panel-files.js';
import type { Listening, MountedRoute } from './uws-http.binding.js';
import { HttpServer, type HttpServerOptions, type Surface } from './http-server.js';

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

/** Loopback only (127.0.0.0/8, ::1, localhost): reachable from this machine and nowhere else. */
export function isLoopbackHost(host: string): boolean {
  const h = host.trim().toLowerCase();
  return h === 'localhost' || h.endsWith('.localhost') || isLoopback(h.replace(/^\[|\]$/g, ''));
}

/**
 * The warning every listener gives on a public or wildcard address (`0.0.0.0`, `::`), or null on
 * a loopback or private one. `setting` names what silences it, where something does.
 */
export function publicBindWarning(what: string, host: string, setting: string | null): string | null {
  if (isPrivateHost(host)) return null;
  return `${what} listens on ${host}, which is not a loopback or private address; put it behind a private network${setting ? ` or set ${setting} to silence this` : ''}`;
}

export type ApiLog = (level: LogLevel, msg: string, fields?: Record<string, unknown>) => void;

export interface ApiServerOptions {
  /** `api.host` / `api.port` (tests listen on port 0). */
  host: string;
  port: number;
  /** `api.allow_public`: silences the warning about a public bind address. */
  allowPublic: boolean;
  /** Every enabled surface, in mount order; the server runs when one of them is `standalone`. */
  surfaces: readonly Surface[];
  log: ApiLog;
  /** svc's version, for the API description. */
  version?: string;
  /** Per-request hooks of the whole server (the admin surface's CORS). */
  http?: Pick<HttpServerOptions, 'extraHeaders' | 'before'>;
  /**
   * false: the server exists for another address only (the panel's own listener, opened with
   * `open`), and nothing listens on `host:port`. Default true.
   */
  listenApi?: boolean;
  /** The admin panel's built files, served for GET/HEAD requests no route matches while `enabled()` says so. */
  panel?: { files: PanelFiles; enabled: () => boolean };
  /**
   * Where the daemon is: `up` once fully up (the first-start admin written, every subsystem started);
   * before that `/health` answers 503 `{"status":"starting"}`, so whoever waits for it can act at
   * once, and from the moment a stop begins 503 `{"status":"stopping"}`. Absent: always up.
   */
  phase?: () => DaemonPhase;
}

export interface ApiServer {
  /** Where `host:port` is bound; null when `listenApi` was false. */
  port: number | null;
  /** Listens on one more address with the same routes (the panel's own port); closed on its own or with the server. */
  open(host: string, port: number): Promise<Listening>;
  /** Every route served, as mounted (what `GET /api/openapi.json` describes). */
  routes(): readonly MountedRoute[];
  close(): void;
}

/** What `/health` says of the daemon behind it. */
export type DaemonPhase = 'starting' | 'up' | 'stopping';

/**
 * `GET /health` (SPEC.md lists it under both the direct API and the admin REST API): served by the
 * server, whichever surfaces run, with what each of them reports. It listens before the daemon is
 * up (the agents start after it), so until `phase` says so it answers 503: WIRE.md §1's 200
 * `{"status":"ok",…}` promises a daemon a script can log in to.
 */
function healthSurface(surfaces: readonly Surface[], phase: () => DaemonPhase): Surface {
  return {
    name: 'health',
    statuses: {},
    routes: [
      {
        method: 'GET',
        pattern: '/health',
        auth: 'public',
        summary: 'Liveness, with what each running surface reports',
        handler: () => {
          const now = phase();
          return now === 'up' ? json(200, Object.assign({ status: 'ok' }, ...surfaces.map((s) => s.health?.() ?? {}))) : json(503, { status: now });
        },
      },
    ],
  };
}

/**
 * `GET /api/openapi.json`: the description of every route this server serves, built from the
 * routes as mounted (itself included). Public: it documents the contract, and holds no secret.
 */
function describeSurface(server: HttpServer, version: string): Surface {
  let doc: unknown = null;
  return {
    name: 'describe',
    statuses: {},
    routes: [
      {
        method: 'GET',
        pattern: '/api/openapi.json',
        auth: 'public',
        summary: 'This description of the API (OpenAPI 3.1)',
        handler: () => json(200, (doc ??= openApiDocument(server.routes(), { title: 'svc API', version }))),
      },
    ],
  };
}

/**
 * The API server on `api.host:api.port` (DESIGN.md §7): one uWS app that exists whenever a surface
 * needs it, null when none does. Binding to a public or wildcard address without `allow_public` is
 * allowed but logged as a warning (SPEC.md ApiConfig).
 */
export async function startApiServer(opts: ApiServerOptions): Promise<ApiServer | null> {
  const standalone = opts.surfaces.filter((s) => s.standalone);
  if (standalone.length === 0) return null;
  const { host, log } = opts;
  const listenApi = opts.listenApi ?? true;
  const warning = opts.allowPublic || !listenApi ? null : publicBindWarning('the API server', host, 'api.allow_public');
  if (warning) log('warn', warning, { host });
  const panel = opts.panel;
  const server = new HttpServer({
    ...opts.http,
    ...(panel ? { fallback: (req) => (panel.enabled() ? panel.files.reply(req) : undefined) } : {}),
    onInternalError: (e, req, surface) => log('error', `${surface} API ${req.method} ${req.path} failed: ${e instanceof Error ? (e.stack ?? e.message) : describeError(e)}`),
  });
  try {
    for (const s of opts.surfaces) server.mount(s);
    server.mount(healthSurface(opts.surfaces, opts.phase ?? (() => 'up')));
    server.mount(describeSurface(server, opts.version ?? 'unknown'));
    const port = listenApi ? await server.listen(host, opts.port) : null;
    if (port !== null) for (const s of standalone) log('info', `${s.name} API listening on ${host}:${port}`);
    return { port, open: (h, p) => server.open(h, p), routes: () => server.routes(), close: () => server.close() };
  } catch (e) {
    server.close();
    throw e;
  }
}
