import uWS from 'uWebSockets.js';
import type { App } from '../http/index.js';
import { DirectConnection, type FrameSocket } from './direct-connection.js';
import type { DirectHub } from './direct-hub.js';

/** uWS copies these onto its own per-socket object (`ws.getUserData() === ws`). */
interface SocketData {
  link: UwsFrameSocket | null;
  /** The client's address, read at the upgrade (the auth-failure limit keys on it). */
  address: string;
}

/**
 * The connection's socket on uWS: one small object per socket whose methods live on the
 * prototype, rather than a set of closures per socket. Once the close callback has run, uWS
 * forbids touching `ws`, so every write checks `closed`.
 */
class UwsFrameSocket implements FrameSocket {
  closed = false;
  readonly conn: DirectConnection;

  constructor(
    private readonly ws: uWS.WebSocket<SocketData>,
    hub: DirectHub,
  ) {
    this.conn = new DirectConnection(hub, this, ws.getUserData().address);
  }

  send(text: string): void {
    if (!this.closed) this.ws.send(text, false);
  }

  /**
   * A turn's frames arrive outside any uWS callback (which would cork for us); corked, a frame's
   * header and payload leave in one write. Bytes held in the open cork (at most uWS's
   * 16 KiB cork buffer) are not in `bufferedAmount` yet: small against the 4 MiB cap.
   */
  cork(write: () => void): void {
    if (this.closed) return;
    this.ws.cork(write);
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
 * `/ws` on uWS. Frames are copied out of uWS's ArrayBuffer inside the callback (it is neutered on
 * return); a message above `hardFrameBytes` makes uWS close the socket (1009) before it buffers
 * more, one above `maxFrameBytes` is refused with an error frame.
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
      res.upgrade<SocketData>(
        { link: null, address },
        req.getHeader('sec-websocket-key'),
        req.getHeader('sec-websocket-protocol'),
        req.getHeader('sec-websocket-extensions'),
        context,
      );
    },
    open: (ws) => {
      const link = new UwsFrameSocket(ws, hub);
      ws.getUserData().link = link;
      link.conn.open();
    },
    message: (ws, message, isBinary) => {
      const link = ws.getUserData().link;
      if (!link) return;
      const bytes = message.byteLength;
      // Decode only what may be used: an oversized or binary frame is refused unread.
      const text = isBinary || bytes > hub.limits.maxFrameBytes ? (isBinary ? null : '') : Buffer.from(message).toString('utf8');
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
