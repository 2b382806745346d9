import * as v from 'valibot';
import { ADMIN_AGENT_COMMANDS, MAX_AVATAR_BYTES, MetricsPeriodSchema, UpdateAgentBodySchema, type Principal } from '../../schemas/index.js';
import { json, withBody, withQuery, type Route } from '../http/index.js';
import { adminAuth } from './admin-auth.js';
import type { AdminDeps } from './admin-deps.js';
import { avatarFromMultipart } from './avatar-upload.js';

/*
 * SPEC.md "Admin REST: agents" and "Admin REST: providers" in WIRE.md §2's shapes. Handlers parse and
 * send; the admin agents actor applies `allowed_agents` (an agent the caller may not see is a 404,
 * like one that does not exist). The public `GET /api/agents/{name}/avatar` is edges/api's.
 */

const BODY_LIMIT = 64 * 1024;
/** The avatar plus the multipart envelope around it; the part itself is capped at MAX_AVATAR_BYTES. */
const AVATAR_BODY_LIMIT = MAX_AVATAR_BYTES + 64 * 1024;

const PeriodQuery = v.object({ period: v.optional(MetricsPeriodSchema, '24h') });

export function agentsRoutes(deps: AdminDeps): Route[] {
  const { bus } = deps;
  const C = ADMIN_AGENT_COMMANDS;
  return [
    {
      method: 'GET',
      pattern: '/api/agents',
      auth: adminAuth('agents.read'),
      summary: 'The agents the caller may see',
      handler: async (_req, principal) => json(200, await bus.send(C.list, { principal })),
    },
    {
      method: 'GET',
      pattern: '/api/agents/:name',
      auth: adminAuth('agents.read'),
      summary: "An agent's details",
      handler: async (req, principal) => json(200, await bus.send(C.get, { principal, name: req.params.name ?? '' })),
    },
    {
      method: 'PUT',
      pattern: '/api/agents/:name',
      maxBodyBytes: BODY_LIMIT,
      auth: adminAuth('agents.write'),
      summary: "Set an agent's additional_directories (absolute existing directories)",
      ...withBody(UpdateAgentBodySchema, async ({ additional_directories }, req, principal: Principal) =>
        json(200, await bus.send(C.update, { principal, name: req.params.name ?? '', additional_directories })),
      ),
    },
    {
      method: 'POST',
      pattern: '/api/agents/:name/avatar',
      maxBodyBytes: AVATAR_BODY_LIMIT,
      auth: adminAuth('agents.write'),
      summary: "Upload an agent's avatar (PNG, JPEG, GIF or WebP)",
      bodyType: 'multipart/form-data',
      handler: async (req, principal) => {
        const bytes = await avatarFromMultipart(req.body, req.headers['content-type']);
        return json(200, await bus.send(C.setAvatar, { principal, name: req.params.name ?? '', data_base64: bytes.toString('base64') }));
      },
    },
    {
      method: 'DELETE',
      pattern: '/api/agents/:name/avatar',
      auth: adminAuth('agents.write'),
      summary: "Remove an agent's avatar",
      handler: async (req, principal) => json(200, await bus.send(C.removeAvatar, { principal, name: req.params.name ?? '' })),
    },
    {
      method: 'GET',
      pattern: '/api/agents/:name/metrics',
      auth: adminAuth('agents.read'),
      summary: "An agent's turn metrics over a period (24h or 7d)",
      ...withQuery(PeriodQuery, async ({ period }, req, principal: Principal) => json(200, await bus.send(C.metrics, { principal, name: req.params.name ?? '', period }))),
    },
    {
      method: 'GET',
      pattern: '/api/agents/:name/metrics/history',
      auth: adminAuth('agents.read'),
      summary: "An agent's metrics in time buckets",
      ...withQuery(PeriodQuery, async ({ period }, req, principal: Principal) => json(200, await bus.send(C.history, { principal, name: req.params.name ?? '', period }))),
    },
    {
      method: 'GET',
      pattern: '/api/providers/available',
      auth: adminAuth('providers.read'),
      summary: 'The providers, whether each is signed in, and their models',
      handler: async (_req, principal) => json(200, await bus.send(C.providers, { principal })),
    },
  ];
}
