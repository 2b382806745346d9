import type { AdminMessageFrame, AdminServerFrame } from '../../../schemas/index.js';

/*
 * `/ws/admin` for the whole app: one socket per tab, opened after login and authenticated by the
 * session cookie (first frame `{type: auth, token: ""}`, WIRE.md §2). Pages subscribe to the frames
 * they show; a dropped socket reconnects with a growing delay, and a refused one stops trying
 * until the next login.
 */

export type Frame = AdminServerFrame;
type Listener = (frame: Frame) => void;
export type SocketState = 'closed' | 'connecting' | 'open';

const listeners = new Set<Listener>();
const stateListeners = new Set<(s: SocketState) => void>();
let socket: WebSocket | null = null;
let wanted = false;
let attempt = 0;
let retry: ReturnType<typeof setTimeout> | null = null;
let state: SocketState = 'closed';

function setState(s: SocketState): void {
  state = s;
  for (const l of stateListeners) l(s);
}

function connect(): void {
  if (!wanted || socket) return;
  setState('connecting');
  const url = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/ws/admin`;
  const ws = new WebSocket(url);
  socket = ws;
  ws.onopen = () => ws.send(JSON.stringify({ type: 'auth', token: '' }));
  ws.onmessage = (ev) => {
    let frame: Frame;
    try {
      frame = JSON.parse(String(ev.data)) as Frame;
    } catch {
      return;
    }
    if (frame.type === 'auth_ok') {
      attempt = 0;
      setState('open');
    }
    if (frame.type === 'auth_error') wanted = false;
    for (const l of listeners) l(frame);
  };
  ws.onclose = () => {
    socket = null;
    setState('closed');
    if (!wanted) return;
    const delay = Math.min(30_000, 500 * 2 ** attempt++);
    retry = setTimeout(() => {
      retry = null;
      connect();
    }, delay);
  };
}

export const adminSocket = {
  start(): void {
    wanted = true;
    attempt = 0;
    connect();
  },
  stop(): void {
    wanted = false;
    if (retry) clearTimeout(retry);
    retry = null;
    socket?.close();
    socket = null;
    setState('closed');
  },
  /** False when the socket is not open: the caller says so instead of losing the message. */
  send(frame: Omit<AdminMessageFrame, 'type'> & { type: 'message' } | { type: 'abort'; agent: string }): boolean {
    if (!socket || state !== 'open') return false;
    socket.send(JSON.stringify(frame));
    return true;
  },
  subscribe(l: Listener): () => void {
    listeners.add(l);
    return () => listeners.delete(l);
  },
  onState(l: (s: SocketState) => void): () => void {
    stateListeners.add(l);
    l(state);
    return () => stateListeners.delete(l);
  },
};
