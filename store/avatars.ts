import { join } from 'node:path';
import { SvcError } from '../schemas/index.js';
import { openContainedFile, serviceSecretRealPaths, type ContainedFile } from './contained-file.js';
import type { HomePaths } from './home.js';

/*
 * Where an agent's avatar lives: `<home>/avatars/<agent>.<ext>`. The name becomes part of a path,
 * so it is checked before anything touches the disk.
 */

/** Tried in this order; the first that is a regular file physically inside `avatars/` wins. */
export const AVATAR_EXTENSIONS = ['png', 'jpg', 'jpeg', 'webp', 'gif'] as const;
export type AvatarExtension = (typeof AVATAR_EXTENSIONS)[number];

export const AVATAR_NAME_PATTERN = /^[a-zA-Z0-9_-]+$/;
export const MAX_AVATAR_NAME_CHARS = 64;

export interface AgentAvatar extends ContainedFile {
  extension: AvatarExtension;
}

export function avatarsDir(paths: HomePaths): string {
  return join(paths.root, 'avatars');
}

/** Throws SvcError 'invalid-agent-name' unless `name` is safe to use as a file name. */
export function checkAvatarName(name: string): void {
  if (typeof name !== 'string' || name.length > MAX_AVATAR_NAME_CHARS || !AVATAR_NAME_PATTERN.test(name)) {
    throw new SvcError(
      'invalid-agent-name',
      `agent name ${JSON.stringify(String(name).slice(0, 80))} is not allowed (1..${MAX_AVATAR_NAME_CHARS} characters of a-z, A-Z, 0-9, _ and -)`,
    );
  }
}

/**
 * The agent's avatar, opened, or null when no candidate is a regular file inside `avatars/`. The
 * endpoint is public, so no symlink is followed at all (one pointing at `/etc/passwd` or
 * `../config/config.json` would serve it without a token); such a candidate counts as absent.
 */
export async function openAvatar(paths: HomePaths, name: string): Promise<AgentAvatar | null> {
  checkAvatarName(name);
  const dir = avatarsDir(paths);
  const refused = await serviceSecretRealPaths(paths);
  for (const extension of AVATAR_EXTENSIONS) {
    try {
      const file = await openContainedFile(join(dir, `${name}.${extension}`), { base: dir, root: dir, rootLabel: 'avatars/', refused, followSymlinks: false });
      return { ...file, extension };
    } catch (e) {
      if (!(e instanceof SvcError)) throw e;
    }
  }
  return null;
}
