import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import { constants } from 'node:fs';
import * as fsp from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, normalize, relative, sep } from 'node:path';
import { SvcError } from '../schemas/index.js';
import { OpenedDir } from './contained-dir.js';
import { homePaths, serviceSecretPaths, type HomePaths } from './home.js';

/*
 * The one way a path that came from outside (a query, a body, an agent name) becomes an open file.
 * Checking a path and then opening it by name is a race: a directory swapped for a symlink in
 * between serves whatever the link points at. So the file is opened first and what was opened is
 * checked: the descriptor's real path (the kernel's answer, /proc/self/fd) and its type (fstat).
 * Callers read from the returned handle and never reopen the path.
 */

/** `path` is `root` or below it; both absolute and normalised. The one containment test. */
export function within(path: string, root: string): boolean {
  return path === root || path.startsWith(root.endsWith(sep) ? root : root + sep);
}

export interface ContainedFile {
  /** Owned by the caller from here on: read from it, then close it. */
  handle: fsp.FileHandle;
  /** Where the descriptor really points, symlinks resolved. */
  realPath: string;
  /** What fstat said at open; procfs reports 0, and a file may change while it is read. */
  size: number;
}

export interface ContainmentRules {
  /** Relative requests are taken from here. */
  base: string;
  /** The file must be physically inside it; null allows anywhere (file_access = all). */
  root: string | null;
  /** Words for the refusal, e.g. "what file_access = workspace allows". */
  rootLabel: string;
  /** Real paths refused even inside the root: the service's own secrets. */
  refused?: readonly string[];
  /** false: a symlink as the last component is refused (O_NOFOLLOW). */
  followSymlinks?: boolean;
  /**
   * The root's real path as the caller has checked it: used as is, never resolved again, so a
   * root swapped for a link after that check leads nowhere allowed.
   */
  realRoot?: string;
  /** true: a file whose real path below the root's has a segment starting with '.' (a dotfile, or in a dot-folder) is refused, whatever link led there. */
  refuseHidden?: boolean;
  /**
   * Folder names (compared case-insensitively) no change may land in or under: checked on every
   * segment of the real path below the root's, after links are resolved, so a link to such a
   * folder (`alias -> .claude`) is no way around the name. Reads are not affected.
   */
  unchangeableDirs?: readonly string[];
}

export const MAX_REQUESTED_PATH_CHARS = 4096;

/*
 * O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer and hold a thread of
 * the pool forever; fstat then refuses it. O_NOCTTY: a terminal device never becomes ours.
 */
const OPEN_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY;

/**
 * Opens `requested` under `rules`. Refused before the disk is touched (so a 404 never reveals what
 * exists outside): empty, over 4096 characters, NUL, any `..` segment, lexically outside the root.
 * Refused after opening, with the handle closed: a real path outside the root's real path or
 * among the refused ones, a file unlinked meanwhile, anything but a regular file.
 */
export async function openContainedFile(requested: string, rules: ContainmentRules): Promise<ContainedFile> {
  const path = lexicallyContained(requested, rules);
  let handle: fsp.FileHandle;
  try {
    handle = await fsp.open(path, openFlags(rules));
  } catch (e) {
    throw fsError(e, requested);
  }
  try {
    // Fails closed where there is no procfs: nothing is served that could not be checked.
    const realPath = await fsp.readlink(`/proc/self/fd/${handle.fd}`);
    const realRoot = rules.root === null ? null : (rules.realRoot ?? (await fsp.realpath(rules.root).catch(() => '')));
    const st = await handle.stat();
    checkOpened(requested, rules, realPath, realRoot, st);
    return { handle, realPath, size: st.size };
  } catch (e) {
    await handle.close().catch(() => undefined);
    throw e;
  }
}

/**
 * openContainedFile for synchronous callers (memory modules read into a prompt): the same checks
 * on the opened descriptor, then its whole text, refused past `maxBytes` as `file-too-large`.
 */
export function readContainedFileSync(requested: string, rules: ContainmentRules, maxBytes: number): { realPath: string; size: number; mtimeMs: number; text: string } {
  const path = lexicallyContained(requested, rules);
  let fd: number;
  try {
    fd = fs.openSync(path, openFlags(rules));
  } catch (e) {
    throw fsError(e, requested);
  }
  try {
    const realPath = fs.readlinkSync(`/proc/self/fd/${fd}`);
    let realRoot: string | null = rules.root === null ? null : (rules.realRoot ?? null);
    if (rules.root !== null && realRoot === null) {
      try {
        realRoot = fs.realpathSync(rules.root);
      } catch {
        realRoot = '';
      }
    }
    const st = fs.fstatSync(fd);
    checkOpened(requested, rules, realPath, realRoot, st);
    if (st.size > maxBytes) {
      throw new SvcError('file-too-large', `${requested}: ${st.size} bytes is over the ${maxBytes}-byte limit`, { size: st.size });
    }
    return { realPath, size: st.size, mtimeMs: st.mtimeMs, text: fs.readFileSync(fd, 'utf8') };
  } finally {
    fs.closeSync(fd);
  }
}

/** The absolute path to open, after every check that needs no disk. */
function lexicallyContained(requested: string, rules: ContainmentRules): string {
  if (requested.trim() === '') throw new SvcError('invalid-path', 'path is empty');
  if (requested.length > MAX_REQUESTED_PATH_CHARS || requested.includes('\0')) {
    throw new SvcError('invalid-path', `path is not allowed (at most ${MAX_REQUESTED_PATH_CHARS} characters, no NUL)`);
  }
  if (requested.split(/[/\\]/).includes('..')) {
    throw new SvcError('invalid-path', `path ${JSON.stringify(requested)} is not allowed ('..' segments are refused; send the full path)`);
  }
  const path = normalize(isAbsolute(requested) ? requested : join(rules.base, requested));
  if (rules.root !== null && !within(path, normalize(rules.root))) throw outside(requested, rules);
  return path;
}

/** Whether the file `st` describes is one of `paths` or lies in one of them (a few small directories). */
function isOneOf(st: fs.Stats, paths: readonly string[]): boolean {
  const visit = (p: string, depth: number): boolean => {
    let s: fs.Stats;
    try {
      s = fs.lstatSync(p);
    } catch {
      return false;
    }
    if (s.isFile()) return s.ino === st.ino && s.dev === st.dev;
    if (!s.isDirectory() || depth > 4) return false;
    let names: string[];
    try {
      names = fs.readdirSync(p);
    } catch {
      return false;
    }
    return names.some((n) => visit(join(p, n), depth + 1));
  };
  return paths.some((p) => visit(p, 0));
}

/** `/proc/<pid>/…` (and so `/proc/self`, `/proc/thread-self`, tasks), as the kernel names what was opened. */
const PER_PROCESS_PROCFS = /^\/proc\/\d+(\/|$)/;

const openFlags = (rules: ContainmentRules) => (rules.followSymlinks === false ? OPEN_FLAGS | constants.O_NOFOLLOW : OPEN_FLAGS);

const outside = (requested: string, rules: ContainmentRules) => new SvcError('forbidden', `${requested} is outside ${rules.rootLabel}`);

/** What was opened must be where the rules allow ('' for a root that does not resolve) and a regular file. */
function checkOpened(requested: string, rules: ContainmentRules, realPath: string, realRoot: string | null, st: fs.Stats): void {
  if (realRoot !== null && (realRoot === '' || !within(realPath, realRoot))) throw outside(requested, rules);
  if (rules.refuseHidden && realRoot !== null && relative(realRoot, realPath).split(sep).some((s) => s.startsWith('.'))) {
    throw new SvcError('forbidden', `${requested} is a hidden file or lies in a hidden folder (its name, or a link's target, starts with '.')`);
  }
  // A hard link has a real path of its own: a file with more than one name is compared by identity.
  if (rules.refused?.some((p) => within(realPath, p)) || (st.nlink > 1 && rules.refused && isOneOf(st, rules.refused))) {
    throw new SvcError('forbidden', `${requested} belongs to the service's own secrets, which no endpoint serves`);
  }
  // A process's own procfs files hold its environment (provider keys, the inter-agent token handed
  // to every CLI), its argv, memory and open files: secrets by another path, in every mode.
  if (PER_PROCESS_PROCFS.test(realPath)) {
    throw new SvcError('forbidden', `${requested} describes a running process (its environment, memory or files), which no endpoint serves`);
  }
  if (st.nlink === 0) throw new SvcError('not-found', `${requested}: no such file`);
  if (st.isDirectory()) throw new SvcError('invalid-path', `${requested} is a directory; only files can be fetched`);
  if (!st.isFile()) throw new SvcError('invalid-path', `${requested} is not a regular file`);
}

function fsError(e: unknown, requested: string): SvcError {
  const code = (e as NodeJS.ErrnoException).code;
  if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'ELOOP') return new SvcError('not-found', `${requested}: no such file`);
  if (code === 'EACCES' || code === 'EPERM') return new SvcError('forbidden', `${requested}: the service may not read it`);
  return new SvcError('not-found', `${requested}: cannot be read (${code ?? 'unknown error'})`);
}

/**
 * Real paths of the secrets of the home and of every sub-agent home under it, as
 * `ContainmentRules.refused`: each named both under the home's real path and by its own real path,
 * so a secret reached through a symlinked home, or a `config/` that is itself a link, is still one.
 */
export async function serviceSecretRealPaths(paths: HomePaths): Promise<string[]> {
  const realRoot = await fsp.realpath(paths.root).catch(() => paths.root);
  const homes = [paths, homePaths(realRoot)];
  const subAgents = await fsp.readdir(paths.agentsDir).catch(() => [] as string[]);
  for (const name of subAgents) homes.push(homePaths(join(realRoot, 'agents', name)));
  const named = homes.flatMap(serviceSecretPaths);
  const resolved = await Promise.all(named.map((p) => fsp.realpath(p).catch(() => null)));
  return [...new Set([...named, ...resolved.filter((p): p is string => p !== null)])];
}

// ---------------------------------------------------------------- changing what is inside a root

/*
 * Writes, directories and deletions under a root, for paths that came from outside (admin memory,
 * skills, user files). The same lexical checks as openContainedFile, then the parent directory is
 * resolved by the kernel (realpath) and must lie inside the root's real path and outside the
 * service's secrets; every change is then made on that real parent, to the entry itself: a final
 * symlink is never written through, and a deletion removes a link, never what it points at.
 */

export interface ContainedTarget {
  /** The requested path, lexically normalised under the root (what the caller named). */
  path: string;
  /** The parent directory's real path, checked. */
  realParent: string;
  /** `realParent/<last component>`: the entry a change touches. */
  realPath: string;
  realRoot: string;
}

type RootedRules = ContainmentRules & { root: string };

const isRefused = (real: string, rules: ContainmentRules) => rules.refused?.some((p) => within(real, p)) ?? false;

const secretRefusal = (requested: string) => new SvcError('forbidden', `${requested} belongs to the service's own secrets, which no endpoint serves or changes`);

async function realRootOf(rules: RootedRules): Promise<string> {
  if (rules.realRoot !== undefined) return rules.realRoot;
  try {
    return await fsp.realpath(rules.root);
  } catch {
    throw new SvcError('not-found', `${rules.rootLabel} does not exist yet`);
  }
}

/** A real directory, inside the root and not a secret, or the refusal saying why. */
function checkRealDir(requested: string, rules: RootedRules, real: string, realRoot: string): void {
  if (!within(real, realRoot)) throw outside(requested, rules);
  if (isRefused(real, rules)) throw secretRefusal(requested);
}

/** A real path a change may land on: no segment below the root's is one of `unchangeableDirs`. */
function checkChangeable(requested: string, rules: ContainmentRules, real: string, realRoot: string): void {
  const names = rules.unchangeableDirs;
  if (!names?.length) return;
  const refused = new Set(names.map((n) => n.toLowerCase()));
  const hit = relative(realRoot, real).split(sep).find((seg) => refused.has(seg.toLowerCase()));
  if (hit !== undefined) throw new SvcError('forbidden', `${JSON.stringify(requested.slice(0, 200))} is in or leads to ${hit}, which is not changed through this API`);
}

/**
 * The target's parent, opened, and checked again by what was opened (the kernel's path of the
 * descriptor): a change is then made through it (OpenedDir.at), so a folder on the way swapped for
 * a link after resolveContainedTarget checked it leads nowhere unchecked.
 */
function openCheckedParent(target: ContainedTarget, rules: RootedRules, requested: string): OpenedDir {
  let dir: OpenedDir;
  try {
    dir = OpenedDir.open(target.realParent);
  } catch (e) {
    throw fsError(e, requested);
  }
  try {
    const real = dir.realPath();
    checkRealDir(requested, rules, real, target.realRoot);
    checkChangeable(requested, rules, join(real, basename(target.realPath)), target.realRoot);
    return dir;
  } catch (e) {
    dir.close();
    throw e;
  }
}

/**
 * Resolves where a change to `requested` would land. The root itself is never a target. Missing
 * parents are made one at a time under an already checked real directory when `createParents`.
 */
export async function resolveContainedTarget(requested: string, rules: RootedRules, opts: { createParents?: boolean } = {}): Promise<ContainedTarget> {
  const path = lexicallyContained(requested, rules);
  if (path === normalize(rules.root)) throw new SvcError('invalid-path', `${requested} is ${rules.rootLabel} itself; name something inside it`);
  const realRoot = await realRootOf(rules);
  const missing: string[] = [];
  let dir = dirname(path);
  let realDir: string | null = null;
  while (realDir === null) {
    try {
      realDir = await fsp.realpath(dir);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if ((code !== 'ENOENT' && code !== 'ENOTDIR') || !within(dir, normalize(rules.root)) || dir === normalize(rules.root)) throw fsError(e, requested);
      if (!opts.createParents) throw new SvcError('not-found', `${requested}: no such directory`);
      missing.unshift(basename(dir));
      dir = dirname(dir);
    }
  }
  checkRealDir(requested, rules, realDir, realRoot);
  checkChangeable(requested, rules, realDir, realRoot);
  for (const name of missing) {
    const next = join(realDir, name);
    try {
      await fsp.mkdir(next, { mode: 0o755 });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw fsError(e, requested);
    }
    // Made or found by someone else meanwhile: only a real directory inside the root is entered.
    realDir = await fsp.realpath(next).catch((e: unknown) => {
      throw fsError(e, requested);
    });
    checkRealDir(requested, rules, realDir, realRoot);
    checkChangeable(requested, rules, realDir, realRoot);
  }
  const realPath = join(realDir, basename(path));
  if (isRefused(realPath, rules)) throw secretRefusal(requested);
  checkChangeable(requested, rules, realPath, realRoot);
  return { path, realParent: realDir, realPath, realRoot };
}

async function lstatOrNull(path: string): Promise<fs.Stats | null> {
  try {
    return await fsp.lstat(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
}

const WRITE_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW | constants.O_NOCTTY;

/**
 * Replaces (or creates) the regular file `requested` with `text`, atomically: a temp file in the
 * checked real parent, whose descriptor is checked to be where it was meant to be, fsynced, renamed
 * over. An existing file keeps its mode; a directory or a symlink at the name is refused.
 */
export async function writeContainedFile(
  requested: string,
  rules: RootedRules,
  text: string,
  opts: { maxBytes: number; createParents?: boolean },
): Promise<{ realPath: string; size: number; created: boolean }> {
  const size = Buffer.byteLength(text, 'utf8');
  if (size > opts.maxBytes) throw new SvcError('file-too-large', `${requested}: ${size} bytes is over the ${opts.maxBytes}-byte limit`, { size });
  const target = await resolveContainedTarget(requested, rules, opts);
  const existing = await lstatOrNull(target.realPath);
  if (existing?.isSymbolicLink()) throw new SvcError('invalid-path', `${requested} is a symlink; write to the file it names instead`);
  if (existing && !existing.isFile()) throw new SvcError('invalid-path', `${requested} is not a regular file`);
  const mode = existing ? existing.mode & 0o777 : 0o644;
  const tmp = join(target.realParent, `.${basename(target.realPath)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  const handle = await fsp.open(tmp, WRITE_FLAGS, mode).catch((e: unknown) => {
    throw fsError(e, requested);
  });
  try {
    try {
      // The parent was checked by name; the descriptor says where the temp file really is.
      const real = await fsp.readlink(`/proc/self/fd/${handle.fd}`);
      if (dirname(real) !== target.realParent) throw outside(requested, rules);
      await handle.writeFile(text, 'utf8');
      await handle.chmod(mode);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await fsp.rename(tmp, target.realPath);
  } catch (e) {
    await fsp.rm(tmp, { force: true });
    throw e;
  }
  await syncDir(target.realParent);
  return { realPath: target.realPath, size, created: existing === null };
}

/** A new file being written under a root by a stream (an upload): the bytes go to `handle`, then `commit` or `discard`. */
export interface ContainedNewFile {
  /** Owned by the caller: write to it, close it, then commit or discard. */
  handle: fsp.FileHandle;
  /** Where the file appears once committed. */
  realPath: string;
  /** Gives the finished temp file its name; refused with `file-exists` when the name was taken meanwhile. */
  commit(): Promise<void>;
  /** Removes the temp file (a failed or abandoned write); safe to call after a failed commit. */
  discard(): Promise<void>;
}

/**
 * Starts a new regular file `requested` whose content arrives later (a streamed upload): the same
 * target checks as writeContainedFile, then a temp file opened exclusively in the checked real parent
 * and checked by its descriptor. The name is taken by a hard link at commit, which never replaces
 * what is there, so an existing file (or a link planted under the name) is never overwritten.
 */
export async function createContainedFile(requested: string, rules: RootedRules, opts: { mode?: number } = {}): Promise<ContainedNewFile> {
  const target = await resolveContainedTarget(requested, rules);
  const name = basename(target.realPath);
  const tmpName = `.${name}.${process.pid}.${randomBytes(6).toString('hex')}.part`;
  // The parent is opened and checked now and again at commit (the same directory, still allowed),
  // and both the temp file and the final name are made through its descriptor.
  const withParent = <T>(fn: (dir: OpenedDir) => T): T => {
    const dir = openCheckedParent(target, rules, requested);
    try {
      return fn(dir);
    } finally {
      dir.close();
    }
  };
  const first = openCheckedParent(target, rules, requested);
  let handle: fsp.FileHandle;
  let parent: { dev: number; ino: number; real: string };
  try {
    if (first.lstat(name)) throw new SvcError('file-exists', `${requested} already exists`);
    parent = { dev: first.dev, ino: first.ino, real: first.realPath() };
    // Awaited before `first` closes: the path names the entry through its descriptor.
    handle = await fsp.open(first.at(tmpName), WRITE_FLAGS, opts.mode ?? 0o600).catch((e: unknown) => {
      throw fsError(e, requested);
    });
  } finally {
    first.close();
  }
  const discard = () =>
    withParent((dir) => {
      if (dir.dev === parent.dev && dir.ino === parent.ino) dir.unlink(tmpName);
    });
  try {
    const real = await fsp.readlink(`/proc/self/fd/${handle.fd}`);
    if (dirname(real) !== parent.real) throw outside(requested, rules);
  } catch (e) {
    await handle.close().catch(() => undefined);
    await Promise.resolve().then(discard).catch(() => undefined);
    throw e;
  }
  return {
    handle,
    realPath: target.realPath,
    discard: async () => {
      try {
        discard();
      } catch {
        // The folder went or was swapped meanwhile: no temp file of ours is reachable to remove.
      }
    },
    commit: async () =>
      withParent((dir) => {
        if (dir.dev !== parent.dev || dir.ino !== parent.ino) throw outside(requested, rules);
        try {
          fs.linkSync(dir.at(tmpName), dir.at(name));
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code === 'EEXIST') throw new SvcError('file-exists', `${requested} already exists`);
          throw fsError(e, requested);
        }
        dir.unlink(tmpName);
        fs.fsyncSync(dir.fd);
      }),
  };
}

/**
 * A directory inside the root that new entries may be made in (the root itself for '' or '.'):
 * its real path, inside the root's and not a secret. Nothing is created.
 */
export async function resolveContainedDir(requested: string, rules: RootedRules): Promise<{ realPath: string }> {
  const path = requested === '' || requested === '.' ? normalize(rules.root) : lexicallyContained(requested, rules);
  const realRoot = await realRootOf(rules);
  let real: string;
  try {
    real = await fsp.realpath(path);
  } catch (e) {
    throw fsError(e, requested);
  }
  checkRealDir(requested, rules, real, realRoot);
  checkChangeable(requested, rules, real, realRoot);
  const st = await fsp.stat(real);
  if (!st.isDirectory()) throw new SvcError('invalid-path', `${requested} is a file, not a directory`);
  return { realPath: real };
}

async function syncDir(dir: string): Promise<void> {
  const dh = await fsp.open(dir, constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    await dh.sync();
  } finally {
    await dh.close();
  }
}

/** mkdir -p inside the root; an existing directory is `file-exists` so a second create is told. */
export async function makeContainedDir(requested: string, rules: RootedRules): Promise<{ realPath: string }> {
  const target = await resolveContainedTarget(requested, rules, { createParents: true });
  const dir = openCheckedParent(target, rules, requested);
  try {
    fs.mkdirSync(dir.at(basename(target.realPath)), { mode: 0o755 });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') throw new SvcError('file-exists', `${requested} already exists`);
    throw fsError(e, requested);
  } finally {
    dir.close();
  }
  return { realPath: target.realPath };
}

/**
 * Deletes a file, a symlink inside the root (the link only) or a directory with what is in it (links inside are
 * unlinked, never followed). Never the root.
 */
export async function removeContained(requested: string, rules: RootedRules): Promise<{ realPath: string; wasDir: boolean }> {
  const target = await resolveContainedTarget(requested, rules);
  const name = basename(target.realPath);
  const dir = openCheckedParent(target, rules, requested);
  try {
    const st = dir.lstat(name);
    if (!st) throw new SvcError('not-found', `${requested}: no such file or directory`);
    if (st.isSymbolicLink()) {
      // Removing the link would touch nothing outside, but a link that leads out is not something
      // this API acts on at all (broken links, which lead nowhere, may go).
      const real = await fsp.realpath(dir.at(name)).catch(() => null);
      if (real !== null && !within(real, target.realRoot)) throw outside(requested, rules);
      if (real !== null && isRefused(real, rules)) throw secretRefusal(requested);
    }
    // Through the opened parent, and a directory emptied through its own descriptors: a folder
    // swapped for a link meanwhile is unlinked, never followed.
    const removed = st.isDirectory() ? dir.removeTree(name, { expect: st }) : dir.unlink(name, st);
    if (!removed) throw new SvcError('not-found', `${requested}: changed while it was being deleted; nothing more was removed`);
    fs.fsyncSync(dir.fd);
    return { realPath: target.realPath, wasDir: st.isDirectory() };
  } catch (e) {
    throw e instanceof SvcError ? e : fsError(e, requested);
  } finally {
    dir.close();
  }
}

export interface ContainedDirEntry {
  name: string;
  /** Relative to the root, with `/`, as a later request names it. */
  path: string;
  isDir: boolean;
  size: number;
  mtimeMs: number;
}

export const MAX_LISTED_ENTRIES = 5000;

/**
 * The entries of a directory inside the root (the root itself included; empty `requested` is the
 * root). Symlinks are shown as what they point at when that is inside the root and not a secret,
 * and left out otherwise; at most MAX_LISTED_ENTRIES, directories first, then by name.
 */
export async function listContainedDir(requested: string, rules: RootedRules): Promise<ContainedDirEntry[]> {
  const root = normalize(rules.root);
  const path = requested === '' || requested === '/' || requested === '.' ? root : lexicallyContained(requested, rules);
  const realRoot = await realRootOf(rules);
  let realDir: string;
  try {
    realDir = await fsp.realpath(path);
  } catch (e) {
    throw fsError(e, requested);
  }
  checkRealDir(requested, rules, realDir, realRoot);
  let names: string[];
  try {
    names = await fsp.readdir(realDir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOTDIR') throw new SvcError('invalid-path', `${requested} is a file, not a directory`);
    throw fsError(e, requested);
  }
  const out: ContainedDirEntry[] = [];
  for (const name of names) {
    const entryPath = join(realDir, name);
    let st: fs.Stats;
    try {
      st = await fsp.lstat(entryPath);
      if (st.isSymbolicLink()) {
        const real = await fsp.realpath(entryPath);
        if (!within(real, realRoot) || isRefused(real, rules)) continue;
        st = await fsp.stat(real);
      } else if (isRefused(entryPath, rules)) continue;
    } catch {
      continue; // vanished or a broken link: nothing to show
    }
    const rel = relative(root, join(path, name)).split(sep).join('/');
    out.push({ name, path: rel, isDir: st.isDirectory(), size: st.isDirectory() ? 0 : st.size, mtimeMs: st.mtimeMs });
  }
  out.sort((a, b) => (a.isDir !== b.isDir ? (a.isDir ? -1 : 1) : a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return out.slice(0, MAX_LISTED_ENTRIES);
}
