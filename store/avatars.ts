import { randomBytes } from 'node:crypto';
import * as fsp from 'node:fs/promises';
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

/** What an upload's bytes are, judged by their signature alone (never by a name or a declared type). */
export function sniffImage(bytes: Uint8Array): 'png' | 'jpg' | 'gif' | 'webp' | null {
  const b = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (b.length >= 8 && b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return 'png';
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return 'jpg';
  if (b.length >= 6 && /^GIF8[79]a$/.test(b.subarray(0, 6).toString('latin1'))) return 'gif';
  if (b.length >= 12 && b.subarray(0, 4).toString('latin1') === 'RIFF' && b.subarray(8, 12).toString('latin1') === 'WEBP') return 'webp';
  return null;
}

/** `avatars/` as a real directory of the home, created when missing; a symlink there is refused. */
async function realAvatarsDir(paths: HomePaths): Promise<string> {
  const dir = avatarsDir(paths);
  await fsp.mkdir(dir, { recursive: true, mode: 0o700 });
  const st = await fsp.lstat(dir);
  if (!st.isDirectory()) throw new SvcError('not-a-directory', `${dir} is not a directory (a symlink there is not followed)`);
  return dir;
}

/** Every file name an agent's avatar may have but `keep`; a directory or other non-file in the way is left alone. */
async function removeOtherAvatars(dir: string, name: string, keep: string | null): Promise<boolean> {
  let removed = false;
  for (const ext of AVATAR_EXTENSIONS) {
    const file = `${name}.${ext}`;
    if (file === keep) continue;
    try {
      const st = await fsp.lstat(join(dir, file));
      if (st.isDirectory()) continue;
      await fsp.unlink(join(dir, file));
      removed = true;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
  }
  return removed;
}

/**
 * Replaces the agent's avatar with `bytes` (already sniffed as `extension`): written to a temp file
 * and renamed, then the agent's other avatar files go, so `openAvatar` finds exactly this one.
 */
export async function saveAvatar(paths: HomePaths, name: string, extension: 'png' | 'jpg' | 'gif' | 'webp', bytes: Uint8Array): Promise<void> {
  checkAvatarName(name);
  const dir = await realAvatarsDir(paths);
  const file = `${name}.${extension}`;
  const tmp = join(dir, `.${file}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    await fsp.writeFile(tmp, bytes, { flag: 'wx', mode: 0o600 });
    await fsp.rename(tmp, join(dir, file));
  } catch (e) {
    await fsp.rm(tmp, { force: true });
    throw e;
  }
  await removeOtherAvatars(dir, name, file);
}

/** Removes the agent's avatar files; false when it had none. */
export async function removeAvatar(paths: HomePaths, name: string): Promise<boolean> {
  checkAvatarName(name);
  const dir = avatarsDir(paths);
  try {
    if (!(await fsp.lstat(dir)).isDirectory()) return false;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw e;
  }
  return removeOtherAvatars(dir, name, null);
}
