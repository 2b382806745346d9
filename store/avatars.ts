import * as fs from 'node:fs';
import { join } from 'node:path';
import { SvcError } from '../schemas/index.js';
import type { HomePaths } from './home.js';

/*
 * Where an agent's avatar lives: `<home>/avatars/<agent>.<ext>`. The name becomes part of a path,
 * so it is checked before anything touches the disk.
 */

/** Tried in this order; the first that exists wins. */
export const AVATAR_EXTENSIONS = ['png', 'jpg', 'jpeg', 'webp', 'gif'] as const;
export type AvatarExtension = (typeof AVATAR_EXTENSIONS)[number];

export const AVATAR_CONTENT_TYPES: Readonly<Record<AvatarExtension, string>> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  webp: 'image/webp',
  gif: 'image/gif',
};

export const AVATAR_NAME_PATTERN = /^[a-zA-Z0-9_-]+$/;
export const MAX_AVATAR_NAME_CHARS = 64;

export interface AgentAvatar {
  path: string;
  size: number;
  extension: AvatarExtension;
  contentType: string;
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

/** The agent's avatar, or null when none of the allowed files exists as a regular file. */
export function findAvatar(paths: HomePaths, name: string): AgentAvatar | null {
  checkAvatarName(name);
  const dir = avatarsDir(paths);
  for (const extension of AVATAR_EXTENSIONS) {
    const path = join(dir, `${name}.${extension}`);
    let st: fs.Stats;
    try {
      st = fs.statSync(path);
    } catch {
      continue;
    }
    if (st.isFile()) return { path, size: st.size, extension, contentType: AVATAR_CONTENT_TYPES[extension] };
  }
  return null;
}
