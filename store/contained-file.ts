import * as fs from 'node:fs';
import { constants } from 'node:fs';
import * as fsp from 'node:fs/promises';
import { isAbsolute, join, normalize, sep } from 'node:path';
import { SvcError } from '../schemas/index.js';
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
    const realRoot = rules.root === null ? null : await fsp.realpath(rules.root).catch(() => '');
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
export function readContainedFileSync(requested: string, rules: ContainmentRules, maxBytes: number): { realPath: string; size: number; text: string } {
  const path = lexicallyContained(requested, rules);
  let fd: number;
  try {
    fd = fs.openSync(path, openFlags(rules));
  } catch (e) {
    throw fsError(e, requested);
  }
  try {
    const realPath = fs.readlinkSync(`/proc/self/fd/${fd}`);
    let realRoot: string | null = null;
    if (rules.root !== null) {
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
    return { realPath, size: st.size, text: fs.readFileSync(fd, 'utf8') };
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
