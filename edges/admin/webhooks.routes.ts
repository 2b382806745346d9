import { CreateWebhookBodySchema, RecordIdSchema, UpdateWebhookBodySchema, VerifyWebhookBodySchema, WEBHOOK_COMMANDS } from '../../schemas/index.js';
import { json, parseStrictBody, type Route } from '../http/index.js';
import { adminAuth } from './admin-auth.js';
import type { AdminDeps } from './admin-deps.js';
import { pathParam } from './query-params.js';

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
      body: CreateWebhookBodySchema,
      maxBodyBytes: BODY_LIMIT,
      handler: async (req, principal) => json(201, await bus.send(WEBHOOK_COMMANDS.create, { principal, hook: parseStrictBody(req, CreateWebhookBodySchema) })),
    },
    {
      method: 'PUT',
      pattern: '/api/webhooks/:id',
      auth: adminAuth('webhooks.write'),
      summary: 'Change a webhook',
      body: UpdateWebhookBodySchema,
      maxBodyBytes: BODY_LIMIT,
      handler: async (req, principal) => {
        const id = pathParam(req, 'id', RecordIdSchema);
        return json(200, await bus.send(WEBHOOK_COMMANDS.update, { principal, id, changes: parseStrictBody(req, UpdateWebhookBodySchema) }));
      },
    },
    {
      method: 'DELETE',
      pattern: '/api/webhooks/:id',
      auth: adminAuth('webhooks.write'),
      handler: async (req, principal) => json(200, await bus.send(WEBHOOK_COMMANDS.delete, { principal, id: pathParam(req, 'id', RecordIdSchema) })),
    },
    {
      method: 'POST',
      pattern: '/api/webhooks/:id/verify',
      auth: adminAuth('webhooks.verify'),
      summary: "Check an HMAC-SHA256 signature of a payload with the webhook's secret",
      body: VerifyWebhookBodySchema,
      maxBodyBytes: VERIFY_BODY_LIMIT,
      handler: async (req, principal) => {
        const id = pathParam(req, 'id', RecordIdSchema);
        return json(200, await bus.send(WEBHOOK_COMMANDS.verify, { principal, id, ...parseStrictBody(req, VerifyWebhookBodySchema) }));
      },
    },
  ];
}
