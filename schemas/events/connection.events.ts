import * as v from 'valibot';
import { ROLES } from '../config.schema.js';
import { typeNames } from './type-names.js';

/*
 * Stream `conn:<id>`: one WebSocket connection, `/ws` (direct) or `/ws/admin`, from authentication
 * on (a socket that never authenticates records nothing; see machines/connection.machine.ts).
 */

export const AUTH_REJECTIONS = ['auth_timeout', 'auth_required', 'auth_failed'] as const;
export type AuthRejection = (typeof AUTH_REJECTIONS)[number];
// `revoked`: an admin socket whose user was removed, disabled or logged out everywhere.
export const CONNECTION_CLOSE_REASONS = [...AUTH_REJECTIONS, 'client', 'nonce_limit', 'backpressure', 'shutdown', 'revoked'] as const;
export type ConnectionCloseReason = (typeof CONNECTION_CLOSE_REASONS)[number];

export const CONNECTION_EVENT_SCHEMAS = {
  // Version 2 (event-version.ts): `surface` names the socket's surface; version 1 was `/ws` only.
  'connection.authenticated': v.variant('surface', [
    v.object({ surface: v.literal('direct'), chat_id: v.number(), channel_id: v.nullable(v.number()) }),
    v.object({ surface: v.literal('admin'), role: v.picklist(ROLES) }),
  ]),
  'connection.closed': v.object({ reason: v.picklist(CONNECTION_CLOSE_REASONS), code: v.number() }),
};
export const CONNECTION_EVENTS = typeNames(CONNECTION_EVENT_SCHEMAS);
export type ConnectionEventType = (typeof CONNECTION_EVENTS)[keyof typeof CONNECTION_EVENTS];
