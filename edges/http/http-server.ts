import { SvcError, type Principal } from '../../schemas/index.js';
import { authenticateRoute, type Authenticator } from './authentication.js';
import type { Credential, RouteAuth } from './route-auth.js';
import { COMMON_STATUSES, Router, combineStatusTables, type HttpReply, type HttpRequest, type Route, type StatusTable } from './http.js';
import { createApp, listen, mountHttp, type App, type Listening, type MountedRoute } from './uws-http.binding.js';

/**
 * What one surface (direct, the shared `/api` routes, admin, internal) brings to a server. The
 * server owns the uWS app; surfaces only mount on it.
 */
export interface Surface {
  /** Names the surface in logs and start-up errors: `direct`, `api`, `admin`, `internal`. */
  readonly name: string;
  readonly routes: readonly Route[];
  /** This surface's codes beyond COMMON_STATUSES; a code mapped twice is refused at mount. */
  readonly statuses: StatusTable;
  /** Credentials this surface can check; a route of any surface on the same server may accept them. */
  readonly authenticators?: readonly Authenticator[];
  /** Reason enough to run the server (direct, admin); the shared `/api` routes only ride along. */
  readonly standalone?: boolean;
  /** Its error texts follow `Accept-Language` (WIRE.md §2: the admin API). */
  readonly localisedErrors?: boolean;
  /** Its error bodies in another shape than `{error, code}` (the webhook server's wire names). */
  readonly errorBody?: (error: { error: string; code: string }) => unknown;
  /**
   * How each of its guarded requests ended, once the caller is known (a refusal for want of a role
   * included; a request without valid credentials is not): awaited before the reply is sent.
   */
  observe?(req: HttpRequest, route: Route, principal: Principal, status: number, reply?: HttpReply): Promise<void>;
  /**
   * Handlers that need the app itself, such as WebSocket endpoints (`/ws`, `/ws/admin`).
   * `authenticate` runs the server's authenticators (every surface's) as a route's `auth` would.
   */
  mountSockets?(app: App, authenticate: SocketAuthenticate): void;
  /** Fields this surface adds to `GET /health`. */
  health?(): Record<string, unknown>;
  /** When the server closes, before its listen socket does. */
  close?(): void;
}

/** Who calls, by the credentials `auth` accepts: 401 `unauthorized` / 403 `forbidden` as for a route. */
export type SocketAuthenticate = (req: HttpRequest, auth: RouteAuth) => Promise<Principal>;

export interface HttpServerOptions {
  /** Unexpected failures: logged, never shown to the client. */
  onInternalError(e: unknown, req: Pick<HttpRequest, 'method' | 'path'>, surface: string): void;
  /** Headers added to every reply (e.g. CORS for an allowed origin). */
  extraHeaders?(req: Pick<HttpRequest, 'method' | 'path' | 'headers'>): Record<string, string>;
  /** Answers a request before routing (CORS preflight); undefined lets routing go on. */
  before?(req: Pick<HttpRequest, 'method' | 'path' | 'headers'>): HttpReply | undefined;
  /** Answers a GET or HEAD no route matches (the admin panel); undefined keeps the JSON 404. */
  fallback?(req: Pick<HttpRequest, 'method' | 'path' | 'headers'>): Promise<HttpReply | undefined> | HttpReply | undefined;
}

/**
 * One uWS app with its router. Surfaces mount before `listen`; every start-up conflict (a route
 * declared twice, a credential checked by two surfaces, an error code mapped twice) is refused
 * with an SvcError naming it, instead of one silently winning, and mounts nothing of the surface.
 */
export class HttpServer {
  readonly app: App;
  private readonly router = new Router<MountedRoute>();
  private readonly authenticators = new Map<Credential, Authenticator>();
  private readonly mounted: Surface[] = [];
  /** Every address it listens on: `listen` opens the first, `open` more (the panel's own port). */
  private readonly listening = new Set<Listening>();
  private closed = false;

  constructor(opts: HttpServerOptions) {
    this.app = createApp();
    mountHttp(this.app, {
      router: this.router,
      authenticate: (req, auth) => authenticateRoute(req, auth, this.authenticators),
      onInternalError: opts.onInternalError,
      ...(opts.extraHeaders ? { extraHeaders: opts.extraHeaders } : {}),
      ...(opts.before ? { before: opts.before } : {}),
      ...(opts.fallback ? { fallback: opts.fallback } : {}),
    });
  }

  get surfaces(): readonly Surface[] {
    return this.mounted;
  }

  /** Every route mounted so far, with the surface it belongs to. */
  routes(): readonly MountedRoute[] {
    return this.router.all();
  }

  mount(surface: Surface): void {
    if (this.listening.size > 0 || this.closed) throw new SvcError('server-started', `surface ${surface.name} must mount before the server listens`);
    if (this.mounted.some((s) => s.name === surface.name)) throw new SvcError('duplicate-surface', `surface ${surface.name} is mounted twice`);
    const statuses = combineStatusTables(`surface ${surface.name}`, COMMON_STATUSES, surface.statuses);
    for (const a of surface.authenticators ?? []) {
      if (this.authenticators.has(a.credential)) throw new SvcError('duplicate-credential', `surface ${surface.name}: credential ${a.credential} already has an authenticator`);
    }
    try {
      this.router.add(
        ...surface.routes.map((route) => ({
          ...route,
          surface: surface.name,
          statuses,
          localisedErrors: surface.localisedErrors === true,
          ...(surface.errorBody ? { errorBody: surface.errorBody } : {}),
          ...(surface.observe ? { observe: (req: HttpRequest, principal: Principal, status: number, reply?: HttpReply) => surface.observe!(req, route, principal, status, reply) } : {}),
        })),
      );
    } catch (e) {
      throw e instanceof SvcError ? new SvcError(e.code, `surface ${surface.name}: ${e.message}`) : e;
    }
    for (const a of surface.authenticators ?? []) this.authenticators.set(a.credential, a);
    surface.mountSockets?.(this.app, (req, auth) => authenticateRoute(req, auth, this.authenticators));
    this.mounted.push(surface);
  }

  /** The port actually bound (0 picks a free one): the server's first address. */
  async listen(host: string, port: number): Promise<number> {
    if (this.listening.size > 0 || this.closed) throw new SvcError('server-started', 'the server listens once');
    return (await this.open(host, port)).port;
  }

  /**
   * One more address serving the same routes (uWS apps listen on several), which can be closed
   * on its own while the others stay: the panel's own listener opens and closes with config.json.
   */
  async open(host: string, port: number): Promise<Listening> {
    if (this.closed) throw new SvcError('server-started', 'the server is closed');
    const socket = await listen(this.app, host, port);
    // Closed while the bind was under way: the socket must not outlive the server.
    if (this.closed) {
      socket.close();
      throw new SvcError('server-started', 'the server is closed');
    }
    this.listening.add(socket);
    let open = true;
    return {
      port: socket.port,
      close: () => {
        // Closing a uWS listen socket twice touches freed memory.
        if (!open || !this.listening.has(socket)) return;
        open = false;
        this.listening.delete(socket);
        socket.close();
      },
    };
  }

  /** Surfaces close in reverse order of mounting, then the listen socket; a second call does nothing. */
  close(): void {
    // Closing a uWS listen socket twice touches freed memory.
    if (this.closed) return;
    this.closed = true;
    for (const s of [...this.mounted].reverse()) s.close?.();
    for (const l of this.listening) l.close();
    this.listening.clear();
  }
}
