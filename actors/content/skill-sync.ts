import * as fsp from 'node:fs/promises';
import { join, relative, resolve, sep } from 'node:path';
import { watch, type FSWatcher } from 'chokidar';
import type { Bus } from '../../bus/index.js';
import {
  countSkillActions,
  planSkillShutdown,
  planSkillSync,
  type SkillDomain,
  type SkillRoot,
  type SkillSyncAction,
  type SkillSyncMode,
} from '../../machines/index.js';
import { MAIN_AGENT, SKILL_EVENTS, SKILL_SYNC_STREAM, describeError, type AgentConfig, type SubAgentConfig } from '../../schemas/index.js';
import { workspaceDir, type HomePaths } from '../../store/index.js';
import { PlanDrift, carryOut, scanRoot, type ScannedRoots, type SkillSyncSeams } from './skill-sync-disk.js';

export type { SkillSyncSeams } from './skill-sync-disk.js';

/*
 * `sync_skills` (SPEC.md "Skill storage and sync"): lists every root without following links,
 * plans with machines/skill-sync.logic.ts, and carries the plan out. Two kinds of domain:
 *
 * - global: `~/.svc/skills` (then the bundled skills, reaching the CLIs through it) and the CLIs' own skills
 *   directories under their homes, which every CLI run reads whatever the agent;
 * - one per agent: its `workspace/skills` and the project-level skills directories of the CLIs in
 *   that workspace (`.claude/skills`, `.codex/skills`, `.gemini/skills`), which a CLI reads only
 *   when it runs there. That keeps a per-agent skill visible to its agent alone, and lets it
 *   override a global one of the same name for that agent (a CLI prefers the project's skill).
 *
 * Safety: agents write their skills folders while a sync runs, so every change is made through
 * the root opened once and checked to be the folder the scan read, and through directories opened
 * below it without following a link (store/contained-dir.ts), never by a path checked earlier. A
 * removal re-checks that the entry is still what the plan saw (a link to the same target, or a
 * real directory with the marker); a copy reads each source file through a descriptor checked to
 * be the regular file listed, so a file or folder swapped for a link to a host path mid-copy never
 * lands in a copy a sandbox reads. Real directories the sync did not create are never written,
 * replaced or removed.
 */

export const SKILL_SYNC_DEBOUNCE_MS = 500;

export interface SkillSyncDeps {
  bus: Bus;
  paths: HomePaths;
  registry: () => SubAgentConfig[];
  /** docker.enabled switches to managed copies (links to host paths do not resolve in a container). */
  config: () => AgentConfig;
  /** For CODEX_HOME. */
  env: NodeJS.ProcessEnv;
  /** Where the CLIs keep their homes (`~/.claude`, `~/.codex`, `~/.gemini`). */
  userHome: string;
  /** Shipped skills (home-defaults/workspace/skills); null or missing: none. */
  bundledDir?: string | null;
  debounceMs?: number;
  /** Test seams: where an agent racing the sync would act. */
  seams?: SkillSyncSeams;
}

export interface SkillSyncReport {
  trigger: 'start' | 'watch' | 'stop';
  mode: SkillSyncMode;
  skills: number;
  linked: number;
  copied: number;
  removed: number;
  unchanged: number;
  conflicts: number;
  invalid: number;
  failed: number;
}

/** The CLIs' homes in the priority SPEC.md gives (claude, codex, gemini); codex honours CODEX_HOME. */
export function cliHomes(userHome: string, env: NodeJS.ProcessEnv): { id: 'claude' | 'codex' | 'gemini'; home: string; dot: string }[] {
  const codex = env.CODEX_HOME?.trim();
  return [
    { id: 'claude', home: join(userHome, '.claude'), dot: '.claude' },
    { id: 'codex', home: codex ? resolve(codex) : join(userHome, '.codex'), dot: '.codex' },
    { id: 'gemini', home: join(userHome, '.gemini'), dot: '.gemini' },
  ];
}

type RootSpec = Omit<SkillRoot, 'entries'>;

async function isDir(path: string): Promise<boolean> {
  return (await fsp.stat(path).catch(() => null))?.isDirectory() ?? false;
}

/** Every domain's roots as they stand now (sub-agents come and go with the registry). */
export async function skillSyncDomains(deps: Pick<SkillSyncDeps, 'paths' | 'registry' | 'env' | 'userHome' | 'bundledDir'>): Promise<{ id: string; roots: RootSpec[] }[]> {
  const homes = await Promise.all(cliHomes(deps.userHome, deps.env).map(async (h) => ({ ...h, installed: await isDir(h.home) })));
  const global: RootSpec[] = [{ id: 'global', dir: deps.paths.skillsDir }];
  if (deps.bundledDir && (await isDir(deps.bundledDir))) global.push({ id: 'bundled', dir: deps.bundledDir, readOnly: true, via: 'global' });
  for (const h of homes) global.push({ id: h.id, dir: join(h.home, 'skills'), external: true, writable: h.installed });
  const domains = [{ id: 'global', roots: global }];
  const agents = [MAIN_AGENT, ...deps.registry().map((e) => e.name).filter((n) => n !== MAIN_AGENT)];
  for (const agent of agents) {
    let ws: string;
    try {
      ws = workspaceDir(deps.paths, agent);
    } catch {
      continue;
    }
    domains.push({
      id: `agent:${agent}`,
      roots: [
        { id: `agent:${agent}`, dir: join(ws, 'skills') },
        ...homes.map((h) => ({ id: `agent:${agent}/${h.id}`, dir: join(ws, h.dot, 'skills'), external: true, writable: h.installed })),
      ],
    });
  }
  return domains;
}

export class SkillSync {
  private watcher: FSWatcher | null = null;
  private watched = new Set<string>();
  private chain: Promise<unknown> = Promise.resolve();
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  private reportedInvalid = new Set<string>();

  constructor(private readonly d: SkillSyncDeps) {}

  private mode(): SkillSyncMode {
    return this.d.config().docker.enabled ? 'copy' : 'link';
  }

  /** The start-up sync, then the watcher. */
  async start(): Promise<SkillSyncReport> {
    await fsp.mkdir(this.d.paths.skillsDir, { recursive: true, mode: 0o755 });
    const report = await this.sync('start');
    this.watcher = watch([], { ignoreInitial: true, followSymlinks: false, depth: 2, ignored: (p) => this.ignored(p) });
    this.watcher.on('all', () => this.schedule());
    this.watcher.on('error', (e) => this.d.bus.emitLog('warn', `skill watcher: ${describeError(e)}`));
    await this.watchRoots();
    return report;
  }

  /** Runs one sync after whatever sync is running; the watcher's path is `schedule`. */
  sync(trigger: 'start' | 'watch'): Promise<SkillSyncReport> {
    const run = this.chain.then(() => this.runSync(trigger));
    this.chain = run.catch(() => undefined);
    return run;
  }

  async stop(): Promise<SkillSyncReport | null> {
    if (this.stopped) return null;
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    const watcher = this.watcher;
    this.watcher = null;
    await watcher?.close();
    await this.chain;
    return this.shutdown().catch((e: unknown) => {
      this.d.bus.emitLog('warn', `skill sync shutdown clean-up failed: ${describeError(e)}`);
      return null;
    });
  }

  /** Entries under a root whose path has a hidden segment: ours in flight (temp names) or the user's system files. */
  private ignored(path: string): boolean {
    for (const root of this.watched) {
      if (path.startsWith(root + sep)) return relative(root, path).split(sep).some((s) => s.startsWith('.'));
    }
    return false;
  }

  /** Something outside the roots changed (an agent started, so its workspace exists): sync soon. */
  poke(): void {
    this.schedule();
  }

  private schedule(): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      if (this.stopped) return;
      this.sync('watch').catch((e: unknown) => this.d.bus.emitLog('warn', `skill sync failed: ${describeError(e)}`));
    }, this.d.debounceMs ?? SKILL_SYNC_DEBOUNCE_MS);
  }

  /** Roots that exist now are watched; one made later (by a sync) is added after that sync. */
  private async watchRoots(): Promise<void> {
    if (!this.watcher) return;
    const domains = await skillSyncDomains(this.d);
    const fresh: string[] = [];
    for (const r of domains.flatMap((dm) => dm.roots)) {
      if (!this.watched.has(r.dir) && (await isDir(r.dir))) {
        this.watched.add(r.dir);
        fresh.push(r.dir);
      }
    }
    if (fresh.length) this.watcher.add(fresh);
  }

  /** Every domain with its roots' entries, and the roots as the scan found them (for carryOut to find again). */
  private async domains(mode: SkillSyncMode): Promise<{ domains: SkillDomain[]; scanned: ScannedRoots }> {
    const specs = await skillSyncDomains(this.d);
    const scanned: ScannedRoots = new Map();
    const domains = await Promise.all(
      specs.map(async (dm) => ({
        id: dm.id,
        roots: await Promise.all(
          dm.roots.map(async (r) => {
            const { entries, id } = await scanRoot(r.dir, mode);
            scanned.set(r.dir, id);
            return { ...r, entries };
          }),
        ),
      })),
    );
    return { domains, scanned };
  }

  private async execute(actions: readonly SkillSyncAction[], scanned: ScannedRoots): Promise<{ done: SkillSyncAction[]; failed: number }> {
    const done: SkillSyncAction[] = [];
    let failed = 0;
    for (const a of actions) {
      try {
        await carryOut(a, scanned, this.d.seams);
        done.push(a);
      } catch (e) {
        failed++;
        this.d.bus.emitLog('warn', `skill sync: ${a.type} ${join(a.dir, a.name)} skipped: ${e instanceof PlanDrift ? e.message : describeError(e)}`);
      }
    }
    return { done, failed };
  }

  private async runSync(trigger: 'start' | 'watch'): Promise<SkillSyncReport> {
    const mode = this.mode();
    const { domains, scanned } = await this.domains(mode);
    const report: SkillSyncReport = { trigger, mode, skills: 0, linked: 0, copied: 0, removed: 0, unchanged: 0, conflicts: 0, invalid: 0, failed: 0 };
    const invalid = new Set<string>();
    for (const domain of domains) {
      const plan = planSkillSync(domain, mode);
      const { done, failed } = await this.execute(plan.actions, scanned);
      const counts = countSkillActions(done);
      report.skills += plan.skills;
      report.unchanged += plan.unchanged;
      report.conflicts += plan.conflicts;
      report.linked += counts.linked;
      report.copied += counts.copied;
      report.removed += counts.removed;
      report.failed += failed;
      for (const i of plan.invalid) invalid.add(i);
    }
    report.invalid = invalid.size;
    const newlyInvalid = [...invalid].filter((i) => !this.reportedInvalid.has(i));
    const invalidChanged = newlyInvalid.length > 0 || invalid.size !== this.reportedInvalid.size;
    this.reportedInvalid = invalid;
    if (newlyInvalid.length) this.d.bus.emitLog('warn', `not skills (left as they are, not linked or copied): ${newlyInvalid.slice(0, 20).join('; ')}${newlyInvalid.length > 20 ? ` and ${newlyInvalid.length - 20} more` : ''}`);
    const changed = report.linked + report.copied + report.removed + report.failed > 0 || invalidChanged;
    // A watcher sync that changed nothing is the echo of one that did: not worth a fact.
    if (trigger === 'start' || changed) await this.publish(report);
    await this.watchRoots();
    return report;
  }

  private async shutdown(): Promise<SkillSyncReport> {
    const mode = this.mode();
    const { domains, scanned } = await this.domains(mode);
    const actions = domains.flatMap((dm) => planSkillShutdown(dm));
    const { done, failed } = await this.execute(actions, scanned);
    const report: SkillSyncReport = { trigger: 'stop', mode, skills: 0, linked: 0, copied: 0, removed: done.length, unchanged: 0, conflicts: 0, invalid: 0, failed };
    await this.publish(report);
    return report;
  }

  private async publish(report: SkillSyncReport): Promise<void> {
    await this.d.bus.publish({ stream: SKILL_SYNC_STREAM, type: SKILL_EVENTS.synced, data: { ...report } });
  }
}

/** The bundled skills folder shipped with svc (home-defaults/workspace/skills). */
export function bundledSkillsDir(homeDefaults: string): string {
  return join(homeDefaults, 'workspace', 'skills');
}
