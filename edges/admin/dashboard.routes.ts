import type { Route } from '../http/index.js';
import type { AdminDeps } from './admin-deps.js';

export function dashboardRoutes(_deps: AdminDeps): Route[] {
  return [];
}
