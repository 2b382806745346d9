import * as fsp from 'node:fs/promises';
import { Subscription } from 'rxjs';
import { causedBy, type Bus } from '../../bus/index.js';
import { memoryFactCount, unrestricted } from '../../machines/index.js';
import { RAG_COMMANDS, RAG_EVENTS, RAG_STREAM, SvcError, type AgentConfig } from '../../schemas/index.js';
import { readMemoryModules, setConfigBlockFields, type HomePaths } from '../../store/index.js';
import { serialRunner } from '../host/serial.js';

/*
 * RAG status and settings (SPEC.md "RAG status", `PUT /api/rag/config`). svc has no indexer yet:
 * the status describes the settings, the index file if one exists, and the home's memory. A
 * settings change is written to config.json and takes effect after a restart.
 */

export interface RagAdminDeps {
  bus: Bus;
  paths: HomePaths;
  config: () => AgentConfig;
}

export function startRagAdmin(deps: RagAdminDeps): Subscription {
  const { bus, paths } = deps;
  const serial = serialRunner();

  const subs = new Subscription();
  subs.add(
    bus.handle(RAG_COMMANDS.status, 'rag-admin', async () => {
      const rag = deps.config().rag;
      const st = await fsp.stat(paths.ragIndex).catch(() => null);
      const facts = readMemoryModules(paths.workspace).reduce((n, m) => n + memoryFactCount(m.text), 0);
      return {
        ...rag,
        vector_db_path: paths.ragIndex,
        vector_db_exists: st?.isFile() ?? false,
        vector_db_size_bytes: st?.isFile() ? st.size : 0,
        // No indexer writes the index yet, so there is no chunk to count.
        chunk_count: 0,
        memory_fact_count: facts,
      };
    }),
  );
  subs.add(
    bus.handle(RAG_COMMANDS.configure, 'rag-admin', (cmd) =>
      serial(async () => {
        // The RAG settings are every agent's: an admin restricted to some agents may not change them.
        if (!unrestricted(cmd.data.principal)) {
          throw new SvcError('agent-not-allowed', `user "${cmd.data.principal.id ?? '(token)'}" is restricted to some agents (allowed_agents), so may not change the global RAG settings`);
        }
        const fields = Object.fromEntries(Object.entries(cmd.data.fields).filter(([, value]) => value !== undefined)) as Record<string, boolean | number>;
        if (Object.keys(fields).length === 0) {
          throw new SvcError('invalid-body', 'nothing to change: send any of enabled, reranker_enabled, index_workspace, index_memory, top_k_retrieval, top_k_final');
        }
        // Checked against the file (what the next start loads), not the running config.
        const next = setConfigBlockFields(paths, 'rag', fields, ({ rag }) => {
          if (rag.top_k_final > rag.top_k_retrieval) {
            throw new SvcError('invalid-body', `top_k_final (${rag.top_k_final}) may not exceed top_k_retrieval (${rag.top_k_retrieval})`);
          }
        });
        await bus.publish({ stream: RAG_STREAM, type: RAG_EVENTS.config_changed, data: { fields }, ...causedBy(cmd) });
        return { status: 'ok' as const, rag: next.rag, restart_required: true as const };
      }),
    ),
  );
  return subs;
}
