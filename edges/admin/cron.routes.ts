import { CRON_COMMANDS, CreateCronJobBodySchema, DEFAULT_RUN_HISTORY, MAX_RUN_HISTORY, RecordIdSchema, UpdateCronJobBodySchema, type Principal } from '../../schemas/index.js';
import { json, withBody, type Route } from '../http/index.js';
import { adminAuth } from './admin-auth.js';
import type { AdminDeps } from './admin-deps.js';
import { pathParam, queryLimit } from './query-params.js';

/*
 * SPEC.md "Admin REST: cron jobs" with WIRE.md §2's record. A manual run answers 202 once its fire
 * is recorded and its run queued (503 `no-scheduler` while the scheduler is not running, e.g. during
 * start-up); schedules and zones are checked with croner by the records actor, naming the field.
 */
const BODY_LIMIT = 64 * 1024;

export function cronRoutes(deps: AdminDeps): Route[] {
  const { bus } = deps;
  return [
    {
      method: 'GET',
      pattern: '/api/cron',
      auth: adminAuth('cron.read'),
      summary: 'The cron jobs the caller may see',
      handler: async (_req, principal) => json(200, await bus.send(CRON_COMMANDS.list, { principal })),
    },
    {
      method: 'POST',
      pattern: '/api/cron',
      auth: adminAuth('cron.write'),
      summary: 'Create a cron job',
      maxBodyBytes: BODY_LIMIT,
      ...withBody(CreateCronJobBodySchema, async (job, _req, principal: Principal) => json(201, await bus.send(CRON_COMMANDS.create, { principal, job }))),
    },
    {
      method: 'PUT',
      pattern: '/api/cron/:id',
      auth: adminAuth('cron.write'),
      summary: 'Change a cron job',
      maxBodyBytes: BODY_LIMIT,
      ...withBody(UpdateCronJobBodySchema, async (changes, req, principal: Principal) => {
        const id = pathParam(req, 'id', RecordIdSchema);
        return json(200, await bus.send(CRON_COMMANDS.update, { principal, id, changes }));
      }),
    },
    {
      method: 'DELETE',
      pattern: '/api/cron/:id',
      auth: adminAuth('cron.write'),
      handler: async (req, principal) => json(200, await bus.send(CRON_COMMANDS.delete, { principal, id: pathParam(req, 'id', RecordIdSchema) })),
    },
    {
      method: 'POST',
      pattern: '/api/cron/:id/run',
      auth: adminAuth('cron.run'),
      summary: 'Run a cron job now',
      handler: async (req, principal) => json(202, await bus.send(CRON_COMMANDS.run, { principal, id: pathParam(req, 'id', RecordIdSchema) })),
    },
    {
      method: 'GET',
      pattern: '/api/cron/:id/runs',
      auth: adminAuth('cron.read'),
      summary: "A cron job's latest runs, newest first (?limit=, default 20)",
      handler: async (req, principal) =>
        json(200, await bus.send(CRON_COMMANDS.runs, { principal, id: pathParam(req, 'id', RecordIdSchema), limit: queryLimit(req, DEFAULT_RUN_HISTORY, MAX_RUN_HISTORY) })),
    },
  ];
}
