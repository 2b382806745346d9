import { ImportBodySchema, PORTABILITY_COMMANDS, type Principal } from '../../schemas/index.js';
import { json, withBody, type Route } from '../http/index.js';
import { adminAuth } from './admin-auth.js';
import type { AdminDeps } from './admin-deps.js';

/** SPEC.md `/api/export` and `/api/import` (merge: add new, skip existing), WIRE.md §2 shapes. */
const IMPORT_BODY_LIMIT = 4 * 1024 * 1024;

export function portabilityRoutes(deps: AdminDeps): Route[] {
  const { bus } = deps;
  return [
    {
      method: 'GET',
      pattern: '/api/export',
      auth: adminAuth('export.read'),
      summary: 'Export cron jobs, webhooks and users (no secrets)',
      handler: async (_req, principal) => json(200, await bus.send(PORTABILITY_COMMANDS.export, { principal })),
    },
    {
      method: 'POST',
      pattern: '/api/import',
      auth: adminAuth('import.write'),
      summary: 'Import cron jobs, webhooks and users (new ones added, existing skipped)',
      maxBodyBytes: IMPORT_BODY_LIMIT,
      ...withBody(ImportBodySchema, async (data, _req, principal: Principal) => json(200, await bus.send(PORTABILITY_COMMANDS.import, { principal, data }))),
    },
  ];
}
