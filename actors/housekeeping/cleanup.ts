import * as fs from 'node:fs';
import { join } from 'node:path';
import type { Bus } from '../../bus/index.js';
import { planCleanup, type ListedEntry } from '../../machines/index.js';
import { CLEANUP_EVENTS, HOUSEKEEPING_STREAM, describeError, type CleanupConfig } from '../../schemas/index.js';
import { OpenedDir, OpenedDirChain, parentAndName, sameFile } from '../../store/index.js';

/*
 * The daily file cleanup (SPEC.md CleanupConfig) of every workspace's output_to_user/, api_files/
 * and the messengers' media folders. The agent and the user can change these folders while a run
 * goes on, so nothing is followed and nothing is removed recursively: every folder is opened
 * without following a link and read and changed through its descriptor (store/contained-dir.ts),
 * each removal checks again
 * that the entry and every folder above it are the ones listed, files and links are unlinked one
 * by one and folders only rmdir'd when empty. A folder swapped for a link after those checks
 * cannot redirect the unlink: it names the entry in the folder that was opened, not by path.
 */

/** Where the Telegram transport saves what people send the bot, in the agent's workspace. */
export const TELEGRAM_MEDIA_FOLDER = 'telegram_files';
/** Where the Matrix transport saves attachments people send it. */
export const MATRIX_MEDIA_FOLDER = 'matrix_files';
/** Workspace folders holding media received by a messenger, cleaned after `media_files_days`. */
export const MEDIA_FOLDERS: readonly string[] = [TELEGRAM_MEDIA_FOLDER, MATRIX_MEDIA_FOLDER];

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

/** Every entry below `root`, each folder read through its own descriptor (opened without following a link). */
function listTree(root: OpenedDir): Listed[] {
  const out: Listed[] = [];
  const walk = (dir: OpenedDir, rel: string, depth: number) => {
    if (depth > MAX_DEPTH) return;
    let names: string[];
    try {
      names = dir.names();
    } catch {
      return;
    }
    for (const name of names) {
      if (out.length >= MAX_ENTRIES) return;
      const path = rel ? `${rel}/${name}` : name;
      let st: fs.Stats | null;
      try {
        st = dir.lstat(name);
      } catch {
        continue;
      }
      if (!st) continue;
      const entry: Listed = { path, kind: kindOf(st), mtimeMs: st.mtimeMs, size: st.size, dev: st.dev, ino: st.ino };
      if (entry.kind !== 'dir') out.push(entry);
      else
        dir.withListedDir(name, st, (sub) => {
          out.push(entry);
          walk(sub, path, depth + 1);
        });
    }
  };
  walk(root, '', 0);
  return out;
}

export interface CleanFolderOptions {
  /** Test seam: runs between the listing and the removals, where a racing writer would act. */
  afterListing?: () => void;
  /** Test seam: runs after an entry's checks, right before it is unlinked or rmdir'd (`rel` to the folder). */
  beforeRemove?: (rel: string) => void;
}

/** Cleans one folder, adding to `totals`. A folder that is missing, or is itself a link, is skipped. */
export function cleanFolder(folder: CleanupFolder, now: number, totals: CleanupTotals, opts: CleanFolderOptions = {}): void {
  const fail = (what: string, e: unknown) => {
    totals.error_count++;
    if (totals.errors.length < MAX_ERROR_SAMPLES) totals.errors.push(`${what}: ${describeError(e)}`);
  };
  let root: OpenedDir;
  try {
    // O_NOFOLLOW: a cleaned folder that is itself a link (or not a folder) is not cleaned.
    root = OpenedDir.open(folder.dir);
  } catch {
    return;
  }
  try {
    const listing = listTree(root);
    const plan = planCleanup(listing, now, folder.days);
    if (plan.remove.length === 0 && plan.prune.length === 0) return;
    const listed = new Map(listing.map((e) => [e.path, e]));
    // The folder holding an entry is reached from the cleaned folder without a link and must be the one listed.
    const folders = new OpenedDirChain(root, (rel) => (listed.get(rel)?.kind === 'dir' ? listed.get(rel) : undefined));
    opts.afterListing?.();
    const cutoff = now - folder.days * 86_400_000;
    try {
      for (const e of plan.remove as Listed[]) {
        const abs = join(folder.dir, e.path);
        try {
          const [parentRel, name] = parentAndName(e.path);
          const parent = folders.open(parentRel);
          const st = parent?.lstat(name);
          if (!parent || !st || !sameFile(st, e) || kindOf(st) !== e.kind || st.mtimeMs >= cutoff) {
            totals.skipped++;
            continue;
          }
          opts.beforeRemove?.(e.path);
          // Through the folder's descriptor: a folder swapped for a link since cannot redirect it, and unlink never follows the entry.
          if (!parent.unlink(name, e)) {
            totals.skipped++;
            continue;
          }
          if (e.kind === 'symlink') totals.links_removed++;
          else {
            totals.files_removed++;
            totals.bytes_freed += st.size;
          }
        } catch (err) {
          fail(`${folder.agent}: ${abs}`, err);
        }
      }
      for (const rel of plan.prune) {
        const abs = join(folder.dir, rel);
        try {
          const [parentRel, name] = parentAndName(rel);
          const parent = folders.open(parentRel);
          const st = parent?.lstat(name);
          const want = listed.get(rel)!;
          if (!parent || !st?.isDirectory() || !sameFile(st, want)) {
            totals.skipped++;
            continue;
          }
          opts.beforeRemove?.(rel);
          if (!parent.rmdir(name, want)) {
            totals.skipped++;
            continue;
          }
          totals.dirs_removed++;
        } catch (err) {
          const code = (err as NodeJS.ErrnoException).code;
          // Something arrived in it since the listing: theirs to keep.
          if (code === 'ENOTEMPTY' || code === 'EEXIST') totals.skipped++;
          else fail(`${folder.agent}: ${abs}`, err);
        }
      }
    } finally {
      folders.close();
    }
  } finally {
    root.close();
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
