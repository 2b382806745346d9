import { assign, emit, setup } from 'xstate';
import { apiSessionTarget } from './session-key.logic.js';
import {
  CONNECTION_EVENTS,
  type AuthRejection,
  type ConnectionContext,
  type ConnectionEvent,
  type ConnectionEventType,
  type ConnectionInput,
  type Fact,
} from '../schemas/index.js';

/*
 * One direct-API WebSocket connection (SPEC.md "Direct API connection"): plaintext until a valid
 * auth frame, then an encrypted session, then closed. The edge does the I/O (token compare, key
 * parsing, decryption, the 10 s timer) and reports each outcome as an event; this machine decides
 * what it means. The edge reads the verdict of each event from the snapshot (`value`, `rejection`,
 * `lastFrame`, `closeReason`).
 *
 * Facts start at authentication: anyone can open a socket, so a connection that never
 * authenticates emits nothing (its rejection is a verdict in the snapshot, which the edge counts in
 * memory). Recording them let unauthenticated traffic grow the event log without bound: 10,000
 * rejected sockets added 30,000 events and 178 MB of WAL.
 */

/**
 * Nonces of accepted client frames are remembered for the connection's lifetime, so a replayed
 * frame is refused. Random 24-byte nonces cannot be pruned safely (no order to forget by), so the
 * set is capped instead: at the cap (~7 MB of latin1 keys) the connection is closed with
 * `decrypt_failed` and the client reconnects with fresh keys — one frame per turn makes 100k a
 * budget no real client reaches.
 */
export const CONNECTION_NONCE_CAP = 100_000;

export type ConnectionFact = Fact<ConnectionEventType>;

type AuthEvent = Extract<ConnectionEvent, { type: 'auth' }>;
type FrameEvent = Extract<ConnectionEvent, { type: 'frame' }>;

const reject = (code: AuthRejection) => ({ type: 'reject', params: { code } }) as const;

export const connectionMachine = setup({
  types: {
    input: {} as ConnectionInput,
    context: {} as ConnectionContext,
    events: {} as ConnectionEvent,
    emitted: {} as ConnectionFact,
  },
  actions: {
    reject: assign((_, params: { code: AuthRejection }) => ({ rejection: params.code, closeReason: params.code })),
  },
  guards: {
    credentialsValid: ({ event }) => (event as AuthEvent).tokenValid && (event as AuthEvent).keyValid,
    frameRefused: ({ context, event }) => {
      const nonce = (event as FrameEvent).nonce;
      return nonce === null || context.seenNonces?.has(nonce) === true;
    },
    nonceBudgetSpent: ({ context }) => (context.seenNonces?.size ?? 0) >= context.nonceCap,
    wasAuthenticated: ({ context }) => context.chatId !== null,
  },
}).createMachine({
  id: 'connection',
  initial: 'plaintext',
  context: ({ input }) => ({
    chatId: null,
    channelId: null,
    nonceCap: input.nonceCap ?? CONNECTION_NONCE_CAP,
    seenNonces: null,
    lastFrame: null,
    rejection: null,
    closeReason: null,
  }),
  on: {
    close: [
      {
        guard: 'wasAuthenticated',
        target: '.closed',
        actions: emit(({ context, event }) => ({
          type: CONNECTION_EVENTS.closed,
          data: { reason: context.closeReason ?? 'client', code: event.code },
        })),
      },
      { target: '.closed', actions: assign(({ context }) => ({ closeReason: context.closeReason ?? 'client' })) },
    ],
  },
  states: {
    plaintext: {
      on: {
        auth: [
          {
            guard: 'credentialsValid',
            target: 'encrypted',
            actions: [
              assign(({ event }) => {
                const target = apiSessionTarget({
                  authChatId: event.chatId,
                  authChannelId: event.channelId,
                  configChatId: event.configChatId,
                  allowedUserIds: event.allowedUserIds,
                });
                return { chatId: target.chatId, channelId: target.topicId };
              }),
              emit(({ context }) => ({
                type: CONNECTION_EVENTS.authenticated,
                data: { surface: 'direct' as const, chat_id: context.chatId!, channel_id: context.channelId },
              })),
            ],
          },
          { target: 'closing', actions: reject('auth_failed') },
        ],
        frame: { target: 'closing', actions: reject('auth_required') },
        timeout: { target: 'closing', actions: reject('auth_timeout') },
        drop: { target: 'closing', actions: assign(({ event }) => ({ closeReason: event.reason })) },
      },
    },
    encrypted: {
      on: {
        frame: [
          { guard: 'frameRefused', actions: assign({ lastFrame: 'decrypt_failed' }) },
          { guard: 'nonceBudgetSpent', target: 'closing', actions: assign({ lastFrame: 'decrypt_failed', closeReason: 'nonce_limit' }) },
          {
            actions: assign(({ context, event }) => {
              const seenNonces = context.seenNonces ?? new Set<string>();
              seenNonces.add(event.nonce!);
              return { lastFrame: 'accepted' as const, seenNonces };
            }),
          },
        ],
        drop: { target: 'closing', actions: assign(({ event }) => ({ closeReason: event.reason })) },
      },
    },
    /** The server has decided to close; only the socket's `close` moves on. */
    closing: {},
    closed: { type: 'final' },
  },
});
