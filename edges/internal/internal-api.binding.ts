import { describeError } from '../../schemas/index.js';
import { Router, createApp, listen, mountHttp } from '../http/index.js';
import { INTERNAL_STATUSES } from './errors.js';
import { internalRoutes, type InternalDeps } from './internal.routes.js';

export interface InternalApiOptions extends InternalDeps {
  /** Loopback only: the API trusts tokens that agents read from their environment. */
  host: '127.0.0.1';
  /** `interagent_port` (default 8799); 0 picks a free port (tests). */
  port: number;
}

export interface InternalApi {
  port: number;
  close(): void;
}

/** Serves the internal API on its own uWS app, so it never shares a port with the public API. */
export async function startInternalApi(opts: InternalApiOptions): Promise<InternalApi> {
  const app = createApp();
  const log = opts.log ?? ((level, msg, fields) => opts.bus.emitLog(level, msg, fields));
  mountHttp(app, '/*', new Router(internalRoutes(opts)), {
    statuses: INTERNAL_STATUSES,
    onInternalError: (e, req) => log('error', `internal API ${req.method} ${req.path} failed: ${describeError(e)}`, { stack: e instanceof Error ? (e.stack ?? '') : '' }),
  });
  const listening = await listen(app, opts.host, opts.port);
  log('info', `internal API listening on ${opts.host}:${listening.port}`);
  return { port: listening.port, close: () => listening.close() };
}
