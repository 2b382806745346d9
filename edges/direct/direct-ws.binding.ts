import uWS from 'uWebSockets.js';
import type { App } from '../http/index.js';
import { DirectConnection } from './direct-connection.js';
import type { DirectHub } from './direct-hub.js';

interface SocketData {
  conn: DirectConnection | null;
  closed: boolean;
  address: string;
}

/**
 * `/ws` on uWS. Frames are copied out of uWS's ArrayBuffer inside the callback (it is neutered on
 * return); every write is corked; a message above `hardFrameBytes` makes uWS close the socket
 * (1009) before it buffers more, one above `maxFrameBytes` is refused with an error frame.
 */
export function mountDirectWs(app: App, hub: DirectHub, pattern = '/ws'): void {
  app.ws<SocketData>(pattern, {
    maxPayloadLength: hub.limits.hardFrameBytes,
    // Our own check (maxBufferedBytes) closes first; uWS's limit only guards a single huge frame.
    maxBackpressure: hub.limits.maxBufferedBytes * 2,
    closeOnBackpressureLimit: 0,
    idleTimeout: 120,
    sendPingsAutomatically: true,
    compression: uWS.DISABLED,
    upgrade: (res, req, context) => {
      const address = Buffer.from(res.getRemoteAddressAsText()).toString();
      // An address locked out for failed auths is turned away here, before a socket, key pair or
      // timer exists for it.
      const retryS = hub.upgradeRefusal(address);
      if (retryS > 0) {
        res.cork(() => {
          res
            .writeStatus('429 Too Many Requests')
            .writeHeader('Retry-After', String(retryS))
            .writeHeader('Content-Type', 'application/json')
            .end(JSON.stringify({ error: 'auth_rate_limited', message: `too many failed authentications from this address; retry in ${retryS} s` }), true);
        });
        return;
      }
      res.upgrade<SocketData>(
        { conn: null, closed: false, address },
        req.getHeader('sec-websocket-key'),
        req.getHeader('sec-websocket-protocol'),
        req.getHeader('sec-websocket-extensions'),
        context,
      );
    },
    open: (ws) => {
      // A turn's chunks arrive in bursts (one stdout read holds many lines), outside any uWS
      // callback; queuing them for one cork per microtask makes a burst one write, not one each.
      let queued: string[] = [];
      let queuedBytes = 0;
      const flush = () => {
        const batch = queued;
        queued = [];
        queuedBytes = 0;
        if (ws.getUserData().closed) return;
        ws.cork(() => {
          for (const text of batch) ws.send(text, false);
        });
      };
      const conn = new DirectConnection(hub, {
        send: (text) => {
          if (queued.length === 0) queueMicrotask(flush);
          queued.push(text);
          queuedBytes += text.length;
        },
        bufferedAmount: () => ws.getBufferedAmount() + queuedBytes,
        end: (code, reason) => {
          flush();
          ws.end(code, reason);
        },
        abort: () => ws.close(),
      }, ws.getUserData().address);
      ws.getUserData().conn = conn;
      conn.open();
    },
    message: (ws, message, isBinary) => {
      const conn = ws.getUserData().conn;
      if (!conn) return;
      const bytes = message.byteLength;
      // Decode only what may be used: an oversized or binary frame is refused unread.
      const text = isBinary || bytes > hub.limits.maxFrameBytes ? (isBinary ? null : '') : Buffer.from(message).toString('utf8');
      conn.onFrame(text, bytes);
    },
    close: (ws, code) => {
      ws.getUserData().closed = true;
      ws.getUserData().conn?.onClose(code);
    },
  });
}
