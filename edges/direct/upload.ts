import { randomBytes } from 'node:crypto';
import * as fsp from 'node:fs/promises';
import { extname, join } from 'node:path';
import { SvcError } from '../../schemas/index.js';
import { mimeForName } from './file-access.js';
import { MultipartParser, multipartBoundary } from './multipart.js';

export interface UploadResult {
  path: string;
  name: string;
  mime: string;
  size: number;
  prompt: string;
}

export interface UploadOptions {
  /** `workspace/api_files`; the dated folder is made under it. */
  baseDir: string;
  /** `YYYY-MM-DD` of today in the user's timezone. */
  day: string;
  maxFileBytes: number;
}

const MAX_CAPTION_BYTES = 64 * 1024;

/** `YYYY-MM-DD` in `timeZone` (an IANA name), or in the host's zone when it is empty or unknown. */
export function dayStamp(ms: number, timeZone: string): string {
  const opts: Intl.DateTimeFormatOptions = { year: 'numeric', month: '2-digit', day: '2-digit' };
  let f: Intl.DateTimeFormat;
  try {
    f = new Intl.DateTimeFormat('en-CA', timeZone ? { ...opts, timeZone } : opts);
  } catch {
    f = new Intl.DateTimeFormat('en-CA', opts);
  }
  const parts = Object.fromEntries(f.formatToParts(ms).map((p) => [p.type, p.value]));
  return `${parts.year}-${parts.month}-${parts.day}`;
}

/**
 * A name safe on any filesystem and in a prompt: the client's base name with anything but letters,
 * digits, `.`, `_`, `-` replaced, no leading dot, at most 100 characters (extension kept), behind a
 * random prefix so two uploads of `photo.jpg` never collide.
 */
export function safeUploadName(clientName: string | null, random: string): string {
  const base = (clientName ?? '').split(/[/\\]/).pop()!.normalize('NFC');
  let safe = base.replace(/[^\p{L}\p{N}._-]+/gu, '_').replace(/^[._]+/, '').replace(/_+/g, '_');
  if (safe.length > 100) {
    const ext = extname(safe).slice(0, 16);
    safe = safe.slice(0, 100 - ext.length) + ext;
  }
  return `${random}_${safe || 'file'}`;
}

function uploadPrompt(r: Omit<UploadResult, 'prompt'>, caption: string): string {
  const head = `The user uploaded a file through the API: ${r.name} (${r.mime}, ${r.size} bytes), saved at ${r.path}. Open it from that path.`;
  return caption.trim() ? `${head}\n\n${caption.trim()}` : head;
}

/**
 * Streams a multipart body (field `file`, optional `caption`) to `baseDir/day/<safe name>`. The file
 * is written under a dot-name and renamed when complete; on any failure (too large → `body-too-large`,
 * malformed → `invalid-body`, client gone) the partial file is removed.
 */
export async function receiveUpload(body: AsyncIterable<Buffer>, contentType: string | undefined, opts: UploadOptions): Promise<UploadResult> {
  const parser = new MultipartParser(multipartBoundary(contentType));
  const dir = join(opts.baseDir, opts.day);
  let tempPath: string | null = null;
  let finalPath: string | null = null;
  let clientName: string | null = null;
  let partMime: string | null = null;
  let fh: fsp.FileHandle | null = null;
  let size = 0;
  let fileDone = false;
  const caption: Buffer[] = [];
  let captionBytes = 0;
  let current: 'file' | 'caption' | 'skip' = 'skip';
  try {
    for await (const chunk of body) {
      for (const ev of parser.push(chunk)) {
        if (ev.kind === 'part') {
          if (ev.headers.name === 'file' && ev.headers.filename !== null && !fileDone && !fh) {
            current = 'file';
            clientName = ev.headers.filename;
            partMime = ev.headers.contentType;
            await fsp.mkdir(dir, { recursive: true, mode: 0o700 });
            const name = safeUploadName(clientName, randomBytes(4).toString('hex'));
            finalPath = join(dir, name);
            tempPath = join(dir, `.${name}.part`);
            fh = await fsp.open(tempPath, 'wx', 0o600);
          } else if (ev.headers.name === 'caption' && ev.headers.filename === null) {
            current = 'caption';
          } else {
            current = 'skip';
          }
        } else if (ev.kind === 'data') {
          if (current === 'file') {
            size += ev.chunk.length;
            if (size > opts.maxFileBytes) {
              throw new SvcError('body-too-large', `the uploaded file exceeds the limit of ${opts.maxFileBytes} bytes`);
            }
            await fh!.write(ev.chunk);
          } else if (current === 'caption') {
            captionBytes += ev.chunk.length;
            if (captionBytes > MAX_CAPTION_BYTES) throw new SvcError('invalid-body', `caption exceeds ${MAX_CAPTION_BYTES} bytes`);
            caption.push(Buffer.from(ev.chunk));
          }
        } else if (current === 'file') {
          await fh!.close();
          fh = null;
          fileDone = true;
          current = 'skip';
        }
      }
    }
    parser.end();
    if (!fileDone || !tempPath || !finalPath) throw new SvcError('invalid-body', 'multipart body has no file part (field "file" with a filename)');
    await fsp.rename(tempPath, finalPath);
    tempPath = null;
    const stored = finalPath.slice(dir.length + 1);
    // The client's own base name, for display; `path` has the stored one.
    const name = (clientName ?? '').split(/[/\\]/).pop()!.replace(/[\u0000-\u001f\u007f]/g, '').slice(0, 255) || stored;
    const mime = partMime && /^[\w.+-]+\/[\w.+-]+$/.test(partMime) && partMime !== 'application/octet-stream' ? partMime.toLowerCase() : mimeForName(stored);
    const result = { path: finalPath, name, mime, size };
    return { ...result, prompt: uploadPrompt(result, Buffer.concat(caption).toString('utf8')) };
  } finally {
    if (fh) await fh.close().catch(() => undefined);
    if (tempPath) {
      await fsp.rm(tempPath, { force: true }).catch(() => undefined);
      // A dated folder this failed upload created and left empty goes too.
      await fsp.rmdir(dir).catch(() => undefined);
    }
  }
}
