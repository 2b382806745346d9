import { RenameInstanceBodySchema, SYSTEM_COMMANDS, type Principal } from '../../schemas/index.js';
import { json, withBody, type Route } from '../http/index.js';
import { adminAuth } from './admin-auth.js';
import type { AdminDeps } from './admin-deps.js';
import { language } from './query-params.js';

/*
 * SPEC.md "Admin REST: system, dashboard, activity": host status and instance name (WIRE.md §2),
 * and the dashboard summary. The figures, the cache and who sees what are the dashboard actor's.
 */
export function dashboardRoutes(deps: AdminDeps): Route[] {
  const { bus } = deps;
  return [
    {
      method: 'GET',
      pattern: '/api/system/status',
      auth: adminAuth('system.read'),
      summary: 'Host CPU, RAM, disk, uptime, instance name and version',
      handler: async (req, principal) => json(200, await bus.send(SYSTEM_COMMANDS.status, { principal, lang: language(req) })),
    },
    {
      method: 'PUT',
      pattern: '/api/system/instance-name',
      auth: adminAuth('system.rename'),
      summary: 'Rename this instance',
      maxBodyBytes: 4096,
      ...withBody(RenameInstanceBodySchema, async ({ instance_name }, _req, principal: Principal) =>
        json(200, await bus.send(SYSTEM_COMMANDS.rename, { principal, instance_name })),
      ),
    },
    {
      method: 'GET',
      pattern: '/api/dashboard/summary',
      auth: adminAuth('dashboard.read'),
      summary: 'Dashboard: system figures, counters and the latest activity (cached 5 s)',
      handler: async (req, principal) => json(200, await bus.send(SYSTEM_COMMANDS.summary, { principal, lang: language(req) })),
    },
  ];
}
