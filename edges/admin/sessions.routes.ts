import { randomUUID } from 'node:crypto';
import { AGENT_COMMANDS } from '../../schemas/index.js';
import { json, type Route } from '../http/index.js';
import { adminAuth } from './admin-auth.js';
import type { AdminDeps } from './admin-deps.js';

/*
 * SPEC.md "Admin REST: tasks, sessions": the agents' live chat sessions. A session's id is
 * `<agent>:<session key>` (sent percent-encoded or as is: `:` is allowed in a path segment).
 * Which sessions a caller sees and may end is decided by the runtime (allowed_agents).
 */
export function sessionsRoutes(deps: AdminDeps): Route[] {
  const { bus } = deps;
  return [
    {
      method: 'GET',
      pattern: '/api/sessions',
      auth: adminAuth('sessions.read'),
      summary: "The agents' live chat sessions the caller may see",
      handler: async (_req, principal) => json(200, await bus.send(AGENT_COMMANDS.sessions, { principal })),
    },
    {
      method: 'DELETE',
      pattern: '/api/sessions/:id',
      auth: adminAuth('sessions.terminate'),
      summary: 'End a session: its running turn is killed and the next message starts afresh',
      handler: async (req, principal) => {
        const { killed } = await bus.send(AGENT_COMMANDS.endSession, { id: req.params.id ?? '', principal, request_id: `admin:${randomUUID()}` });
        return json(200, { ok: true, id: req.params.id, killed });
      },
    },
  ];
}
