import type { Route } from '../http/index.js';
import type { AdminDeps } from './admin-deps.js';

export function agentsRoutes(_deps: AdminDeps): Route[] {
  return [];
}
