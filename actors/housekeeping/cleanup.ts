import * as fs from 'node:fs';
import { join } from 'node:path';
import type { Bus } from '../../bus/index.js';
import { planCleanup, type ListedEntry } from '../../machines/index.js';
import { CLEANUP_EVENTS, HOUSEKEEPING_STREAM, describeError, type CleanupConfig } from '../../schemas/index.js';

/*
 * The daily file cleanup (SPEC.md CleanupConfig) of every workspace's output_to_user/ and
 * api_files/. The agent and the user can change these folders while a run goes on, so nothing is
 * followed and nothing is removed recursively: entries are listed with lstat, each removal checks
 * again that the entry is the one listed and that its folder still resolves where it did, files and
 * links are unlinked one by one and folders only rmdir'd when empty.
 */

/**
 * Workspace folders holding received media. None exists yet: no messenger edge saves media in this
 * version (uploads through the API go to api_files/), so `media_files_days` has nothing to clean.
 * A messenger edge that saves media adds its folder here.
 */
export const MEDIA_FOLDERS: readonly string[] = [];

/** Deeper trees are cleaned down to here; what lies below is left for a person to look at. */
const MAX_DEPTH = 32;
/** A run lists at most this many entries per folder, so a runaway tree cannot exhaust memory. */
const MAX_ENTRIES = 200_000;
const MAX_ERROR_SAMPLES = 5;

export interface CleanupFolder {
  agent: string;
  /** Absolute path of the folder to clean (never pruned itself). */
  dir: string;
  days: number;
}

/** The folders one workspace's cleanup config covers. */
export function cleanupFolders(agent: string, workspace: string, cfg: CleanupConfig): CleanupFolder[] {
  if (!cfg.enabled) return [];
  return [
    ...MEDIA_FOLDERS.map((f) => ({ agent, dir: join(workspace, f), days: cfg.media_files_days })),
    { agent, dir: join(workspace, 'output_to_user'), days: cfg.output_to_user_days },
    { agent, dir: join(workspace, 'api_files'), days: cfg.api_files_days },
  ];
}

export interface CleanupTotals {
  workspaces: number;
  files_removed: number;
  links_removed: number;
  dirs_removed: number;
  bytes_freed: number;
  skipped: number;
  error_count: number;
  errors: string[];
}

export const emptyTotals = (): CleanupTotals => ({ workspaces: 0, files_removed: 0, links_removed: 0, dirs_removed: 0, bytes_freed: 0, skipped: 0, error_count: 0, errors: [] });

interface Listed extends ListedEntry {
  dev: number;
  ino: number;
}

const kindOf = (st: fs.Stats): ListedEntry['kind'] => (st.isSymbolicLink() ? 'symlink' : st.isFile() ? 'file' : st.isDirectory() ? 'dir' : 'other');

function listTree(dir: string): Listed[] {
  const out: Listed[] = [];
  const walk = (abs: string, rel: string, depth: number) => {
    if (depth > MAX_DEPTH) return;
    let names: string[];
    try {
      names = fs.readdirSync(abs);
    } catch {
      return;
    }
    for (const name of names) {
      if (out.length >= MAX_ENTRIES) return;
      const path = rel ? `${rel}/${name}` : name;
      let st: fs.Stats;
      try {
        st = fs.lstatSync(join(abs, name));
      } catch {
        continue;
      }
      const kind = kindOf(st);
      out.push({ path, kind, mtimeMs: st.mtimeMs, size: st.size, dev: st.dev, ino: st.ino });
      if (kind === 'dir') walk(join(abs, name), path, depth + 1);
    }
  };
  walk(dir, '', 0);
  return out;
}

function realOrNull(p: string): string | null {
  try {
    return fs.realpathSync(p);
  } catch {
    return null;
  }
}

export interface CleanFolderOptions {
  /** Test seam: runs between the listing and the removals, where a racing writer would act. */
  afterListing?: () => void;
}

/** Cleans one folder, adding to `totals`. A folder that is missing, or is itself a link, is skipped. */
export function cleanFolder(folder: CleanupFolder, now: number, totals: CleanupTotals, opts: CleanFolderOptions = {}): void {
  const fail = (what: string, e: unknown) => {
    totals.error_count++;
    if (totals.errors.length < MAX_ERROR_SAMPLES) totals.errors.push(`${what}: ${describeError(e)}`);
  };
  let top: fs.Stats;
  try {
    top = fs.lstatSync(folder.dir);
  } catch {
    return;
  }
  if (!top.isDirectory()) return;
  const real = realOrNull(folder.dir);
  if (!real) return;
  const listing = listTree(folder.dir);
  const plan = planCleanup(listing, now, folder.days);
  if (plan.remove.length === 0 && plan.prune.length === 0) return;
  opts.afterListing?.();
  const cutoff = now - folder.days * 86_400_000;
  // The folder an entry sits in must still be the real folder listed, not a link put in its place.
  const parentHolds = (rel: string): boolean => {
    const i = rel.lastIndexOf('/');
    const parent = i < 0 ? '' : rel.slice(0, i);
    return realOrNull(parent ? join(folder.dir, parent) : folder.dir) === (parent ? join(real, parent) : real);
  };
  for (const e of plan.remove as Listed[]) {
    const abs = join(folder.dir, e.path);
    try {
      if (!parentHolds(e.path)) {
        totals.skipped++;
        continue;
      }
      const st = fs.lstatSync(abs);
      if (st.dev !== e.dev || st.ino !== e.ino || kindOf(st) !== e.kind || st.mtimeMs >= cutoff) {
        totals.skipped++;
        continue;
      }
      // unlink never follows the last component: a link goes, what it points at stays.
      fs.unlinkSync(abs);
      if (e.kind === 'symlink') totals.links_removed++;
      else {
        totals.files_removed++;
        totals.bytes_freed += st.size;
      }
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') totals.skipped++;
      else fail(`${folder.agent}: ${abs}`, err);
    }
  }
  for (const rel of plan.prune) {
    const abs = join(folder.dir, rel);
    try {
      // Not a link, and still where it was listed: rmdir on a real, empty folder only.
      if (realOrNull(abs) !== join(real, rel) || !fs.lstatSync(abs).isDirectory()) {
        totals.skipped++;
        continue;
      }
      fs.rmdirSync(abs);
      totals.dirs_removed++;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      // Something arrived in it since the listing, or someone else removed it: theirs to keep.
      if (code === 'ENOTEMPTY' || code === 'EEXIST' || code === 'ENOENT') totals.skipped++;
      else fail(`${folder.agent}: ${abs}`, err);
    }
  }
}

export interface CleanupDeps {
  bus: Bus;
  /** Every agent whose workspace is cleaned, main first. */
  agents: () => string[];
  workspaceOf: (agent: string) => string;
  /** The agent's effective cleanup config (a sub-agent may override main's). */
  configOf: (agent: string) => CleanupConfig;
  /** Test seam, see CleanFolderOptions. */
  afterListing?: () => void;
}

/** One run over every workspace, recorded as one `cleanup.ran` fact. */
export async function runCleanup(deps: CleanupDeps, now: number, correlation?: string): Promise<CleanupTotals> {
  const totals = emptyTotals();
  for (const agent of deps.agents()) {
    let folders: CleanupFolder[];
    try {
      folders = cleanupFolders(agent, deps.workspaceOf(agent), deps.configOf(agent));
    } catch (e) {
      totals.error_count++;
      if (totals.errors.length < MAX_ERROR_SAMPLES) totals.errors.push(`${agent}: ${describeError(e)}`);
      continue;
    }
    if (folders.length === 0) continue;
    totals.workspaces++;
    for (const f of folders) cleanFolder(f, now, totals, deps.afterListing ? { afterListing: deps.afterListing } : {});
  }
  await deps.bus.publish({ stream: HOUSEKEEPING_STREAM, type: CLEANUP_EVENTS.ran, data: totals, ...(correlation ? { correlation } : {}) });
  return totals;
}
