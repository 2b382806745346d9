import { SvcError, type Principal, type Role } from '../../schemas/index.js';
import type { HttpRequest } from './http.js';
import type { Credential, RouteAuth } from './route-auth.js';

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
      // The caller rides along (never shown to the client), so a surface can record who was refused.
      throw new SvcError('forbidden', `${req.method} ${req.path} needs the ${auth.role} role or above; ${describePrincipal(principal)} has ${principal.role ?? 'no role'}`, { principal });
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
