import { mountFrameSocket, peerAddress, type App } from '../http/index.js';
import { DirectConnection } from './direct-connection.js';
import type { DirectHub } from './direct-hub.js';

/** What the upgrade hands the connection. */
interface DirectSocketData {
  /** The client's address, read at the upgrade (the auth-failure limit keys on it). */
  address: string;
}

/** `/ws` on uWS: every upgrade is accepted; the first frame authenticates (SPEC.md "Direct API"). */
export function mountDirectWs(app: App, hub: DirectHub, pattern = '/ws'): void {
  mountFrameSocket<DirectSocketData>(app, pattern, {
    limits: hub.limits,
    upgrade: (res, req, context) => {
      const address = peerAddress(res);
      res.upgrade(
        { link: null, address },
        req.getHeader('sec-websocket-key'),
        req.getHeader('sec-websocket-protocol'),
        req.getHeader('sec-websocket-extensions'),
        context,
      );
    },
    connect: (socket, { address }) => new DirectConnection(hub, socket, address),
  });
}
