import { latestDailyBoundary } from './time-zone.logic.js';

/*
 * Rules of the daemon's upkeep (SPEC.md CleanupConfig, MemoryConfig, HeartbeatConfig), pure: a
 * listing, a config and `now` in, a decision out. The actors in actors/housekeeping/ do the I/O.
 */

const DAY_MS = 86_400_000;
/** Longer than any civil day (DST days are 23 or 25 hours), shorter than two. */
const MORE_THAN_A_DAY_MS = 25 * 3_600_000 + 1;

/**
 * The first `hour`:00 in `timeZone` strictly after `now`: when a daily job runs next. A DST day
 * without that hour runs at the instant the clock jumps over it.
 */
export function nextDailyRun(now: number, hour: number, timeZone: string): number {
  const latest = latestDailyBoundary(now, hour, timeZone);
  return latestDailyBoundary(latest + MORE_THAN_A_DAY_MS, hour, timeZone);
}

// ------------------------------------------------------------------ cleanup

/** One entry of a cleanup folder as lstat saw it (links are never followed). */
export interface ListedEntry {
  /** Relative to the folder being cleaned, `/`-separated; never empty. */
  path: string;
  kind: 'file' | 'symlink' | 'dir' | 'other';
  mtimeMs: number;
  size: number;
}

export interface CleanupPlan {
  /** Files and links whose own mtime is past the limit, to unlink (a link goes, never its target). */
  remove: ListedEntry[];
  /** Subfolders left empty afterwards, deepest first, to rmdir. The folder itself is never pruned. */
  prune: string[];
}

const parentOf = (p: string): string => {
  const i = p.lastIndexOf('/');
  return i < 0 ? '' : p.slice(0, i);
};

/**
 * What a cleanup run removes from one folder. `maxAgeDays` 0 keeps everything (the folder is not
 * cleaned). A file or link goes when its own mtime is older than the limit. A subfolder goes when
 * nothing is left in it afterwards and it either lost entries in this run (an emptied dated upload
 * folder) or is itself older than the limit; a fresh empty folder stays, since an agent may have
 * made it to write into. Sockets, FIFOs and devices are left alone, and so is every folder holding one.
 */
export function planCleanup(entries: readonly ListedEntry[], now: number, maxAgeDays: number): CleanupPlan {
  if (!(maxAgeDays > 0)) return { remove: [], prune: [] };
  const cutoff = now - maxAgeDays * DAY_MS;
  const remove = entries.filter((e) => (e.kind === 'file' || e.kind === 'symlink') && e.mtimeMs < cutoff);
  const removed = new Set(remove.map((e) => e.path));
  const dirs = entries.filter((e) => e.kind === 'dir');
  const kept = new Map<string, number>(dirs.map((d) => [d.path, 0]));
  const lost = new Set<string>();
  const childDirs = new Map<string, string[]>();
  for (const d of dirs) {
    const parent = parentOf(d.path);
    childDirs.set(parent, [...(childDirs.get(parent) ?? []), d.path]);
  }
  for (const e of entries) {
    const parent = parentOf(e.path);
    if (parent === '') continue;
    if (removed.has(e.path)) lost.add(parent);
    else if (e.kind !== 'dir') kept.set(parent, (kept.get(parent) ?? 0) + 1);
  }
  // Deepest first, so a folder's pruned children count as gone before the folder is judged.
  const byDepth = [...dirs].sort((a, b) => b.path.split('/').length - a.path.split('/').length || (a.path < b.path ? -1 : 1));
  const prune: string[] = [];
  const pruned = new Set<string>();
  for (const d of byDepth) {
    const children = childDirs.get(d.path) ?? [];
    if ((kept.get(d.path) ?? 0) > 0 || children.some((c) => !pruned.has(c))) continue;
    const emptiedNow = lost.has(d.path) || children.length > 0;
    if (!emptiedNow && d.mtimeMs >= cutoff) continue;
    prune.push(d.path);
    pruned.add(d.path);
  }
  return { remove, prune };
}
