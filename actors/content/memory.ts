import { Subscription } from 'rxjs';
import { causedBy, type Bus } from '../../bus/index.js';
import { MEMORY_COMMANDS, MEMORY_EVENTS, SvcError, memoryStream, type SubAgentConfig } from '../../schemas/index.js';
import { listMemoryModules, memoryVersion, readMemoryModule, serviceSecretRealPaths, workspaceDir, writeMemoryModule, type HomePaths } from '../../store/index.js';
import { serialRunner } from '../host/serial.js';
import { targetAgent } from './agent-target.js';

/*
 * The admin API's memory (SPEC.md "Admin REST: memory"): an agent's `memory_system/` files, the
 * same ones the runtime injects (machines/memory.logic.ts). Reads and writes go through the store's
 * containment checks; each write is recorded as a fact.
 */

export interface MemoryAdminDeps {
  bus: Bus;
  paths: HomePaths;
  registry: () => SubAgentConfig[];
}

/** A module's text now; one not there yet reads as empty, as the main memory does. */
function currentText(workspace: string, filename: string, refused: readonly string[]): string {
  try {
    return readMemoryModule(workspace, filename, refused).text;
  } catch (e) {
    if (e instanceof SvcError && e.code === 'not-found') return '';
    throw e;
  }
}

export function startMemoryAdmin(deps: MemoryAdminDeps): Subscription {
  const { bus, paths } = deps;
  const serial = serialRunner();
  const workspaceOf = (principal: Parameters<typeof targetAgent>[0], agent: string) => workspaceDir(paths, targetAgent(principal, agent, deps.registry()));

  const subs = new Subscription();
  subs.add(bus.handle(MEMORY_COMMANDS.list, 'memory-admin', (cmd) => listMemoryModules(workspaceOf(cmd.data.principal, cmd.data.agent))));
  subs.add(
    bus.handle(MEMORY_COMMANDS.read, 'memory-admin', async (cmd) => {
      const workspace = workspaceOf(cmd.data.principal, cmd.data.agent);
      const m = readMemoryModule(workspace, cmd.data.filename, await serviceSecretRealPaths(paths));
      return { filename: m.filename, content: m.text, version: memoryVersion(m.text) };
    }),
  );
  subs.add(
    bus.handle(MEMORY_COMMANDS.write, 'memory-admin', (cmd) =>
      serial(async () => {
        const { principal, agent, filename, content, base_version } = cmd.data;
        const workspace = workspaceOf(principal, agent);
        // Serial with every other write here, so nothing lands between this check and the write.
        if (base_version !== undefined) {
          const now = memoryVersion(currentText(workspace, filename, await serviceSecretRealPaths(paths)));
          if (now !== base_version) throw new SvcError('memory-conflict', `memory module ${filename} changed since it was loaded: reload it, or save again to overwrite`, { filename });
        }
        const written = await writeMemoryModule(workspace, filename, content, await serviceSecretRealPaths(paths));
        await bus.publish({
          stream: memoryStream(agent),
          type: MEMORY_EVENTS.module_written,
          data: { agent, filename: written.filename, bytes: Buffer.byteLength(content, 'utf8'), created: written.created },
          ...causedBy(cmd),
        });
        return { ...written, version: memoryVersion(content) };
      }),
    ),
  );
  return subs;
}
