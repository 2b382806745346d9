import uWS from 'uWebSockets.js';
import { SvcError, type Principal } from '../../schemas/index.js';
import type { App, HttpRequest } from '../http/index.js';
import type { AdminConnection, AdminFrameSocket, AdminSocketHub } from './admin-socket.js';

/** uWS copies these onto its own per-socket object. */
interface SocketData {
  link: UwsAdminSocket | null;
  /** Who the upgrade's credentials named. */
  principal: Principal;
}

/** The connection's socket on uWS; once the close callback has run uWS forbids touching `ws`. */
class UwsAdminSocket implements AdminFrameSocket {
  closed = false;
  readonly conn: AdminConnection;

  constructor(
    private readonly ws: uWS.WebSocket<SocketData>,
    hub: AdminSocketHub,
  ) {
    this.conn = hub.connect(this, ws.getUserData().principal);
  }

  send(text: string): void {
    if (!this.closed) this.ws.send(text, false);
  }

  cork(write: () => void): void {
    if (!this.closed) this.ws.cork(write);
  }

  bufferedAmount(): number {
    return this.closed ? 0 : this.ws.getBufferedAmount();
  }

  end(code: number, reason: string): void {
    if (!this.closed) this.ws.end(code, reason);
  }

  abort(): void {
    if (!this.closed) this.ws.close();
  }
}

/**
 * `/ws/admin` on uWS. The upgrade itself must carry credentials (the session cookie, or a bearer
 * token): without valid ones it is answered 401 as plain HTTP, never upgraded (WIRE.md §2).
 */
export function mountAdminWs(app: App, hub: AdminSocketHub, pattern = '/ws/admin'): void {
  app.ws<SocketData>(pattern, {
    maxPayloadLength: hub.limits.hardFrameBytes,
    maxBackpressure: hub.limits.maxBufferedBytes * 2,
    closeOnBackpressureLimit: 0,
    idleTimeout: 120,
    sendPingsAutomatically: true,
    compression: uWS.DISABLED,
    upgrade: (res, req, context) => {
      // Everything from req is copied now: it is gone after the first await.
      const headers: Record<string, string> = {};
      req.forEach((k, val) => {
        headers[k] = val;
      });
      const key = req.getHeader('sec-websocket-key');
      const protocol = req.getHeader('sec-websocket-protocol');
      const extensions = req.getHeader('sec-websocket-extensions');
      const remoteAddress = Buffer.from(res.getRemoteAddressAsText()).toString();
      const request: HttpRequest = { method: 'GET', path: pattern, query: new URLSearchParams(req.getQuery() ?? ''), headers, params: {}, body: Buffer.alloc(0), remoteAddress };
      let aborted = false;
      res.onAborted(() => {
        aborted = true;
      });
      hub.authenticateUpgrade(request).then(
        (principal) => {
          if (aborted) return;
          res.cork(() => res.upgrade<SocketData>({ link: null, principal }, key, protocol, extensions, context));
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
    open: (ws) => {
      const link = new UwsAdminSocket(ws, hub);
      ws.getUserData().link = link;
      link.conn.open();
    },
    message: (ws, message, isBinary) => {
      const link = ws.getUserData().link;
      if (!link) return;
      const bytes = message.byteLength;
      // Decode only what may be used: an oversized or binary frame is refused unread.
      const text = isBinary ? null : bytes > hub.limits.maxFrameBytes ? '' : Buffer.from(message).toString('utf8');
      link.conn.onFrame(text, bytes);
    },
    close: (ws, code) => {
      const link = ws.getUserData().link;
      if (!link) return;
      link.closed = true;
      link.conn.onClose(code);
    },
  });
}
