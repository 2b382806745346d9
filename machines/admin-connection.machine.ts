import { assign, emit, setup } from 'xstate';
import {
  CONNECTION_EVENTS,
  type AdminAuthRejection,
  type AdminConnectionContext,
  type AdminConnectionEvent,
  type AdminConnectionInput,
  type AdminFrameError,
  type AdminFrameKind,
  type ConnectionEventType,
  type Fact,
} from '../schemas/index.js';

/*
 * One `/ws/admin` connection (WIRE.md §2): waiting for its auth frame, then open, then closed. The
 * edge authenticates (with the server's own authenticators), parses frames and keeps the timer; it
 * reports each outcome here and reads the verdict from the snapshot (`value`, `lastFrame`,
 * `rejection`, `closeReason`), as the direct API's connection machine does, and like it records
 * `connection.authenticated` and `connection.closed` from authentication on, so who held an admin
 * socket and why it ended is in the log beside the `/ws` ones.
 */

type FrameEvent = Extract<AdminConnectionEvent, { type: 'frame' }>;
type AuthEvent = Extract<AdminConnectionEvent, { type: 'auth' }>;

const VERDICT: Record<Exclude<AdminFrameKind, 'message' | 'abort'>, AdminFrameError> = {
  // A second auth frame: the connection is authenticated once, for its lifetime.
  auth: 'out_of_order',
  invalid: 'invalid_frame',
  unknown: 'unknown_type',
  too_large: 'frame_too_large',
};

const reject = (code: AdminAuthRejection) => ({ type: 'reject', params: { code } }) as const;

export const adminConnectionMachine = setup({
  types: {
    input: {} as AdminConnectionInput,
    context: {} as AdminConnectionContext,
    events: {} as AdminConnectionEvent,
    emitted: {} as Fact<ConnectionEventType>,
  },
  actions: {
    reject: assign((_, params: { code: AdminAuthRejection }) => ({ rejection: params.code, closeReason: params.code })),
  },
  guards: {
    authOk: ({ event }) => (event as AuthEvent).ok,
    wasAuthenticated: ({ context }) => context.role !== null,
  },
}).createMachine({
  id: 'admin-connection',
  initial: 'awaiting_auth',
  context: ({ input }) => ({
    maxFrames: input.maxFrames,
    windowMs: input.windowMs,
    role: null,
    lastFrame: null,
    windowStart: 0,
    windowCount: 0,
    rejection: null,
    closeReason: null,
  }),
  on: {
    close: [
      {
        guard: 'wasAuthenticated',
        target: '.closed',
        actions: emit(({ context, event }) => ({ type: CONNECTION_EVENTS.closed, data: { reason: context.closeReason ?? 'client', code: event.code } })),
      },
      { target: '.closed', actions: assign(({ context }) => ({ closeReason: context.closeReason ?? 'client' })) },
    ],
  },
  states: {
    awaiting_auth: {
      on: {
        auth: [
          {
            guard: 'authOk',
            target: 'open',
            actions: [
              assign(({ event }) => ({ role: event.role })),
              emit(({ event }) => ({ type: CONNECTION_EVENTS.authenticated, data: { surface: 'admin' as const, role: event.role! } })),
            ],
          },
          { target: 'closing', actions: reject('auth_failed') },
        ],
        // Only an auth frame may come first; the edge reports one it could not parse as `invalid`.
        frame: { target: 'closing', actions: reject('auth_required') },
        timeout: { target: 'closing', actions: reject('auth_timeout') },
        drop: { target: 'closing', actions: assign(({ event }) => ({ closeReason: event.reason })) },
      },
    },
    open: {
      on: {
        frame: {
          actions: assign(({ context, event }) => {
            const { kind, at } = event as FrameEvent;
            const fresh = at - context.windowStart >= context.windowMs || at < context.windowStart;
            const windowStart = fresh ? at : context.windowStart;
            const windowCount = (fresh ? 0 : context.windowCount) + 1;
            if (windowCount > context.maxFrames) return { windowStart, windowCount, lastFrame: 'rate_limited' as const };
            const lastFrame = kind === 'message' || kind === 'abort' ? ('accepted' as const) : VERDICT[kind];
            return { windowStart, windowCount, lastFrame };
          }),
        },
        drop: { target: 'closing', actions: assign(({ event }) => ({ closeReason: event.reason })) },
      },
    },
    /** The server has decided to close; only the socket's `close` moves on. */
    closing: {},
    closed: { type: 'final' },
  },
});
