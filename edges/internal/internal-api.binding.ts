import { describeError } from '../../schemas/index.js';
import { HttpServer } from '../http/index.js';
import { INTERNAL_STATUSES } from './errors.js';
import { agentTokenAuthenticator, ownerTokenAuthenticator } from './internal-auth.js';
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

/**
 * Serves the internal API on a server of its own, so it never shares a port with the public API;
 * routes declare their credentials there as on the API server.
 */
export async function startInternalApi(opts: InternalApiOptions): Promise<InternalApi> {
  const log = opts.log ?? ((level, msg, fields) => opts.bus.emitLog(level, msg, fields));
  const server = new HttpServer({
    onInternalError: (e, req) => log('error', `internal API ${req.method} ${req.path} failed: ${describeError(e)}`, { stack: e instanceof Error ? (e.stack ?? '') : '' }),
  });
  try {
    server.mount({
      name: 'internal',
      routes: internalRoutes(opts),
      statuses: INTERNAL_STATUSES,
      authenticators: [agentTokenAuthenticator(opts, (msg, fields) => log('warn', msg, fields ?? {})), ownerTokenAuthenticator(opts)],
    });
    const port = await server.listen(opts.host, opts.port);
    log('info', `internal API listening on ${opts.host}:${port}`);
    return { port, close: () => server.close() };
  } catch (e) {
    server.close();
    throw e;
  }
}
