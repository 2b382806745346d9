import { AUDIT_COMMANDS, DEFAULT_AUDIT_LIMIT, MAX_AUDIT_LIMIT } from '../../schemas/index.js';
import { json, type Route } from '../http/index.js';
import { adminAuth } from './admin-auth.js';
import type { AdminDeps } from './admin-deps.js';
import { queryLimit } from './query-params.js';

/** SPEC.md `GET /api/audit?limit=200`: the newest audit entries, from the projection of `audit.recorded`. */
export function auditRoutes(deps: AdminDeps): Route[] {
  return [
    {
      method: 'GET',
      pattern: '/api/audit',
      auth: adminAuth('audit.read'),
      handler: async (req, principal) => json(200, await deps.bus.send(AUDIT_COMMANDS.list, { principal, limit: queryLimit(req, DEFAULT_AUDIT_LIMIT, MAX_AUDIT_LIMIT) })),
    },
  ];
}
