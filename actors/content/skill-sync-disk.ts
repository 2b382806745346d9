import { createHash, randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import { constants, type Stats } from 'node:fs';
import * as fsp from 'node:fs/promises';
import { join, resolve } from 'node:path';
import {
  SKILL_MANAGED_MARKER,
  type SkillRootEntry,
  type SkillSyncAction,
  type SkillSyncMode,
} from '../../machines/index.js';
import { describeError } from '../../schemas/index.js';
import { OpenedDir, OpenedDirChain, SKILL_NAME_PATTERN, checkSkillFrontMatter, parentAndName, sameFile, type FileIdentity } from '../../store/index.js';

/*
 * The disk side of a skill sync (actors/content/skill-sync.ts): scanning a root into the entries
 * the plan is made from, and carrying out each planned copy and removal through the root the scan
 * opened (ScannedRoots) and directories opened below it without following a link, so what is
 * changed is what the scan read. See skill-sync.ts's header for why every change goes this way.
 */

/** Test hooks: where a race with an agent rewriting its skills folder can be staged. */
export interface SkillSyncSeams {
  /** A copy listed `rel` (relative to the skill `source`) and is about to read it. */
  sourceListed?: (source: string, rel: string) => void;
  /** A removal checked the managed copy at `path` and is about to move it aside and delete it. */
  removalChecked?: (path: string) => void;
}
const MAX_SKILL_FILES = 2000;
const MAX_SKILL_DEPTH = 8;
const MAX_SKILL_MD_BYTES = 512 * 1024;

export class PlanDrift extends Error {}

/** What a walk of a skill's tree saw: its regular files and folders (bounded), and the stamp they make. */
interface SkillTree {
  files: { rel: string; st: Stats }[];
  dirs: Map<string, Stats>;
  stamp: string;
}

/**
 * Lists a skill's tree, each folder opened below the one before without following a link and
 * read through its descriptor; links and other non-regular entries are left out. The stamp
 * identifies the content without reading it (names, sizes, mtimes) and the skill's folder itself
 * (dev/ino), so a folder swapped for another after planning does not pass for the one planned.
 */
function walkSkill(root: OpenedDir): SkillTree {
  const tree: SkillTree = { files: [], dirs: new Map(), stamp: '' };
  const h = createHash('sha256');
  h.update(`${root.dev}:${root.ino}\n`);
  const walk = (dir: OpenedDir, sub: string, depth: number) => {
    if (depth > MAX_SKILL_DEPTH) return;
    let names: string[];
    try {
      names = dir.names().sort();
    } catch {
      return;
    }
    for (const n of names) {
      if (tree.files.length >= MAX_SKILL_FILES) return;
      if (depth === 0 && n === SKILL_MANAGED_MARKER) continue;
      const rel = sub ? `${sub}/${n}` : n;
      const st = dir.lstat(n);
      if (!st) continue;
      if (st.isFile()) {
        tree.files.push({ rel, st });
        h.update(`${rel}\0${st.size}\0${st.mtimeMs}\n`);
      } else if (st.isDirectory()) {
        dir.withListedDir(n, st, (child) => {
          tree.dirs.set(rel, st);
          walk(child, rel, depth + 1);
        });
      }
    }
  };
  walk(root, '', 0);
  tree.stamp = h.digest('hex').slice(0, 32);
  return tree;
}

/** The stamp of the skill at `path` (a link there is followed: a user's link to a skill is a source); '' when it cannot be opened. */
function skillStamp(path: string, follow: boolean): string {
  let dir: OpenedDir;
  try {
    dir = OpenedDir.open(path, { follow });
  } catch {
    return '';
  }
  try {
    return walkSkill(dir).stamp;
  } finally {
    dir.close();
  }
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

const MAX_MARKER_BYTES = 64 * 1024;
const READ_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY;
const CREATE_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW | constants.O_NOCTTY;

/** The marker of a managed copy opened as `dir`, read without following a link; null when it has none. */
function readMarker(dir: OpenedDir): { source: string; stamp: string } | null {
  let fd: number;
  try {
    fd = fs.openSync(dir.at(SKILL_MANAGED_MARKER), READ_FLAGS);
  } catch {
    return null;
  }
  let text: string;
  try {
    const st = fs.fstatSync(fd);
    if (!st.isFile()) return null;
    if (st.size > MAX_MARKER_BYTES) return { source: '', stamp: '' };
    text = fs.readFileSync(fd, 'utf8');
  } catch {
    return { source: '', stamp: '' };
  } finally {
    fs.closeSync(fd);
  }
  try {
    const data = JSON.parse(text) as { source?: unknown; stamp?: unknown };
    return { source: typeof data.source === 'string' ? data.source : '', stamp: typeof data.stamp === 'string' ? data.stamp : '' };
  } catch {
    // Ours by the marker, but unreadable: planned as stale and replaced.
    return { source: '', stamp: '' };
  }
}

/**
 * One root's entries, read through the root opened once (a link as the root itself is followed:
 * a user may keep a CLI's skills folder elsewhere); hidden, system and oddly named entries are
 * skipped. `id`: the root's dev/ino, which every later change in it must find again; null when
 * there is no root.
 */
export async function scanRoot(dir: string, mode: SkillSyncMode): Promise<{ entries: SkillRootEntry[]; id: FileIdentity | null }> {
  let root: OpenedDir;
  try {
    root = OpenedDir.open(dir, { follow: true });
  } catch {
    return { entries: [], id: null };
  }
  try {
    const names = (() => {
      try {
        return root.names();
      } catch {
        return [] as string[];
      }
    })();
    const out: SkillRootEntry[] = [];
    for (const name of names.sort()) {
      if (name.startsWith('.') || !SKILL_NAME_PATTERN.test(name)) continue;
      const path = root.at(name);
      const st = root.lstat(name);
      if (!st) continue;
      if (st.isSymbolicLink()) {
        const text = await fsp.readlink(path).catch(() => null);
        if (text === null) continue;
        const target = resolve(dir, text);
        const real = await fsp.stat(path).catch(() => null);
        const validSkill = real?.isDirectory() === true && (await notASkill(path)) === null;
        out.push({ name, state: 'link', target, broken: real === null, validSkill, ...(validSkill && mode === 'copy' ? { stamp: skillStamp(path, true) } : {}) });
      } else if (st.isDirectory()) {
        let marker: ReturnType<typeof readMarker> = null;
        try {
          const sub = root.openDir(name);
          try {
            marker = sameFile(sub, st) ? readMarker(sub) : null;
          } finally {
            sub.close();
          }
        } catch {
          continue; // swapped for a link or gone since the lstat
        }
        if (marker) {
          out.push({ name, state: 'copy', ...marker });
          continue;
        }
        const why = await notASkill(path);
        out.push(why === null ? { name, state: 'skill', ...(mode === 'copy' ? { stamp: skillStamp(path, false) } : {}) } : { name, state: 'invalid', reason: why });
      } else {
        out.push({ name, state: 'invalid', reason: 'not a directory' });
      }
    }
    return { entries: out, id: { dev: root.dev, ino: root.ino } };
  } finally {
    root.close();
  }
}

/** Roots' dev/ino as a sync's scan found them (null: not there then), by path. */
export type ScannedRoots = Map<string, FileIdentity | null>;

/**
 * The root an action changes, opened: it must be the folder the scan read (a root swapped for a
 * link or another folder since is not acted in). One missing at the scan is made now, and a link
 * in its place is refused. Every change is then made through this descriptor, never by the path.
 */
function openRoot(dir: string, scanned: ScannedRoots): OpenedDir {
  const id = scanned.get(dir);
  if (id) {
    const root = OpenedDir.open(dir, { follow: true });
    if (!sameFile(root, id)) {
      root.close();
      throw new PlanDrift(`${dir} is no longer the folder scanned`);
    }
    return root;
  }
  fs.mkdirSync(dir, { recursive: true, mode: 0o755 });
  return OpenedDir.open(dir);
}

/** Copies the regular file `name` of `dir`, which must still be the file listed (`listed`), into `dest`. */
async function copyListedFile(dir: OpenedDir, name: string, listed: Stats, dest: OpenedDir, what: string): Promise<void> {
  let src: fsp.FileHandle;
  try {
    // O_NOFOLLOW: a file swapped for a link since the listing is refused, never read through.
    src = await fsp.open(dir.at(name), READ_FLAGS);
  } catch (e) {
    throw new PlanDrift(`${what} changed while it was copied (${(e as NodeJS.ErrnoException).code ?? describeError(e)})`);
  }
  try {
    const st = await src.stat();
    if (!st.isFile() || !sameFile(st, listed)) throw new PlanDrift(`${what} changed while it was copied`);
    const mode = listed.mode & 0o755;
    const out = await fsp.open(dest.at(name), CREATE_FLAGS, mode);
    try {
      const buf = Buffer.allocUnsafe(64 * 1024);
      for (;;) {
        const { bytesRead } = await src.read(buf, 0, buf.length, null);
        if (bytesRead === 0) break;
        await out.write(buf, 0, bytesRead);
      }
      await out.chmod(mode);
    } finally {
      await out.close();
    }
  } finally {
    await src.close();
  }
}

/**
 * A managed copy of `source` into `dir/name`: the source's tree is listed through opened folders
 * and must still be the one planned (its stamp); each file is then opened without following a
 * link and checked to be the one listed (a regular file, same dev/ino) in a folder checked the
 * same way, and copied from that descriptor. The copy is built under a hidden name through the
 * opened root, marked, then renamed in.
 */
async function copySkill(action: Extract<SkillSyncAction, { type: 'copy' }>, scanned: ScannedRoots, seams?: SkillSyncSeams): Promise<void> {
  let srcRoot: OpenedDir;
  try {
    srcRoot = OpenedDir.open(action.source, { follow: true });
  } catch (e) {
    throw new PlanDrift(`${action.source} cannot be opened (${describeError(e)})`);
  }
  try {
    const tree = walkSkill(srcRoot);
    if (tree.stamp !== action.stamp) throw new PlanDrift(`${action.source} changed since the sync looked at it`);
    const root = openRoot(action.dir, scanned);
    const tmpName = `.${action.name}.svc-${randomBytes(6).toString('hex')}`;
    try {
      fs.mkdirSync(root.at(tmpName), { mode: 0o755 });
      const tmp = root.openDir(tmpName);
      const folders = new OpenedDirChain(srcRoot, (rel) => tree.dirs.get(rel));
      try {
        // Links inside a skill would lead to host paths a sandbox cannot see: regular files only.
        for (const f of tree.files) {
          const [parentRel, name] = parentAndName(f.rel);
          const from = folders.open(parentRel);
          if (!from) throw new PlanDrift(`${join(action.source, parentRel)} changed while it was copied`);
          seams?.sourceListed?.(action.source, f.rel);
          const to = tmp.openPath(parentRel, { createMode: 0o755 });
          try {
            await copyListedFile(from, name, f.st, to, join(action.source, f.rel));
          } finally {
            to.close();
          }
        }
        const marker = fs.openSync(tmp.at(SKILL_MANAGED_MARKER), CREATE_FLAGS, 0o644);
        try {
          fs.writeFileSync(marker, `${JSON.stringify({ source: action.source, stamp: action.stamp, by: 'svc' })}\n`);
        } finally {
          fs.closeSync(marker);
        }
      } finally {
        folders.close();
        tmp.close();
      }
      // rename never replaces a non-empty directory, and a link or file in the way makes it fail: nothing of the user's is overwritten.
      if (root.lstat(action.name)) throw new PlanDrift(`${action.name} appeared meanwhile`);
      fs.renameSync(root.at(tmpName), root.at(action.name));
    } catch (e) {
      try {
        root.removeTree(tmpName);
      } catch {
        // Left for the next sync to find as a hidden entry: never synced, never in the way.
      }
      throw e;
    } finally {
      root.close();
    }
  } finally {
    srcRoot.close();
  }
}

/**
 * Removes what the plan saw, if it still is that: a link to the same target, or a real directory
 * with the marker. All through the root opened once and checked against the scan: a root or a copy
 * swapped for a link meanwhile is never gone through. A copy is renamed aside first, checked to be
 * the directory that was checked, and deleted through opened directories (store/contained-dir.ts).
 */
async function removeManaged(action: Extract<SkillSyncAction, { type: 'remove' }>, scanned: ScannedRoots, seams?: SkillSyncSeams): Promise<void> {
  const path = join(action.dir, action.name);
  // A root the scan did not find held nothing to remove.
  if (!scanned.get(action.dir)) return;
  const root = openRoot(action.dir, scanned);
  try {
    const st = root.lstat(action.name);
    if (!st) return;
    if ('link' in action.expect) {
      if (!st.isSymbolicLink()) throw new PlanDrift(`${path} is no longer a link`);
      const target = resolve(action.dir, fs.readlinkSync(root.at(action.name)));
      if (target !== action.expect.link) throw new PlanDrift(`${path} now points elsewhere`);
      if (!root.unlink(action.name, st)) throw new PlanDrift(`${path} changed while it was removed`);
      return;
    }
    if (!st.isDirectory()) throw new PlanDrift(`${path} is no longer a managed copy`);
    let copy: OpenedDir;
    try {
      copy = root.openDir(action.name);
    } catch {
      throw new PlanDrift(`${path} is no longer a managed copy`);
    }
    try {
      if (!sameFile(copy, st) || !readMarker(copy)) throw new PlanDrift(`${path} is no longer a managed copy`);
      seams?.removalChecked?.(path);
      // Renamed aside first, so the skill disappears at once; then only the directory checked is deleted.
      const aside = `.${action.name}.svc-old-${randomBytes(6).toString('hex')}`;
      fs.renameSync(root.at(action.name), root.at(aside));
      const moved = root.lstat(aside);
      if (!moved || !sameFile(moved, copy)) {
        fs.renameSync(root.at(aside), root.at(action.name));
        throw new PlanDrift(`${path} changed while it was removed`);
      }
      if (!root.removeTree(aside, { expect: copy })) throw new PlanDrift(`${path} changed while it was removed`);
    } finally {
      copy.close();
    }
  } finally {
    root.close();
  }
}

export async function carryOut(action: SkillSyncAction, scanned: ScannedRoots, seams?: SkillSyncSeams): Promise<void> {
  if (action.type === 'remove') return removeManaged(action, scanned, seams);
  if (action.type === 'copy') return copySkill(action, scanned, seams);
  const root = openRoot(action.dir, scanned);
  try {
    await fsp.symlink(action.target, root.at(action.name), 'dir');
  } finally {
    root.close();
  }
}

/**
 * Runs syncs one at a time: the start-up one, then one per burst of changes the watcher sees
 * (debounced), and the shutdown clean-up. A sync's own writes are seen by the watcher too; they
 * cause one more sync that finds nothing to do, and nothing more.
 */
