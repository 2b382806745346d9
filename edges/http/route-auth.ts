import type { Role } from '../../schemas/index.js';

/**
 * The kinds of credential a route can accept (DESIGN.md §7). Each is checked by the authenticator a
 * surface registers for it on the server; a route may accept several, because SPEC.md serves some
 * paths to the direct token and to the admin panel alike (`PUT /api/chat/sessions/{id}`).
 */
export const CREDENTIALS = [
  /** `Authorization: Bearer <api.token>`: the direct API's shared token. */
  'direct-token',
  /** The admin panel's access token (JWT, `Authorization: Bearer`); registered by edges/admin. */
  'admin-jwt',
  /** The admin panel's session cookie; registered by edges/admin. */
  'admin-cookie',
  /** The static API token of the legacy admin without a users.json row; registered by edges/admin. */
  'admin-static-token',
  /** An agent's `interagent_token` (the main agent's token for main) and `X-SVC-Caller-User-Id`. */
  'agent-token',
  /** The main agent token presented by the home's owner (`svc ask`). */
  'owner-token',
] as const;
export type Credential = (typeof CREDENTIALS)[number];

/** What a route demands of its caller. */
export interface RouteAuth {
  /** Tried in this order; the first that recognises the request decides who calls. */
  accepts: readonly [Credential, ...Credential[]];
  /** The least role the caller needs; absent: any authenticated caller. */
  role?: Role;
}
