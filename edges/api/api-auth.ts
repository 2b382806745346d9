import type { RouteAuth } from '../http/index.js';

/**
 * SPEC.md serves the shared `/api/*` routes to the direct API's bearer token and to the admin panel
 * (its JWT, cookie, or the legacy static token) alike. Credentials no surface on the server checks
 * are skipped, so with the admin API absent these routes take the direct token only.
 */
const ACCEPTS = ['direct-token', 'admin-jwt', 'admin-cookie', 'admin-static-token'] as const;

/** The route declarations by the least role they need (SPEC.md "Roles"). */
export const API_AUTH = {
  viewer: { accepts: ACCEPTS, role: 'viewer' },
  operator: { accepts: ACCEPTS, role: 'operator' },
  admin: { accepts: ACCEPTS, role: 'admin' },
} as const satisfies Record<string, RouteAuth>;
