import { ADMIN_ACCESS, type AdminAction } from '../../schemas/index.js';
import type { RouteAuth } from '../http/index.js';

/**
 * What an admin route accepts: the panel's access token (bearer JWT), its session cookie, or the
 * static `api.token` of the legacy admin (SPEC.md "Admin panel (JWT)" 4).
 */
export const ADMIN_CREDENTIALS = ['admin-jwt', 'admin-cookie', 'admin-static-token'] as const;

/** A route's declaration: the least role is the authorisation table's entry for its action. */
export function adminAuth(action: AdminAction): RouteAuth {
  return { accepts: ADMIN_CREDENTIALS, role: ADMIN_ACCESS[action] };
}
