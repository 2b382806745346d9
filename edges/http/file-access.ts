import * as fsp from 'node:fs/promises';
import { SvcError, type Principal } from '../../schemas/index.js';
import { openContainedFile, serviceSecretRealPaths, within, workspaceDir, type ContainedFile, type HomePaths } from '../../store/index.js';

export type FileAccessMode = 'all' | 'home' | 'workspace';

/** SPEC.md `file_access`: all, home, workspace; anything else behaves as workspace. */
export function fileAccessMode(value: unknown): FileAccessMode {
  return value === 'all' || value === 'home' ? value : 'workspace';
}

export function fileAccessRoot(mode: FileAccessMode, paths: HomePaths): string | null {
  return mode === 'all' ? null : mode === 'home' ? paths.root : paths.workspace;
}

/**
 * Opens a file a client named (`/files?path=`, `/api/transcribe`) under `file_access`. Relative
 * paths are taken from the workspace (where the agent works and writes `<file:...>` paths).
 * Symlinks are followed, but what they reach must still be inside the root, and the service's own
 * secrets are refused in every mode, `all` included. The caller reads from the handle and closes it.
 */
export async function openRequestedFile(requested: string, mode: FileAccessMode, paths: HomePaths): Promise<ContainedFile> {
  return openContainedFile(requested, {
    base: paths.workspace,
    root: fileAccessRoot(mode, paths),
    rootLabel: `what file_access = ${mode} allows`,
    refused: await serviceSecretRealPaths(paths),
  });
}

/**
 * openRequestedFile for a caller restricted by `allowed_agents` (SPEC.md "Agent-scoped access"):
 * besides `file_access`, what was opened must lie in the workspace of one of its agents (real
 * paths, so no link leads elsewhere). An unrestricted caller (empty list or `*`) gets what
 * `file_access` allows. The list is the principal's, settled where it authenticated.
 */
export async function openRequestedFileFor(principal: Pick<Principal, 'allowed_agents'>, requested: string, mode: FileAccessMode, paths: HomePaths): Promise<ContainedFile> {
  const list = principal.allowed_agents;
  const file = await openRequestedFile(requested, mode, paths);
  if (list.length === 0 || list.includes('*')) return file;
  const roots = await Promise.all(
    list.map(async (agent) => {
      try {
        return await fsp.realpath(workspaceDir(paths, agent));
      } catch {
        return null; // not an agent name, or no workspace yet: nothing of it to read
      }
    }),
  );
  if (!roots.some((r) => r !== null && within(file.realPath, r))) {
    await file.handle.close().catch(() => undefined);
    throw new SvcError('agent-not-allowed', `${requested} is not in the workspace of an agent this user may use (allowed_agents: ${list.join(', ')})`);
  }
  return file;
}
