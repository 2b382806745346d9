import { createHash } from 'node:crypto';
import * as fsp from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { promisify } from 'node:util';
import { brotliCompress, constants as zlibConstants, gzip } from 'node:zlib';
import { openContainedFile } from '../../store/index.js';
import { contentTypeFor } from './content-headers.js';
import type { HttpReply, HttpRequest } from './http.js';

/*
 * The admin web panel's built files (`dist/panel/`: index.html, hashed files under assets/), served
 * same-origin beside the admin API. The directory is read once, into memory, on the first request
 * that needs it: requests only look names up in that table, so no request path ever reaches the
 * file system, and `..`, encoded or not, has nothing to climb. Each file was opened through the
 * store's contained-file opener, so a symlink leading out of the directory is never read.
 */

/** Sent with every panel reply, the 404 and 503 pages included: the SPA loads nothing from elsewhere. */
export const PANEL_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
};

/** Paths the API surfaces own: an unknown one there keeps its JSON 404, never becomes the SPA. */
const RESERVED = ['/api', '/ws', '/health', '/hooks', '/files', '/upload'];

export function isReservedPath(path: string): boolean {
  return RESERVED.some((p) => path === p || path.startsWith(`${p}/`));
}

/** Hashed names never change content: a year, and no revalidation. */
const IMMUTABLE = 'public, max-age=31536000, immutable';
const REVALIDATE = 'no-cache';

/** A built panel is a few hundred kilobytes; these only stop a wrong directory from filling memory. */
const MAX_FILES = 2000;
const MAX_TOTAL_BYTES = 64 * 1024 * 1024;
/** Below this, compression saves less than its headers cost. */
const MIN_COMPRESS_BYTES = 256;
const COMPRESSIBLE = /^(text\/|application\/(javascript|json|xml|manifest\+json|wasm)|image\/svg\+xml)/;

type Encoding = 'br' | 'gzip';

interface PanelFile {
  type: string;
  body: Buffer;
  etag: string;
  /** The same bytes compressed, when that is smaller. */
  encoded: Partial<Record<Encoding, Buffer>>;
}

export interface PanelVersion {
  version: string;
  built_at: string | null;
}

/** What was read from the directory; `files` keys are URL paths (`/index.html`, `/assets/x.js`). */
interface Loaded {
  files: Map<string, PanelFile>;
  version: PanelVersion | null;
}

export interface PanelFilesOptions {
  /** The built panel (`dist/panel`); it may not exist, then `/` explains how to build it. */
  dir: string;
}

export interface PanelFiles {
  readonly dir: string;
  /** The reply for a GET or HEAD no route matched; undefined leaves it to the server's JSON 404. */
  reply(req: Pick<HttpRequest, 'method' | 'path' | 'headers'>): Promise<HttpReply | undefined>;
}

const gzipAsync = promisify(gzip);
const brotliAsync = promisify(brotliCompress);

async function compress(body: Buffer, type: string): Promise<PanelFile['encoded']> {
  if (body.length < MIN_COMPRESS_BYTES || !COMPRESSIBLE.test(type)) return {};
  const [br, gz] = await Promise.all([
    brotliAsync(body, { params: { [zlibConstants.BROTLI_PARAM_QUALITY]: 11, [zlibConstants.BROTLI_PARAM_SIZE_HINT]: body.length } }),
    gzipAsync(body, { level: 9 }),
  ]);
  return { ...(br.length < body.length ? { br } : {}), ...(gz.length < body.length ? { gzip: gz } : {}) };
}

/** Every regular file below `root` (a real path), as paths relative to it; hidden names are skipped. */
async function listFiles(root: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (dir: string): Promise<void> => {
    for (const entry of await fsp.readdir(dir, { withFileTypes: true })) {
      if (entry.name.startsWith('.')) continue;
      const full = join(dir, entry.name);
      // A linked directory is not walked: whatever it leads to is not the build's.
      if (entry.isDirectory()) await walk(full);
      else if (entry.isFile() || entry.isSymbolicLink()) out.push(relative(root, full));
      if (out.length > MAX_FILES) return;
    }
  };
  await walk(root);
  return out;
}

/** null: the directory does not exist (the panel was not built). */
async function loadPanel(dir: string): Promise<Loaded | null> {
  let realRoot: string;
  try {
    realRoot = await fsp.realpath(dir);
    if (!(await fsp.stat(realRoot)).isDirectory()) return null;
  } catch {
    return null;
  }
  const files = new Map<string, PanelFile>();
  let total = 0;
  for (const rel of (await listFiles(realRoot)).slice(0, MAX_FILES)) {
    let body: Buffer;
    try {
      // Opened first, checked after: a link whose target lies outside the directory is refused here.
      const file = await openContainedFile(rel, { base: realRoot, root: realRoot, realRoot, rootLabel: 'the panel directory', refuseHidden: true });
      try {
        body = await file.handle.readFile();
      } finally {
        await file.handle.close().catch(() => undefined);
      }
    } catch {
      continue;
    }
    total += body.length;
    if (total > MAX_TOTAL_BYTES) break;
    const urlPath = `/${rel.split(sep).join('/')}`;
    const type = contentTypeFor(urlPath);
    files.set(urlPath, { type, body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`, encoded: await compress(body, type) });
  }
  return { files, version: parsePanelVersion(files.get('/version.json')?.body) };
}

/** A version.json's fields, or null when it is not one (what the server serves and `svc admin update` asks it for). */
export function parsePanelVersion(body: Buffer | undefined): PanelVersion | null {
  if (!body) return null;
  try {
    const raw = JSON.parse(body.toString('utf8')) as unknown;
    if (typeof raw !== 'object' || raw === null) return null;
    const { version, built_at } = raw as { version?: unknown; built_at?: unknown };
    if (typeof version !== 'string') return null;
    return { version, built_at: typeof built_at === 'string' ? built_at : null };
  } catch {
    return null;
  }
}

/** The build's version.json, read directly (the CLI asks without a server): null when absent or unreadable. */
export async function readPanelVersion(dir: string): Promise<PanelVersion | null> {
  try {
    return parsePanelVersion(await fsp.readFile(join(dir, 'version.json')));
  } catch {
    return null;
  }
}

/** Whether `dir` holds a built panel (its index.html). */
export async function panelBuilt(dir: string): Promise<boolean> {
  try {
    return (await fsp.stat(join(dir, 'index.html'))).isFile();
  } catch {
    return false;
  }
}

/** The codings the client accepts, best first (`br` compresses JS further than gzip); `q=0` refuses one. */
function acceptedEncodings(header: string | undefined): Encoding[] {
  if (!header) return [];
  const ok = new Set<string>();
  for (const part of header.toLowerCase().split(',')) {
    const [name, ...params] = part.trim().split(';');
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    if (q !== undefined && Number(q.slice(2)) === 0) continue;
    ok.add(name!.trim());
  }
  return (['br', 'gzip'] as const).filter((e) => ok.has(e) || ok.has('*'));
}

/**
 * The URL path as a file name, or null when it could only be an attempt to leave the directory:
 * undecodable, NUL or other control characters, backslashes, `.` or `..` segments.
 */
export function panelPathOf(rawPath: string): string | null {
  let path: string;
  try {
    path = decodeURIComponent(rawPath);
  } catch {
    return null;
  }
  if (!path.startsWith('/') || /[\x00-\x1f\\]/.test(path)) return null;
  if (path.split('/').some((s) => s === '.' || s === '..')) return null;
  return path;
}

const text = (status: number, body: string, type = 'text/plain; charset=utf-8'): HttpReply => ({
  status,
  headers: { ...PANEL_SECURITY_HEADERS, 'content-type': type, 'cache-control': REVALIDATE },
  body,
});

const NOT_BUILT = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>svc: panel not built</title></head>
<body><h1>The svc admin panel is not built</h1>
<p>This svc serves its admin API, but the web panel's files are missing. Run <code>npm run build</code> in the svc checkout, then reload this page.</p>
<p>The admin API itself answers under <code>/api/</code>.</p></body></html>
`;

/**
 * Serves the built panel from memory: hashed `/assets/*` cached for a year, everything else
 * revalidated, and `index.html` for any other path that is not the API's (the SPA's own routes,
 * `/agents/main`, `/chat`). The directory is read on first use; while it does not exist it is
 * looked for again on later requests, so a build made after svc started is picked up.
 */
export function panelFiles(opts: PanelFilesOptions): PanelFiles {
  let loading: Promise<Loaded | null> | null = null;
  const loaded = async (): Promise<Loaded | null> => {
    loading ??= loadPanel(opts.dir);
    const result = await loading;
    // Not built yet: the next request looks again (one stat), instead of a 503 until restart.
    if (result === null || !result.files.has('/index.html')) loading = null;
    return result;
  };

  const serve = (file: PanelFile, req: Pick<HttpRequest, 'headers'>, cache: string): HttpReply => {
    const headers: Record<string, string> = { ...PANEL_SECURITY_HEADERS, 'content-type': file.type, 'cache-control': cache, etag: file.etag };
    if (Object.keys(file.encoded).length) headers.vary = 'Accept-Encoding';
    if (req.headers['if-none-match']?.split(',').some((t) => t.trim() === file.etag || t.trim() === `W/${file.etag}`)) {
      return { status: 304, headers, body: '' };
    }
    const encoding = acceptedEncodings(req.headers['accept-encoding']).find((e) => file.encoded[e]);
    if (encoding) return { status: 200, headers: { ...headers, 'content-encoding': encoding }, body: file.encoded[encoding]! };
    return { status: 200, headers, body: file.body };
  };

  return {
    dir: opts.dir,
    async reply(req) {
      if (req.method !== 'GET' && req.method !== 'HEAD') return undefined;
      if (isReservedPath(req.path)) return undefined;
      const path = panelPathOf(req.path);
      if (path === null) return text(404, 'not found\n');
      const panel = await loaded();
      const index = panel?.files.get('/index.html');
      if (!panel || !index) return text(503, NOT_BUILT, 'text/html; charset=utf-8');
      const file = path === '/' ? undefined : panel.files.get(path);
      if (file) return serve(file, req, path.startsWith('/assets/') ? IMMUTABLE : REVALIDATE);
      // A missing script is a 404 the browser reports, not an HTML page it tries to run.
      if (path.startsWith('/assets/')) return text(404, 'not found\n');
      return serve(index, req, REVALIDATE);
    },
  };
}
