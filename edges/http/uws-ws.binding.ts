import uWS from 'uWebSockets.js';
import type { App } from './uws-http.binding.js';

/** A socket as a connection sees it (`/ws`, `/ws/admin`); the uWS binding below implements it. */
export interface FrameSocket {
  send(text: string): void;
  /** Runs `write` with the socket's output held back, so its sends leave as one write. */
  cork(write: () => void): void;
  bufferedAmount(): number;
  /** Close handshake with a close frame. */
  end(code: number, reason: string): void;
  /** Drop at once: a peer that does not read would never take a close frame. */
  abort(): void;
}

/** What a surface's connection hears from its socket. */
export interface FrameConnection {
  open(): void;
  /** `text` null: a binary frame; '' : one above `maxFrameBytes`, refused unread. */
  onFrame(text: string | null, bytes: number): void;
  onClose(code: number): void;
}

export interface FrameSocketLimits {
  /** Above this uWS closes the socket (1009) before buffering more. */
  hardFrameBytes: number;
  /** Above this a frame is handed on undecoded, to be refused with an error frame. */
  maxFrameBytes: number;
  maxBufferedBytes: number;
}

/** uWS copies the upgrade's data onto its own per-socket object (`ws.getUserData() === ws`). */
type SocketData<U> = U & { link: UwsFrameSocket<U> | null };

/**
 * The connection's socket on uWS: one small object per socket whose methods live on the
 * prototype, rather than a set of closures per socket. Once the close callback has run, uWS
 * forbids touching `ws`, so every write checks `closed`.
 */
class UwsFrameSocket<U> implements FrameSocket {
  closed = false;
  readonly conn: FrameConnection;

  constructor(
    private readonly ws: uWS.WebSocket<SocketData<U>>,
    connect: (socket: FrameSocket, data: U) => FrameConnection,
  ) {
    this.conn = connect(this, ws.getUserData());
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

export interface FrameSocketRoute<U> {
  limits: FrameSocketLimits;
  /** Decides the upgrade; accepts with `res.upgrade({link: null, ...data}, ...)`, else answers in HTTP. */
  upgrade: uWS.WebSocketBehavior<SocketData<U>>['upgrade'];
  /** The connection for an accepted socket, given what its upgrade carried. */
  connect(socket: FrameSocket, data: U): FrameConnection;
}

/**
 * A WebSocket endpoint of frame connections on uWS (`/ws`, `/ws/admin`). Frames are copied out of
 * uWS's ArrayBuffer inside the callback (it is neutered on return); a message above
 * `hardFrameBytes` makes uWS close the socket (1009) before it buffers more, one above
 * `maxFrameBytes` is handed on undecoded to be refused with an error frame.
 */
export function mountFrameSocket<U>(app: App, pattern: string, route: FrameSocketRoute<U>): void {
  const { limits } = route;
  app.ws<SocketData<U>>(pattern, {
    maxPayloadLength: limits.hardFrameBytes,
    // The connection's own check (maxBufferedBytes) closes first; uWS's limit only guards a single huge frame.
    maxBackpressure: limits.maxBufferedBytes * 2,
    closeOnBackpressureLimit: 0,
    idleTimeout: 120,
    sendPingsAutomatically: true,
    compression: uWS.DISABLED,
    upgrade: route.upgrade,
    open: (ws) => {
      const link = new UwsFrameSocket<U>(ws, route.connect);
      ws.getUserData().link = link;
      link.conn.open();
    },
    message: (ws, message, isBinary) => {
      const link = ws.getUserData().link;
      if (!link) return;
      const bytes = message.byteLength;
      // Decode only what may be used: an oversized or binary frame is refused unread.
      const text = isBinary ? null : bytes > limits.maxFrameBytes ? '' : Buffer.from(message).toString('utf8');
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
