import * as fs from 'node:fs';
import { constants } from 'node:fs';

/*
 * Acting inside a folder an agent can change while svc works in it (its workspace, its skills).
 * Checking a path and then acting on it by name is a race: a parent folder swapped for a symlink
 * in between sends the act somewhere else. Node has no openat/unlinkat, but on Linux
 * /proc/self/fd/<fd>/<name> names <name> inside the directory the descriptor holds, wherever that
 * directory has been moved and whatever bears its old name now. So a folder is opened once, each
 * directory below it is opened through its parent's descriptor with O_DIRECTORY|O_NOFOLLOW (no
 * component is ever a link followed), and every read, unlink and rmdir names its entry through the
 * descriptor of the directory holding it; unlink and rmdir never follow their last component.
 * Where there is no procfs every call fails: nothing is done that could not be bound.
 */

const DIR_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;
/** removeTree gives up below this depth: what svc makes is far shallower, and each level holds a descriptor. */
const MAX_TREE_DEPTH = 64;

export interface FileIdentity {
  dev: number;
  ino: number;
}

export const sameFile = (a: FileIdentity, b: FileIdentity): boolean => a.dev === b.dev && a.ino === b.ino;

/** A relative path ('a/b/c') as the folder holding its last entry ('a/b', '' for the top) and that entry's name, for OpenedDirChain.open. */
export function parentAndName(rel: string): [string, string] {
  const i = rel.lastIndexOf('/');
  return i < 0 ? ['', rel] : [rel.slice(0, i), rel.slice(i + 1)];
}

const isAbsent = (e: unknown) => {
  const code = (e as NodeJS.ErrnoException).code;
  return code === 'ENOENT' || code === 'ENOTDIR';
};

export interface RemoveTreeOptions {
  /** The entry must still be this file (dev/ino) or nothing is removed. */
  expect?: FileIdentity;
  /** Test seam: runs after a directory's entries were listed, before they are removed. */
  onListed?: (dir: OpenedDir) => void;
}

/** One opened directory; close it when done (its descriptor is held until then). */
export class OpenedDir implements FileIdentity {
  private closed = false;

  private constructor(
    readonly fd: number,
    readonly dev: number,
    readonly ino: number,
  ) {}

  /**
   * Opens `path` as a directory. A link as its last component is refused (ELOOP or ENOTDIR)
   * unless `follow`, for a root a user may have linked on purpose; earlier components are resolved
   * as usual, so start from a folder the agent cannot swap.
   */
  static open(path: string, opts: { follow?: boolean } = {}): OpenedDir {
    return OpenedDir.fromFd(fs.openSync(path, opts.follow ? constants.O_RDONLY | constants.O_DIRECTORY : DIR_FLAGS));
  }

  private static fromFd(fd: number): OpenedDir {
    try {
      const st = fs.fstatSync(fd);
      return new OpenedDir(fd, st.dev, st.ino);
    } catch (e) {
      fs.closeSync(fd);
      throw e;
    }
  }

  /** `name` in this directory as a path bound to the descriptor: one component, not '', '.' or '..'. */
  at(name: string): string {
    if (this.closed) throw new Error('directory already closed');
    if (name === '' || name === '.' || name === '..' || name.includes('/') || name.includes('\0')) throw new Error(`not one entry name: ${JSON.stringify(name)}`);
    return `/proc/self/fd/${this.fd}/${name}`;
  }

  /** The kernel's path of the directory now (for messages and checks; it may move after). */
  realPath(): string {
    return fs.readlinkSync(`/proc/self/fd/${this.fd}`);
  }

  names(): string[] {
    return fs.readdirSync(`/proc/self/fd/${this.fd}`);
  }

  /** lstat of the entry, or null when there is none. */
  lstat(name: string): fs.Stats | null {
    try {
      return fs.lstatSync(this.at(name));
    } catch (e) {
      if (isAbsent(e)) return null;
      throw e;
    }
  }

  /** The directory `name` here, never through a link (ELOOP or ENOTDIR for one). */
  openDir(name: string): OpenedDir {
    return OpenedDir.fromFd(fs.openSync(this.at(name), DIR_FLAGS));
  }

  /**
   * Hands `fn` the directory `name` here, opened, if it is still the one a listing saw (`listed`),
   * and closes it after. False, and `fn` not run, when it is gone or was swapped for a link or
   * another directory since: a walk must not go into what it did not list.
   */
  withListedDir(name: string, listed: FileIdentity, fn: (dir: OpenedDir) => void): boolean {
    let dir: OpenedDir;
    try {
      dir = this.openDir(name);
    } catch {
      return false;
    }
    try {
      if (!sameFile(dir, listed)) return false;
      fn(dir);
      return true;
    } finally {
      dir.close();
    }
  }

  /**
   * The directory `rel` ('a/b', '' for this one, always a new descriptor) below this one, each
   * component opened through the one before; `createMode`: missing ones are made with that mode.
   */
  openPath(rel: string, opts: { createMode?: number } = {}): OpenedDir {
    let dir = OpenedDir.fromFd(fs.openSync(`/proc/self/fd/${this.fd}`, DIR_FLAGS & ~constants.O_NOFOLLOW));
    for (const name of rel.split('/').filter((s) => s !== '')) {
      try {
        if (opts.createMode !== undefined) {
          try {
            fs.mkdirSync(dir.at(name), { mode: opts.createMode });
          } catch (e) {
            if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
          }
        }
        const next = dir.openDir(name);
        dir.close();
        dir = next;
      } catch (e) {
        dir.close();
        throw e;
      }
    }
    return dir;
  }

  /** Unlinks the file or link `name` (never what a link points at) if it is still `expect`; false when it was not there or not that. */
  unlink(name: string, expect?: FileIdentity): boolean {
    const st = this.lstat(name);
    if (!st || st.isDirectory() || (expect && !sameFile(st, expect))) return false;
    try {
      fs.unlinkSync(this.at(name));
      return true;
    } catch (e) {
      if (isAbsent(e)) return false;
      throw e;
    }
  }

  /** Removes the empty directory `name` if it is still `expect`; false when it was not there or not that. ENOTEMPTY is thrown. */
  rmdir(name: string, expect?: FileIdentity): boolean {
    const st = this.lstat(name);
    if (!st?.isDirectory() || (expect && !sameFile(st, expect))) return false;
    try {
      fs.rmdirSync(this.at(name));
      return true;
    } catch (e) {
      if (isAbsent(e)) return false;
      throw e;
    }
  }

  /**
   * Removes `name` and all below it. Each directory is opened (no link followed) and emptied
   * through its own descriptor, so one swapped for a link meanwhile is never gone through: a link
   * is unlinked, never followed. False when `expect` no longer matches.
   */
  removeTree(name: string, opts: RemoveTreeOptions = {}): boolean {
    return this.removeEntry(name, opts, 0);
  }

  private removeEntry(name: string, opts: RemoveTreeOptions, depth: number): boolean {
    const st = this.lstat(name);
    if (!st || (opts.expect && !sameFile(st, opts.expect))) return false;
    if (!st.isDirectory()) return this.unlink(name, st);
    if (depth > MAX_TREE_DEPTH) throw new Error(`${this.realPath()}/${name}: more than ${MAX_TREE_DEPTH} levels deep; left for a person`);
    let child: OpenedDir;
    try {
      child = this.openDir(name);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      // No longer a directory (a link or a file put in its place): not ours to go into.
      if (code === 'ELOOP' || isAbsent(e)) return false;
      throw e;
    }
    try {
      if (!sameFile(child, st)) return false;
      const names = child.names();
      opts.onListed?.(child);
      for (const n of names) child.removeEntry(n, { ...(opts.onListed ? { onListed: opts.onListed } : {}) }, depth + 1);
    } finally {
      child.close();
    }
    return this.rmdir(name, st);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    fs.closeSync(this.fd);
  }
}

/**
 * Directories below `root` by relative path ('a/b'), each opened through the one above it and
 * checked to be the directory `listed` names for its path (what a listing saw there). Only the
 * current chain is held open, so walking a listing in order costs at most its depth in descriptors.
 */
export class OpenedDirChain {
  private chain: { rel: string; dir: OpenedDir }[] = [];

  constructor(
    private readonly root: OpenedDir,
    private readonly listed: (rel: string) => FileIdentity | undefined,
  ) {}

  /** The directory `rel` ('' for the root, owned by the caller), or null when any folder on the way is not the one listed. */
  open(rel: string): OpenedDir | null {
    const parts = rel === '' ? [] : rel.split('/');
    let keep = 0;
    while (keep < this.chain.length && keep < parts.length && this.chain[keep]!.rel === parts.slice(0, keep + 1).join('/')) keep++;
    for (const c of this.chain.splice(keep)) c.dir.close();
    for (let i = keep; i < parts.length; i++) {
      const parent = i === 0 ? this.root : this.chain[i - 1]!.dir;
      const path = parts.slice(0, i + 1).join('/');
      const want = this.listed(path);
      let dir: OpenedDir;
      try {
        dir = parent.openDir(parts[i]!);
      } catch {
        return null;
      }
      if (!want || !sameFile(dir, want)) {
        dir.close();
        return null;
      }
      this.chain.push({ rel: path, dir });
    }
    return parts.length === 0 ? this.root : this.chain[parts.length - 1]!.dir;
  }

  /** Closes the chain (not the root). */
  close(): void {
    for (const c of this.chain.splice(0)) c.dir.close();
  }
}
