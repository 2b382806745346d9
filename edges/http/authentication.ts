import { SvcError, type Principal, type Role } from '../../schemas/index.js';
import type { HttpRequest } from './http.js';

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

export interface Authenticator {
  readonly credential: Credential;
  /** How a client presents this credential, for the 401 message. */
  readonly hint: string;
  /**
   * Turns the request's credential into a Principal. null: the request carries none of this kind
   * (the route's next accepted credential is tried). A credential that is present but refused may
   * throw its own SvcError when saying why helps the caller (an expired token, a disabled user).
   */
  authenticate(req: HttpRequest): Principal | null | Promise<Principal | null>;
}

/** SPEC.md "Roles": each role can do what the ones below it can. */
const RANK: Readonly<Record<Role, number>> = { viewer: 1, operator: 2, admin: 3 };

export function roleSatisfies(has: Role | null, needs: Role): boolean {
  return has !== null && RANK[has] >= RANK[needs];
}

function describePrincipal(p: Principal): string {
  return p.id === null ? `this ${p.kind} credential` : `${p.kind} "${p.id}"`;
}

/**
 * Who calls `req`, by the route's accepted credentials (401 `unauthorized` when none of them
 * recognises the request), and whether their role suffices (403 `forbidden`).
 */
export async function authenticateRoute(req: HttpRequest, auth: RouteAuth, authenticators: ReadonlyMap<Credential, Authenticator>): Promise<Principal> {
  const hints: string[] = [];
  for (const credential of auth.accepts) {
    const authenticator = authenticators.get(credential);
    if (!authenticator) continue;
    hints.push(authenticator.hint);
    const principal = await authenticator.authenticate(req);
    if (principal === null) continue;
    if (auth.role !== undefined && !roleSatisfies(principal.role, auth.role)) {
      throw new SvcError('forbidden', `${req.method} ${req.path} needs the ${auth.role} role or above; ${describePrincipal(principal)} has ${principal.role ?? 'no role'}`);
    }
    return principal;
  }
  throw new SvcError(
    'unauthorized',
    hints.length > 0
      ? `missing or wrong credentials: send ${hints.join(', or ')}`
      : `${req.method} ${req.path} accepts ${auth.accepts.join(', ')}, and none of them is enabled on this server`,
  );
}
