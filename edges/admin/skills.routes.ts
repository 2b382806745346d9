import { ContentBodySchema, CreateSkillBodySchema, SKILL_COMMANDS, SkillScopeQuerySchema, type Principal } from '../../schemas/index.js';
import { MAX_SKILL_DOC_BYTES } from '../../store/index.js';
import { json, withBody, withQuery, type HttpRequest, type Route } from '../http/index.js';
import { adminAuth } from './admin-auth.js';
import type { AdminDeps } from './admin-deps.js';

/*
 * SPEC.md "Admin REST: skills" and WIRE.md §2: an agent's skills (merged, own or global view;
 * writes always to its own directory) and the global scope under `/api/skills` (admin only).
 * Names are checked by the store (`[a-zA-Z0-9_-]+`), which also keeps every file inside its root.
 */

const BODY_LIMIT = 2 * MAX_SKILL_DOC_BYTES + 1024;

/** A skill without a main document reads as empty text; `has_doc` tells the difference. */
const withText = <T extends { content: string | null }>(s: T) => ({ ...s, content: s.content ?? '' });

export function skillsRoutes(deps: AdminDeps): Route[] {
  const { bus } = deps;
  /** null: the global scope. */
  const agentOf = (req: HttpRequest): string | null => (req.params.agent === undefined ? null : req.params.agent);
  const create = withBody(CreateSkillBodySchema, async ({ name, content }, req, principal: Principal) =>
    json(201, await bus.send(SKILL_COMMANDS.write, { principal, agent: agentOf(req), name, content, create: true })),
  );
  const update = withBody(ContentBodySchema, async ({ content }, req, principal: Principal) =>
    json(200, await bus.send(SKILL_COMMANDS.write, { principal, agent: agentOf(req), name: req.params.skill ?? '', content, create: false })),
  );
  const read = async (req: HttpRequest, principal: Principal) =>
    json(200, withText(await bus.send(SKILL_COMMANDS.read, { principal, agent: agentOf(req), name: req.params.skill ?? '' })));
  const remove = async (req: HttpRequest, principal: Principal) =>
    json(200, await bus.send(SKILL_COMMANDS.delete, { principal, agent: agentOf(req), name: req.params.skill ?? '' }));

  return [
    {
      method: 'GET',
      pattern: '/api/agents/:agent/skills',
      auth: adminAuth('skills.read'),
      ...withQuery(SkillScopeQuerySchema, async ({ scope }, req, principal: Principal) =>
        json(200, await bus.send(SKILL_COMMANDS.list, { principal, agent: agentOf(req), scope })),
      ),
    },
    { method: 'POST', pattern: '/api/agents/:agent/skills', maxBodyBytes: BODY_LIMIT, auth: adminAuth('skills.write'), summary: 'Create a skill of the agent', ...create },
    { method: 'GET', pattern: '/api/agents/:agent/skills/:skill', auth: adminAuth('skills.read'), summary: "A skill's document (the agent's, else the global one)", handler: read },
    { method: 'PUT', pattern: '/api/agents/:agent/skills/:skill', maxBodyBytes: BODY_LIMIT, auth: adminAuth('skills.write'), summary: "Write the agent's copy of a skill", ...update },
    { method: 'DELETE', pattern: '/api/agents/:agent/skills/:skill', auth: adminAuth('skills.write'), summary: "Delete the agent's copy of a skill", handler: remove },
    {
      method: 'GET',
      pattern: '/api/skills',
      auth: adminAuth('skills.global'),
      handler: async (_req, principal) => json(200, await bus.send(SKILL_COMMANDS.list, { principal, agent: null, scope: 'global' })),
    },
    { method: 'POST', pattern: '/api/skills', maxBodyBytes: BODY_LIMIT, auth: adminAuth('skills.global'), summary: 'Create a global skill', ...create },
    { method: 'GET', pattern: '/api/skills/:skill', auth: adminAuth('skills.global'), summary: "A global skill's document", handler: read },
    { method: 'PUT', pattern: '/api/skills/:skill', maxBodyBytes: BODY_LIMIT, auth: adminAuth('skills.global'), summary: 'Write a global skill', ...update },
    { method: 'DELETE', pattern: '/api/skills/:skill', auth: adminAuth('skills.global'), summary: 'Delete a global skill', handler: remove },
  ];
}
