import { SvcError, type Principal } from '../../schemas/index.js';
import { mountFrameSocket, peerAddress, type App, type HttpRequest } from '../http/index.js';
import type { AdminSocketHub } from './admin-socket.js';

/** What the upgrade hands the connection. */
interface AdminSocketData {
  /** Who the upgrade's credentials named. */
  principal: Principal;
}

/**
 * `/ws/admin` on uWS. The upgrade itself must carry credentials (the session cookie, or a bearer
 * token): without valid ones it is answered 401 as plain HTTP, never upgraded (WIRE.md §2).
 */
export function mountAdminWs(app: App, hub: AdminSocketHub, pattern = '/ws/admin'): void {
  mountFrameSocket<AdminSocketData>(app, pattern, {
    limits: hub.limits,
    upgrade: (res, req, context) => {
      // Everything from req is copied now: it is gone after the first await.
      const headers: Record<string, string> = {};
      req.forEach((k, val) => {
        headers[k] = val;
      });
      const key = req.getHeader('sec-websocket-key');
      const protocol = req.getHeader('sec-websocket-protocol');
      const extensions = req.getHeader('sec-websocket-extensions');
      const remoteAddress = peerAddress(res);
      const request: HttpRequest = { method: 'GET', path: pattern, query: new URLSearchParams(req.getQuery() ?? ''), headers, params: {}, body: Buffer.alloc(0), remoteAddress };
      let aborted = false;
      res.onAborted(() => {
        aborted = true;
      });
      hub.authenticateUpgrade(request).then(
        (principal) => {
          if (aborted) return;
          res.cork(() => res.upgrade({ link: null, principal }, key, protocol, extensions, context));
        },
        (e: unknown) => {
          if (aborted) return;
          const forbidden = e instanceof SvcError && e.code === 'forbidden';
          const body = e instanceof SvcError ? { error: e.message, code: e.code } : { error: 'unauthorized', code: 'unauthorized' };
          res.cork(() => {
            res.writeStatus(forbidden ? '403 Forbidden' : '401 Unauthorized').writeHeader('content-type', 'application/json').end(JSON.stringify(body));
          });
        },
      );
    },
    connect: (socket, { principal }) => hub.connect(socket, principal),
  });
}
