import {
  AgentParamQuerySchema,
  MAIN_AGENT,
  MEMORY_COMMANDS,
  MemoryWriteBodySchema,
  SvcError,
  type Principal,
} from '../../schemas/index.js';
import { MAX_MEMORY_MODULE_BYTES, memoryVersion } from '../../store/index.js';
import { json, withBodyAndQuery, withQuery, type Route } from '../http/index.js';
import { adminAuth } from './admin-auth.js';
import type { AdminDeps } from './admin-deps.js';

/*
 * SPEC.md "Admin REST: memory", WIRE.md §2: an agent's `memory_system/` files (`?agent=`, main by
 * default). A module's filename is relative to `memory_system/` and may hold `/`, sent
 * percent-encoded in one segment; the router decodes it once and the store refuses anything that
 * could leave the folder. The main memory is MAINMEMORY.md. Reads give a `version`; a write naming
 * the `base_version` it loaded is refused 409 `memory-conflict` when the file changed since.
 */

const MAIN_MEMORY = 'MAINMEMORY.md';
/** A module at the size limit, every character JSON-escaped, plus the envelope. */
const BODY_LIMIT = 2 * MAX_MEMORY_MODULE_BYTES + 1024;

type AgentQuery = { agent?: string | undefined };
const agentOf = (query: AgentQuery) => query.agent ?? MAIN_AGENT;

export function memoryRoutes(deps: AdminDeps): Route[] {
  const { bus } = deps;
  const read = (query: AgentQuery, principal: Principal, filename: string) => bus.send(MEMORY_COMMANDS.read, { principal, agent: agentOf(query), filename });
  const write = (query: AgentQuery, principal: Principal, filename: string, body: { content: string; base_version?: string | undefined }) =>
    bus.send(MEMORY_COMMANDS.write, { principal, agent: agentOf(query), filename, content: body.content, ...(body.base_version !== undefined ? { base_version: body.base_version } : {}) });
  return [
    {
      method: 'GET',
      pattern: '/api/memory',
      auth: adminAuth('memory.read'),
      summary: 'The main memory (MAINMEMORY.md)',
      ...withQuery(AgentParamQuerySchema, async (query, _req, principal: Principal) => {
        try {
          return json(200, await read(query, principal, MAIN_MEMORY));
        } catch (e) {
          // A workspace without MAINMEMORY.md yet has an empty main memory, not a missing one.
          if (e instanceof SvcError && e.code === 'not-found') return json(200, { filename: MAIN_MEMORY, content: '', version: memoryVersion('') });
          throw e;
        }
      }),
    },
    {
      method: 'PUT',
      pattern: '/api/memory',
      maxBodyBytes: BODY_LIMIT,
      auth: adminAuth('memory.write'),
      summary: "Replace the main memory (MAINMEMORY.md)",
      ...withBodyAndQuery(MemoryWriteBodySchema, AgentParamQuerySchema, async (body, query, _req, principal: Principal) =>
        json(200, await write(query, principal, MAIN_MEMORY, body)),
      ),
    },
    {
      method: 'GET',
      pattern: '/api/memory/modules',
      auth: adminAuth('memory.read'),
      summary: 'The memory modules, with their lines and size',
      ...withQuery(AgentParamQuerySchema, async (query, _req, principal: Principal) => json(200, await bus.send(MEMORY_COMMANDS.list, { principal, agent: agentOf(query) }))),
    },
    {
      method: 'GET',
      pattern: '/api/memory/modules/:filename',
      auth: adminAuth('memory.read'),
      summary: 'One memory module (filename percent-encoded, may hold /)',
      ...withQuery(AgentParamQuerySchema, async (query, req, principal: Principal) => json(200, await read(query, principal, req.params.filename ?? ''))),
    },
    {
      method: 'PUT',
      pattern: '/api/memory/modules/:filename',
      maxBodyBytes: BODY_LIMIT,
      auth: adminAuth('memory.write'),
      summary: 'Write one memory module',
      ...withBodyAndQuery(MemoryWriteBodySchema, AgentParamQuerySchema, async (body, query, req, principal: Principal) =>
        json(200, await write(query, principal, req.params.filename ?? '', body)),
      ),
    },
  ];
}
