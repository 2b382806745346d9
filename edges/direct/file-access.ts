import * as fsp from 'node:fs/promises';
import { extname, isAbsolute, join, normalize, sep } from 'node:path';
import { SvcError } from '../../schemas/index.js';
import type { HomePaths } from '../../store/index.js';

export type FileAccessMode = 'all' | 'home' | 'workspace';

/** SPEC.md `file_access`: all, home, workspace; anything else behaves as workspace. */
export function fileAccessMode(value: unknown): FileAccessMode {
  return value === 'all' || value === 'home' ? value : 'workspace';
}

export function fileAccessRoot(mode: FileAccessMode, paths: HomePaths): string | null {
  return mode === 'all' ? null : mode === 'home' ? paths.root : paths.workspace;
}

const within = (path: string, root: string) => path === root || path.startsWith(root.endsWith(sep) ? root : root + sep);

/**
 * The file `/files?path=` may serve, resolved to its real path. Relative paths are taken from the
 * workspace (where the agent works and writes `<file:...>` paths). Refused: `..` segments in any
 * encoding (the query is decoded once, so `%2e%2e` arrives as `..`), paths outside the root (checked
 * before touching the disk, so a 404 never reveals what exists outside), symlinks whose target
 * leaves the root, directories and other non-files.
 */
export async function resolveServableFile(requested: string | null, mode: FileAccessMode, paths: HomePaths): Promise<{ path: string; size: number }> {
  if (requested === null || requested.trim() === '') throw new SvcError('invalid-query', 'query parameter path is required (a file path)');
  if (requested.length > 4096 || requested.includes('\0')) throw new SvcError('invalid-path', 'path is not allowed (at most 4096 characters, no NUL)');
  if (requested.split(/[/\\]/).includes('..')) throw new SvcError('invalid-path', `path ${JSON.stringify(requested)} is not allowed ('..' segments are refused; send the full path)`);
  const lexical = normalize(isAbsolute(requested) ? requested : join(paths.workspace, requested));
  const root = fileAccessRoot(mode, paths);
  if (root !== null && !within(lexical, normalize(root))) throw outside(requested, mode);

  let real: string;
  try {
    real = await fsp.realpath(lexical);
  } catch (e) {
    throw fsError(e, requested);
  }
  if (root !== null) {
    let realRoot: string;
    try {
      realRoot = await fsp.realpath(root);
    } catch {
      throw outside(requested, mode);
    }
    if (!within(real, realRoot)) throw outside(requested, mode);
  }
  let st;
  try {
    st = await fsp.stat(real);
  } catch (e) {
    throw fsError(e, requested);
  }
  if (st.isDirectory()) throw new SvcError('invalid-path', `${requested} is a directory; only files can be fetched`);
  if (!st.isFile()) throw new SvcError('invalid-path', `${requested} is not a regular file`);
  return { path: real, size: st.size };
}

function outside(requested: string, mode: FileAccessMode): SvcError {
  return new SvcError('forbidden', `${requested} is outside what file_access = ${mode} allows`);
}

function fsError(e: unknown, requested: string): SvcError {
  const code = (e as NodeJS.ErrnoException).code;
  if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'ELOOP') return new SvcError('not-found', `${requested}: no such file`);
  if (code === 'EACCES' || code === 'EPERM') return new SvcError('forbidden', `${requested}: the service may not read it`);
  return new SvcError('not-found', `${requested}: cannot be read (${code ?? 'unknown error'})`);
}

const MIME: Record<string, string> = {
  '.txt': 'text/plain; charset=utf-8',
  '.md': 'text/markdown; charset=utf-8',
  '.csv': 'text/csv; charset=utf-8',
  '.log': 'text/plain; charset=utf-8',
  '.json': 'application/json',
  '.html': 'text/html; charset=utf-8',
  '.xml': 'application/xml',
  '.yaml': 'application/yaml',
  '.yml': 'application/yaml',
  '.pdf': 'application/pdf',
  '.zip': 'application/zip',
  '.gz': 'application/gzip',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.svg': 'image/svg+xml',
  '.mp3': 'audio/mpeg',
  '.ogg': 'audio/ogg',
  '.oga': 'audio/ogg',
  '.wav': 'audio/wav',
  '.m4a': 'audio/mp4',
  '.mp4': 'video/mp4',
  '.webm': 'video/webm',
};

export function mimeForName(name: string): string {
  return MIME[extname(name).toLowerCase()] ?? 'application/octet-stream';
}
