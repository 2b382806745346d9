import { isAbsolute, posix, relative, sep } from 'node:path';
import { SvcError } from '../schemas/index.js';
import {
  createContainedFile,
  listContainedDir,
  makeContainedDir,
  openContainedFile,
  removeContained,
  resolveContainedDir,
  serviceSecretRealPaths,
  type ContainedDirEntry,
  type ContainedNewFile,
  type ContainedFile,
  type ContainmentRules,
} from './contained-file.js';
import type { HomePaths } from './home.js';
import { workspaceDir } from './workspace.js';

/*
 * The admin panel's "user files" area of an agent (WIRE.md §2 Files) is the agent's workspace:
 * where it works, where `/upload` drops files (`api_files/`) and where it leaves files for the user
 * (`output_to_user/`). It is the narrowest root `file_access` knows, holds none of the service's
 * secrets, and is the same whatever `file_access` says, because this API also writes and deletes.
 * Every path is relative to it and goes through store/contained-file.ts.
 */

/** The CLIs' settings folders (`.claude/` holds the sub-agent sandbox hook and hooks that run shell commands). */
const CLI_SETTINGS_DIRS = ['.claude', '.codex', '.gemini'] as const;

export async function userFilesRules(paths: HomePaths, agent: string): Promise<ContainmentRules & { root: string }> {
  const root = workspaceDir(paths, agent);
  // unchangeableDirs: the name check below is not enough, an agent can link `alias -> .claude`.
  return { base: root, root, rootLabel: `the workspace of agent "${agent}"`, refused: await serviceSecretRealPaths(paths), unchangeableDirs: CLI_SETTINGS_DIRS };
}

/**
 * Relative to the area, forward slashes; absolute, drive-letter and backslash paths are refused,
 * and so are percent-escapes: a query or a JSON body is decoded once, so an escape still present is
 * a second layer (`%2e%2e%2f`), which no file name needs badly enough to let it through.
 */
export function checkRelativePath(requested: string): string {
  const shown = JSON.stringify(requested.slice(0, 200));
  if (requested.startsWith('/') || requested.includes('\\') || /^[A-Za-z]:/.test(requested)) {
    throw new SvcError('invalid-path', `path ${shown} must be relative to the agent's workspace, with '/' between names`);
  }
  if (/%[0-9a-f]{2}/i.test(requested)) throw new SvcError('invalid-path', `path ${shown}: percent-encoded characters are not allowed (send the path decoded)`);
  return requested;
}

/**
 * A file an agent named by its absolute path (the `<file:/abs/path>` tags of an answer), as the
 * workspace-relative path the other routes take; a relative path passes unchanged. Outside the
 * workspace it is refused as any path is, and containment is still checked when it is opened.
 */
export function workspaceRelativePath(paths: HomePaths, agent: string, requested: string): string {
  if (!requested.startsWith('/')) return requested;
  const rel = relative(workspaceDir(paths, agent), posix.normalize(requested));
  if (rel === '' || rel.startsWith('..') || isAbsolute(rel)) {
    throw new SvcError('invalid-path', `path ${JSON.stringify(requested.slice(0, 200))} is outside the workspace of agent "${agent}"`);
  }
  return rel.split(sep).join('/');
}

export async function listUserFiles(paths: HomePaths, agent: string, requested: string): Promise<ContainedDirEntry[]> {
  return listContainedDir(checkRelativePath(requested), await userFilesRules(paths, agent));
}

/** Opened then checked (the descriptor's real path); the caller streams from the handle and closes it. */
export async function openUserFile(paths: HomePaths, agent: string, requested: string): Promise<ContainedFile> {
  return openContainedFile(checkRelativePath(requested), await userFilesRules(paths, agent));
}

/**
 * A path the panel may change: never under a CLI's settings folder (`.claude/` holds the sub-agent
 * sandbox hook; `.codex/`, `.gemini/` their CLIs' settings), which would loosen the agent's limits.
 * This refuses the name asked for; the rules' `unchangeableDirs` refuse the real path, links resolved.
 */
function checkWritablePath(requested: string): string {
  const path = checkRelativePath(requested);
  if (path.split('/').some((seg) => CLI_SETTINGS_DIRS.some((d) => d === seg.toLowerCase()))) {
    throw new SvcError('forbidden', `path ${JSON.stringify(path.slice(0, 200))}: the CLIs' settings folders (.claude, .codex, .gemini) are not changed through the file manager`);
  }
  return path;
}

export async function makeUserDir(paths: HomePaths, agent: string, requested: string): Promise<void> {
  await makeContainedDir(checkWritablePath(requested), await userFilesRules(paths, agent));
}

export async function removeUserFile(paths: HomePaths, agent: string, requested: string): Promise<{ wasDir: boolean }> {
  const { wasDir } = await removeContained(checkWritablePath(requested), await userFilesRules(paths, agent));
  return { wasDir };
}

/**
 * The folder an upload may land in (`/upload?agent=&relative_path=`): an existing directory of the
 * area ('' is the workspace itself), writable by the file manager's rules. Nothing is created.
 */
export async function checkUserUploadDir(paths: HomePaths, agent: string, requested: string): Promise<void> {
  const dir = requested === '' || requested === '.' ? requested : checkWritablePath(requested);
  await resolveContainedDir(dir, await userFilesRules(paths, agent));
}

/** A new file of the area, filled by the caller from a stream; never replaces an existing one. */
export async function createUserFile(paths: HomePaths, agent: string, requested: string): Promise<ContainedNewFile> {
  return createContainedFile(checkWritablePath(requested), await userFilesRules(paths, agent));
}
