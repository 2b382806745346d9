import { SkillSync, bundledSkillsDir, startMemoryAdmin, startRagAdmin, startSkillsAdmin, startUserFilesAdmin } from '../../actors/index.js';
import { AGENT_EVENTS, describeError } from '../../schemas/index.js';
import { homeDefaultsDir } from '../../store/index.js';
import { part } from '../subsystems.js';
import { AGENTS, BUS, CONFIG, HOST_ENV, PATHS, REGISTRY } from './keys.js';

/* What agents know and can do: memory, RAG, skills and user files as the admin API edits them, and the skill sync. */

export const contentAdmin = part({
  // The admin API's memory, RAG, skills and files: they act on the home's files, each for a principal.
  name: 'content-admin',
  needs: { bus: BUS, paths: PATHS, registry: REGISTRY, config: CONFIG },
  start(deps) {
    const subs = [startMemoryAdmin(deps), startRagAdmin(deps), startSkillsAdmin(deps), startUserFilesAdmin(deps)];
    return () => subs.forEach((s) => s.unsubscribe());
  },
});

export const skillSync = part({
  // After the agents, whose start seeds the workspaces that hold the per-agent skill roots. It
  // always runs (SPEC.md: a sync at start-up, then a watcher); a failure is logged, never fatal:
  // skills are a convenience, the agents work without them.
  name: 'skill-sync',
  needs: { bus: BUS, paths: PATHS, registry: REGISTRY, config: CONFIG, host: HOST_ENV, agents: AGENTS },
  async start({ bus, paths, registry, config, host }) {
    const sync = new SkillSync({ bus, paths, registry, config, env: host.env, userHome: host.userHome, bundledDir: bundledSkillsDir(homeDefaultsDir()) });
    await sync.start().catch((e: unknown) => bus.emitLog('warn', `skill sync at start-up failed: ${describeError(e)}`));
    // A sub-agent added later gets its workspace when it starts: its roots join then.
    const sub = bus.subscribe('skill-sync', () => sync.poke(), (e) => e.type === AGENT_EVENTS.started);
    return async () => {
      sub.unsubscribe();
      await sync.stop();
    };
  },
});
