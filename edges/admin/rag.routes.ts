import { RAG_COMMANDS, RagConfigUpdateSchema, type Principal } from '../../schemas/index.js';
import { json, withBody, type Route } from '../http/index.js';
import { adminAuth } from './admin-auth.js';
import type { AdminDeps } from './admin-deps.js';

/** SPEC.md "Admin REST: RAG": status (with WIRE.md's vector_db_* fields) and the admin's settings. */
export function ragRoutes(deps: AdminDeps): Route[] {
  const { bus } = deps;
  return [
    {
      method: 'GET',
      pattern: '/api/rag/status',
      summary: 'RAG settings, index and memory size',
      auth: adminAuth('rag.read'),
      handler: async (_req, principal) => json(200, await bus.send(RAG_COMMANDS.status, { principal })),
    },
    {
      method: 'PUT',
      pattern: '/api/rag/config',
      maxBodyBytes: 4 * 1024,
      auth: adminAuth('rag.write'),
      summary: 'Change RAG settings (restart required)',
      ...withBody(RagConfigUpdateSchema, async (fields, _req, principal: Principal) => json(200, await bus.send(RAG_COMMANDS.configure, { principal, fields }))),
    },
  ];
}
