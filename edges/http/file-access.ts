import { openContainedFile, serviceSecretRealPaths, type ContainedFile, type HomePaths } from '../../store/index.js';

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
