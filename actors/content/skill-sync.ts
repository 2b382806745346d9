import { createHash, randomBytes } from 'node:crypto';
import * as fsp from 'node:fs/promises';
import type { Stats } from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';
import { watch, type FSWatcher } from 'chokidar';
import type { Bus } from '../../bus/index.js';
import {
  SKILL_MANAGED_MARKER,
  countSkillActions,
  planSkillShutdown,
  planSkillSync,
  type SkillDomain,
  type SkillRoot,
  type SkillRootEntry,
  type SkillSyncAction,
  type SkillSyncMode,
} from '../../machines/index.js';
import { MAIN_AGENT, SKILL_EVENTS, SKILL_SYNC_STREAM, describeError, type AgentConfig, type SubAgentConfig } from '../../schemas/index.js';
import { SKILL_NAME_PATTERN, checkSkillFrontMatter, workspaceDir, type HomePaths } from '../../store/index.js';

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
 * Safety: every removal re-checks by lstat that the entry is still what the plan saw (a link to
 * the same target, or a real directory with the marker), and a copy is renamed aside before it is
 * deleted so a directory swapped for a link in between is never descended into. Real directories
 * the sync did not create are never written, replaced or removed.
 */

export const SKILL_SYNC_DEBOUNCE_MS = 500;
const MAX_SKILL_FILES = 2000;
const MAX_SKILL_DEPTH = 8;
const MAX_SKILL_MD_BYTES = 512 * 1024;

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

/** Files of a skill's tree (regular files only, bounded), by path relative to `dir`. */
async function skillFiles(dir: string): Promise<{ rel: string; st: Stats }[]> {
  const out: { rel: string; st: Stats }[] = [];
  const walk = async (sub: string, depth: number) => {
    if (depth > MAX_SKILL_DEPTH) return;
    const names = (await fsp.readdir(join(dir, sub)).catch(() => [] as string[])).sort();
    for (const n of names) {
      if (out.length >= MAX_SKILL_FILES) return;
      if (depth === 0 && n === SKILL_MANAGED_MARKER) continue;
      const rel = sub ? `${sub}/${n}` : n;
      const st = await fsp.lstat(join(dir, rel)).catch(() => null);
      if (!st) continue;
      if (st.isDirectory()) await walk(rel, depth + 1);
      else if (st.isFile()) out.push({ rel, st });
    }
  };
  await walk('', 0);
  return out;
}

/** Identifies a skill's content without reading it: names, sizes and mtimes of its files. */
async function skillStamp(dir: string): Promise<string> {
  const h = createHash('sha256');
  for (const f of await skillFiles(dir)) h.update(`${f.rel}\0${f.st.size}\0${f.st.mtimeMs}\n`);
  return h.digest('hex').slice(0, 32);
}

/** Why `dir` (a real directory, or where a link leads) is not a skill; null when it is one. */
async function notASkill(dir: string): Promise<string | null> {
  const doc = join(dir, 'SKILL.md');
  const st = await fsp.stat(doc).catch(() => null);
  if (!st) return 'no SKILL.md';
  if (!st.isFile()) return 'SKILL.md is not a file';
  if (st.size > MAX_SKILL_MD_BYTES) return 'SKILL.md is too large';
  const text = await fsp.readFile(doc, 'utf8').catch(() => null);
  if (text === null) return 'SKILL.md cannot be read';
  const checked = checkSkillFrontMatter(text);
  return 'error' in checked ? checked.error : null;
}

async function readMarker(dir: string): Promise<{ source: string; stamp: string } | null> {
  const path = join(dir, SKILL_MANAGED_MARKER);
  const st = await fsp.lstat(path).catch(() => null);
  if (!st?.isFile()) return null;
  try {
    const data = JSON.parse(await fsp.readFile(path, 'utf8')) as { source?: unknown; stamp?: unknown };
    return { source: typeof data.source === 'string' ? data.source : '', stamp: typeof data.stamp === 'string' ? data.stamp : '' };
  } catch {
    // Ours by the marker, but unreadable: planned as stale and replaced.
    return { source: '', stamp: '' };
  }
}

/** One root's entries by lstat; hidden, system and oddly named entries are skipped. */
export async function scanSkillRoot(dir: string, mode: SkillSyncMode): Promise<SkillRootEntry[]> {
  const names = await fsp.readdir(dir).catch(() => [] as string[]);
  const out: SkillRootEntry[] = [];
  for (const name of names.sort()) {
    if (name.startsWith('.') || !SKILL_NAME_PATTERN.test(name)) continue;
    const path = join(dir, name);
    const st = await fsp.lstat(path).catch(() => null);
    if (!st) continue;
    if (st.isSymbolicLink()) {
      const text = await fsp.readlink(path).catch(() => null);
      if (text === null) continue;
      const target = resolve(dir, text);
      const real = await fsp.stat(path).catch(() => null);
      const validSkill = real?.isDirectory() === true && (await notASkill(path)) === null;
      out.push({ name, state: 'link', target, broken: real === null, validSkill, ...(validSkill && mode === 'copy' ? { stamp: await skillStamp(path) } : {}) });
    } else if (st.isDirectory()) {
      const marker = await readMarker(path);
      if (marker) {
        out.push({ name, state: 'copy', ...marker });
        continue;
      }
      const why = await notASkill(path);
      out.push(why === null ? { name, state: 'skill', ...(mode === 'copy' ? { stamp: await skillStamp(path) } : {}) } : { name, state: 'invalid', reason: why });
    } else {
      out.push({ name, state: 'invalid', reason: 'not a directory' });
    }
  }
  return out;
}

class PlanDrift extends Error {}

/** A managed copy of `source` into `dir/name`: built under a hidden name, marked, then renamed in. */
async function copySkill(action: Extract<SkillSyncAction, { type: 'copy' }>): Promise<void> {
  await fsp.mkdir(action.dir, { recursive: true, mode: 0o755 });
  const tmp = join(action.dir, `.${action.name}.svc-${randomBytes(6).toString('hex')}`);
  try {
    await fsp.mkdir(tmp, { mode: 0o755 });
    // Links inside a skill would lead to host paths a sandbox cannot see: regular files only.
    for (const f of await skillFiles(action.source)) {
      const dest = join(tmp, f.rel);
      await fsp.mkdir(join(dest, '..'), { recursive: true, mode: 0o755 });
      await fsp.copyFile(join(action.source, f.rel), dest);
      await fsp.chmod(dest, f.st.mode & 0o755);
    }
    await fsp.writeFile(join(tmp, SKILL_MANAGED_MARKER), `${JSON.stringify({ source: action.source, stamp: action.stamp, by: 'svc' })}\n`, { mode: 0o644 });
    // rename never replaces a non-empty directory, and a link or file in the way makes it fail: nothing of the user's is overwritten.
    if (await fsp.lstat(join(action.dir, action.name)).catch(() => null)) throw new PlanDrift(`${action.name} appeared meanwhile`);
    await fsp.rename(tmp, join(action.dir, action.name));
  } catch (e) {
    await fsp.rm(tmp, { recursive: true, force: true });
    throw e;
  }
}

async function removeManaged(action: Extract<SkillSyncAction, { type: 'remove' }>): Promise<void> {
  const path = join(action.dir, action.name);
  const st = await fsp.lstat(path).catch(() => null);
  if (!st) return;
  if ('link' in action.expect) {
    if (!st.isSymbolicLink()) throw new PlanDrift(`${path} is no longer a link`);
    const target = resolve(action.dir, await fsp.readlink(path));
    if (target !== action.expect.link) throw new PlanDrift(`${path} now points elsewhere`);
    await fsp.unlink(path);
    return;
  }
  if (!st.isDirectory() || !(await readMarker(path))) throw new PlanDrift(`${path} is no longer a managed copy`);
  // Renamed aside first: what is then checked and deleted cannot be swapped for a link under our feet.
  const aside = join(action.dir, `.${action.name}.svc-old-${randomBytes(6).toString('hex')}`);
  await fsp.rename(path, aside);
  const moved = await fsp.lstat(aside);
  if (!moved.isDirectory() || !(await readMarker(aside))) {
    await fsp.rename(aside, path).catch(() => undefined);
    throw new PlanDrift(`${path} changed while it was removed`);
  }
  // fs.rm removes links inside a tree, never what they point at.
  await fsp.rm(aside, { recursive: true, force: true });
}

async function carryOut(action: SkillSyncAction): Promise<void> {
  if (action.type === 'remove') return removeManaged(action);
  if (action.type === 'copy') return copySkill(action);
  await fsp.mkdir(action.dir, { recursive: true, mode: 0o755 });
  await fsp.symlink(action.target, join(action.dir, action.name), 'dir');
}

/**
 * Runs syncs one at a time: the start-up one, then one per burst of changes the watcher sees
 * (debounced), and the shutdown clean-up. A sync's own writes are seen by the watcher too; they
 * cause one more sync that finds nothing to do, and nothing more.
 */
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

  private async domains(mode: SkillSyncMode): Promise<SkillDomain[]> {
    const specs = await skillSyncDomains(this.d);
    return Promise.all(specs.map(async (dm) => ({ id: dm.id, roots: await Promise.all(dm.roots.map(async (r) => ({ ...r, entries: await scanSkillRoot(r.dir, mode) }))) })));
  }

  private async execute(actions: readonly SkillSyncAction[]): Promise<{ done: SkillSyncAction[]; failed: number }> {
    const done: SkillSyncAction[] = [];
    let failed = 0;
    for (const a of actions) {
      try {
        await carryOut(a);
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
    const domains = await this.domains(mode);
    const report: SkillSyncReport = { trigger, mode, skills: 0, linked: 0, copied: 0, removed: 0, unchanged: 0, conflicts: 0, invalid: 0, failed: 0 };
    const invalid = new Set<string>();
    for (const domain of domains) {
      const plan = planSkillSync(domain, mode);
      const { done, failed } = await this.execute(plan.actions);
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
    const domains = await this.domains(mode);
    const actions = domains.flatMap((dm) => planSkillShutdown(dm));
    const { done, failed } = await this.execute(actions);
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
