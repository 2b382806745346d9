import type { AuthRejection, ConnectionCloseReason } from './events/connection.events.js';

/*
 * The contract of machines/connection.machine.ts with the direct edge that drives it: the events
 * the edge reports, the context it reads verdicts from. Here because edges/ may not import
 * machines/ (bin/ hands the machine in), so both sides type against the same declaration.
 */

export type ConnectionState = 'plaintext' | 'encrypted' | 'closing' | 'closed';

/** The host records the facts on `conn:<id>`; the machine needs no id of its own. */
export type FrameVerdict = 'accepted' | 'decrypt_failed';

export interface ConnectionInput {
  nonceCap?: number;
}

export interface ConnectionContext {
  chatId: number | null;
  channelId: number | null;
  nonceCap: number;
  /**
   * Mutated in place: copying up to 100k entries per frame would make a long session quadratic.
   * Nothing else holds a reference, so the snapshot stays the only owner. Null until the first
   * accepted frame: most connections sit idle, and an empty Set still costs a hash table each.
   */
  seenNonces: Set<string> | null;
  lastFrame: FrameVerdict | null;
  rejection: AuthRejection | null;
  /** Set when the server decided to close; the edge then closes the socket and reports `close`. */
  closeReason: ConnectionCloseReason | null;
}

export type ConnectionEvent =
  /** A parsed auth frame: the edge compared the token and checked the key; chat/channel are raw frame values. */
  | {
      type: 'auth';
      tokenValid: boolean;
      keyValid: boolean;
      chatId?: unknown;
      channelId?: unknown;
      configChatId: number;
      allowedUserIds: readonly number[];
    }
  /**
   * Any other frame. Before auth: a frame that is not an auth frame. After auth: the nonce of a frame
   * that decrypted, or null for one that did not (bad base64, too short, failed box, binary, too large).
   */
  | { type: 'frame'; nonce: string | null }
  | ConnectionLifecycleEvent;

/** What the edge's connection host (edges/http) tells every connection machine, whatever its surface. */
export type ConnectionLifecycleEvent<DropReason extends string = 'backpressure' | 'shutdown'> =
  /** The edge's auth timer fired. */
  | { type: 'timeout' }
  /** The server must drop the connection (slow reader, shutdown, and what a surface adds). */
  | { type: 'drop'; reason: DropReason }
  /** The socket is gone, whoever closed it. */
  | { type: 'close'; code: number };

