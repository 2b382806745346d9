/*
 * Skill sync planning (SPEC.md "Skill storage and sync"), pure: given what every root of a sync
 * domain holds, the actions that link or copy each skill's canonical source into the other roots. The
 * actor lists the roots (lstat, never following a link) and carries the actions out, checking
 * before each removal that the entry is still the one planned on.
 *
 * A domain is a list of roots in priority order: the svc root first, then the claude, codex and
 * gemini skills directories. Only an origin (a real skill directory, or a user's own link to one)
 * can be a canonical source; what the sync made itself (managed links and managed copies) never is,
 * which is what keeps a sync from feeding on its own output.
 */

export const SKILL_MANAGED_MARKER = '.svc_managed';

export type SkillSyncMode = 'link' | 'copy';

/** One entry of a root as the actor found it (by lstat). */
export type SkillRootEntry =
  /** A real directory with a valid SKILL.md; `stamp` identifies its content (copy mode only). */
  | { name: string; state: 'skill'; stamp?: string }
  /** A real directory (or a file) that is not a valid skill: reported, never touched. */
  | { name: string; state: 'invalid'; reason: string }
  /** A symlink; `target` absolute. Managed when it is exactly `<a domain root>/<name>`. */
  | { name: string; state: 'link'; target: string; broken: boolean; validSkill: boolean; stamp?: string }
  /** A directory carrying the managed marker: the sync's own copy of `source`. */
  | { name: string; state: 'copy'; source: string; stamp: string };

export interface SkillRoot {
  /** Names the root in summaries: `global`, `bundled`, `claude`, `agent:main`, `agent:main/claude`. */
  id: string;
  dir: string;
  entries: readonly SkillRootEntry[];
  /** Shipped with svc (bundled skills): a source, never written. */
  readOnly?: boolean;
  /** Links to this root's skills go through that root (by id) when it can hold them: bundled → global. */
  via?: string;
  /** A CLI's skills directory: at shutdown its managed links into svc's roots are removed. */
  external?: boolean;
  /** false: the CLI is not installed here, so nothing is linked or copied into this root. */
  writable?: boolean;
}

export interface SkillDomain {
  id: string;
  /** In priority order. */
  roots: readonly SkillRoot[];
}

export type SkillSyncAction =
  | { type: 'link'; dir: string; name: string; target: string }
  | { type: 'copy'; dir: string; name: string; source: string; stamp: string }
  /** Removes only what `expect` describes: a link to that target, or a managed copy. */
  | { type: 'remove'; dir: string; name: string; expect: { link: string } | { copy: true }; reason: 'broken' | 'orphaned' | 'stale' | 'shutdown' };

export interface SkillSyncPlan {
  actions: SkillSyncAction[];
  skills: number;
  unchanged: number;
  conflicts: number;
  /** `<root id>/<name>: <reason>`, sorted. */
  invalid: string[];
}

const joinPath = (dir: string, name: string) => (dir.endsWith('/') ? dir + name : `${dir}/${name}`);

/** `dir` is below one of `roots` (both absolute, normalised). */
const inside = (path: string, dirs: readonly string[]) => dirs.some((d) => path.startsWith(d.endsWith('/') ? d : `${d}/`));

function isManagedLink(e: SkillRootEntry, domain: SkillDomain): boolean {
  return e.state === 'link' && domain.roots.some((r) => e.target === joinPath(r.dir, e.name));
}

/** What the sync made itself: it may replace or remove these, and nothing else. */
function isManaged(e: SkillRootEntry, domain: SkillDomain): boolean {
  return e.state === 'copy' || isManagedLink(e, domain);
}

function isOrigin(e: SkillRootEntry, domain: SkillDomain): boolean {
  if (e.state === 'skill') return true;
  return e.state === 'link' && !isManagedLink(e, domain) && !e.broken && e.validSkill;
}

function stampOf(e: SkillRootEntry): string {
  return e.state === 'skill' || e.state === 'link' ? (e.stamp ?? '') : e.state === 'copy' ? e.stamp : '';
}

function removal(dir: string, e: SkillRootEntry, reason: Extract<SkillSyncAction, { type: 'remove' }>['reason']): SkillSyncAction {
  return { type: 'remove', dir, name: e.name, expect: e.state === 'link' ? { link: e.target } : { copy: true }, reason };
}

/** The actions that bring every root of `domain` in line with its canonical sources. */
export function planSkillSync(domain: SkillDomain, mode: SkillSyncMode): SkillSyncPlan {
  const plan: SkillSyncPlan = { actions: [], skills: 0, unchanged: 0, conflicts: 0, invalid: [] };
  const byRoot = domain.roots.map((r) => new Map(r.entries.map((e) => [e.name, e])));
  const names = [...new Set(domain.roots.flatMap((r) => r.entries.map((e) => e.name)))].sort();
  for (const root of domain.roots) {
    for (const e of root.entries) {
      if (e.state === 'invalid') plan.invalid.push(`${root.id}/${e.name}: ${e.reason}`);
      else if (e.state === 'link' && !isManagedLink(e, domain) && !isOrigin(e, domain)) plan.invalid.push(`${root.id}/${e.name}: a link to no valid skill`);
    }
  }
  plan.invalid.sort();

  for (const name of names) {
    const originAt = domain.roots.findIndex((_r, i) => {
      const e = byRoot[i]!.get(name);
      return e !== undefined && isOrigin(e, domain);
    });
    if (originAt < 0) {
      // Nothing left to link or copy: what the sync made for this name goes (step 5, and orphaned copies).
      domain.roots.forEach((r, i) => {
        const e = byRoot[i]!.get(name);
        if (!r.readOnly && e && isManaged(e, domain)) plan.actions.push(removal(r.dir, e, e.state === 'link' && e.broken ? 'broken' : 'orphaned'));
      });
      continue;
    }
    plan.skills++;
    const origin = domain.roots[originAt]!;
    const source = joinPath(origin.dir, name);
    const stamp = stampOf(byRoot[originAt]!.get(name)!);
    const viaAt = origin.via === undefined ? -1 : domain.roots.findIndex((r) => r.id === origin.via);
    const viaEntry = viaAt < 0 ? undefined : byRoot[viaAt]!.get(name);
    // The via root can hold the link when its entry is free or the sync's own.
    const viaUsable = viaAt >= 0 && domain.roots[viaAt]!.writable !== false && (viaEntry === undefined || isManaged(viaEntry, domain));
    // The via root first, so links through it never point at nothing for longer than the plan runs.
    const order = domain.roots.map((_r, i) => i).sort((a, b) => (a === viaAt ? -1 : b === viaAt ? 1 : a - b));
    for (const i of order) {
      const root = domain.roots[i]!;
      if (i === originAt || root.readOnly) continue;
      const e = byRoot[i]!.get(name);
      if (e && !isManaged(e, domain)) {
        // The user's own entry of the same name: theirs, kept as found.
        if (isOrigin(e, domain)) plan.conflicts++;
        continue;
      }
      if (root.writable === false) {
        if (e && e.state === 'link' && e.broken) plan.actions.push(removal(root.dir, e, 'broken'));
        continue;
      }
      if (mode === 'link') {
        const target = viaUsable && i !== viaAt ? joinPath(domain.roots[viaAt]!.dir, name) : source;
        if (e && e.state === 'link' && e.target === target) {
          plan.unchanged++;
          continue;
        }
        if (e) plan.actions.push(removal(root.dir, e, e.state === 'link' && e.broken ? 'broken' : 'stale'));
        plan.actions.push({ type: 'link', dir: root.dir, name, target });
      } else {
        if (e && e.state === 'copy' && e.source === source && e.stamp === stamp) {
          plan.unchanged++;
          continue;
        }
        if (e) plan.actions.push(removal(root.dir, e, e.state === 'link' && e.broken ? 'broken' : 'stale'));
        plan.actions.push({ type: 'copy', dir: root.dir, name, source, stamp });
      }
    }
  }
  return plan;
}

/**
 * Shutdown (SPEC.md): managed links under the CLIs' skills directories that point into svc's own
 * roots are removed; everything else stays (copies included: a sandbox may still read them).
 */
export function planSkillShutdown(domain: SkillDomain): SkillSyncAction[] {
  const svcDirs = domain.roots.filter((r) => !r.external).map((r) => r.dir);
  const actions: SkillSyncAction[] = [];
  for (const root of domain.roots) {
    if (!root.external) continue;
    for (const e of root.entries) {
      if (e.state === 'link' && isManagedLink(e, domain) && inside(e.target, svcDirs)) actions.push(removal(root.dir, e, 'shutdown'));
    }
  }
  return actions;
}

export interface SkillSyncCounts {
  linked: number;
  copied: number;
  removed: number;
}

/** What a carried-out plan did, by the actions that succeeded. */
export function countSkillActions(done: readonly SkillSyncAction[]): SkillSyncCounts {
  return {
    linked: done.filter((a) => a.type === 'link').length,
    copied: done.filter((a) => a.type === 'copy').length,
    removed: done.filter((a) => a.type === 'remove').length,
  };
}
