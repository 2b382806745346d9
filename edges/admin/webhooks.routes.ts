import { CreateWebhookBodySchema, DEFAULT_RUN_HISTORY, MAX_RUN_HISTORY, RecordIdSchema, UpdateWebhookBodySchema, VerifyWebhookBodySchema, WEBHOOK_COMMANDS, type Principal } from '../../schemas/index.js';
import { json, withBody, type Route } from '../http/index.js';
import { adminAuth } from './admin-auth.js';
import type { AdminDeps } from './admin-deps.js';
import { pathParam, queryLimit } from './query-params.js';

/** SPEC.md "Admin REST: webhooks" with WIRE.md §2's record; secrets are masked in every listing. */
const BODY_LIMIT = 64 * 1024;
const VERIFY_BODY_LIMIT = 300 * 1024;

export function webhooksRoutes(deps: AdminDeps): Route[] {
  const { bus } = deps;
  return [
    {
      method: 'GET',
      pattern: '/api/webhooks',
      auth: adminAuth('webhooks.read'),
      summary: 'The webhooks the caller may see (secrets masked)',
      handler: async (_req, principal) => json(200, await bus.send(WEBHOOK_COMMANDS.list, { principal })),
    },
    {
      method: 'POST',
      pattern: '/api/webhooks',
      auth: adminAuth('webhooks.write'),
      summary: 'Create a webhook',
      maxBodyBytes: BODY_LIMIT,
      ...withBody(CreateWebhookBodySchema, async (hook, _req, principal: Principal) => json(201, await bus.send(WEBHOOK_COMMANDS.create, { principal, hook }))),
    },
    {
      method: 'PUT',
      pattern: '/api/webhooks/:id',
      auth: adminAuth('webhooks.write'),
      summary: 'Change a webhook',
      maxBodyBytes: BODY_LIMIT,
      ...withBody(UpdateWebhookBodySchema, async (changes, req, principal: Principal) => {
        const id = pathParam(req, 'id', RecordIdSchema);
        return json(200, await bus.send(WEBHOOK_COMMANDS.update, { principal, id, changes }));
      }),
    },
    {
      method: 'DELETE',
      pattern: '/api/webhooks/:id',
      auth: adminAuth('webhooks.write'),
      handler: async (req, principal) => json(200, await bus.send(WEBHOOK_COMMANDS.delete, { principal, id: pathParam(req, 'id', RecordIdSchema) })),
    },
    {
      method: 'GET',
      pattern: '/api/webhooks/:id/runs',
      auth: adminAuth('webhooks.read'),
      summary: "A webhook's latest accepted calls and how they ended, newest first (?limit=, default 20)",
      handler: async (req, principal) =>
        json(200, await bus.send(WEBHOOK_COMMANDS.runs, { principal, id: pathParam(req, 'id', RecordIdSchema), limit: queryLimit(req, DEFAULT_RUN_HISTORY, MAX_RUN_HISTORY) })),
    },
    {
      method: 'POST',
      pattern: '/api/webhooks/:id/verify',
      auth: adminAuth('webhooks.verify'),
      summary: "Check an HMAC-SHA256 signature of a payload with the webhook's secret",
      maxBodyBytes: VERIFY_BODY_LIMIT,
      ...withBody(VerifyWebhookBodySchema, async (body, req, principal: Principal) => {
        const id = pathParam(req, 'id', RecordIdSchema);
        return json(200, await bus.send(WEBHOOK_COMMANDS.verify, { principal, id, ...body }));
      }),
    },
  ];
}
