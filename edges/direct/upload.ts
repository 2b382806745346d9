import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import * as fsp from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { basename, extname, join } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Busboy, type BusboyInstance } from '@fastify/busboy';
import { lookup } from 'mime-types';
import { SvcError, describeError } from '../../schemas/index.js';

export interface UploadResult {
  path: string;
  name: string;
  mime: string;
  size: number;
  prompt: string;
}

/** Where an upload's bytes are written, and under what name it is kept once complete. */
export interface UploadDestination {
  /** Opens the part's file, not yet under its final name, for the client's file name. */
  open(clientName: string): Promise<OpenedUpload>;
}

export interface OpenedUpload {
  handle: FileHandle;
  /** Its path once committed: what the answer names. */
  final: string;
  /** Gives the complete file its final name. */
  commit(): Promise<void>;
  /** Removes what `open` made for a failed upload. */
  discard(): Promise<void>;
}

export type UploadOptions = { maxFileBytes: number } & (
  | {
      /** `workspace/api_files`; the dated folder is made under it. */
      baseDir: string;
      /** `YYYY-MM-DD` of today in the user's timezone. */
      day: string;
    }
  | { destination: UploadDestination }
);

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

/** Bytes of the stored name after its random prefix: far below any filesystem's 255 with room for `.part`. */
const MAX_NAME_BYTES = 120;

/** The longest prefix of `s` that fits in `bytes` of UTF-8, never splitting a character. */
function cutToBytes(s: string, bytes: number): string {
  let out = '';
  let used = 0;
  for (const ch of s) {
    used += Buffer.byteLength(ch);
    if (used > bytes) break;
    out += ch;
  }
  return out;
}

/**
 * A name safe on any filesystem and in a prompt: the client's base name with anything but letters,
 * digits, `.`, `_`, `-` replaced (so no separator, NUL or control survives), no leading dot, at
 * most 120 bytes of UTF-8 (extension kept), behind a random prefix so two uploads of `photo.jpg`
 * never collide.
 */
export function safeUploadName(clientName: string | null, random: string): string {
  return `${random}_${safeFileName(clientName)}`;
}

/** safeUploadName without its random prefix: for a folder the user chose, where the name itself matters. */
export function safeFileName(clientName: string | null): string {
  const base = (clientName ?? '').split(/[/\\]/).pop()!.normalize('NFC');
  let safe = base.replace(/[^\p{L}\p{N}._-]+/gu, '_').replace(/^[._]+/, '').replace(/_+/g, '_');
  if (Buffer.byteLength(safe) > MAX_NAME_BYTES) {
    const ext = extname(safe);
    const kept = Buffer.byteLength(ext) <= 16 ? ext : '';
    safe = cutToBytes(safe.slice(0, safe.length - ext.length), MAX_NAME_BYTES - Buffer.byteLength(kept)) + kept;
  }
  return safe || 'file';
}

/**
 * The direct API's place for uploads: `baseDir/day/<random>_<safe name>`, written under a dot-name
 * and renamed when complete; a dated folder a failed upload made and left empty goes too.
 */
export function datedUploadFolder(baseDir: string, day: string): UploadDestination {
  const dir = join(baseDir, day);
  const dropEmptyDir = () => fsp.rmdir(dir).catch(() => undefined);
  return {
    open: async (clientName) => {
      const name = safeUploadName(clientName, randomBytes(4).toString('hex'));
      const temp = join(dir, `.${name}.part`);
      const final = join(dir, name);
      let handle: FileHandle;
      try {
        await fsp.mkdir(dir, { recursive: true, mode: 0o700 });
        handle = await fsp.open(temp, 'wx', 0o600);
      } catch (e) {
        await dropEmptyDir();
        throw e;
      }
      return {
        handle,
        final,
        commit: () => fsp.rename(temp, final),
        discard: async () => {
          await fsp.rm(temp, { force: true }).catch(() => undefined);
          await dropEmptyDir();
        },
      };
    },
  };
}

function uploadPrompt(r: Omit<UploadResult, 'prompt'>, caption: string): string {
  const head = `The user uploaded a file through the API: ${r.name} (${r.mime}, ${r.size} bytes), saved at ${r.path}. Open it from that path.`;
  return caption.trim() ? `${head}\n\n${caption.trim()}` : head;
}

/** Busboy's part limits: one file, a caption and a few fields; anything past them is refused. */
const LIMITS = { files: 1, fields: 8, parts: 10, fieldSize: MAX_CAPTION_BYTES, headerPairs: 16, headerSize: 16 * 1024 } as const;

const invalid = (why: string) => new SvcError('invalid-body', `multipart body: ${why}`);

/** A parser for `contentType`: 415 unless exactly multipart/form-data, 400 without a boundary. */
function multipartParser(contentType: string | undefined, maxFileBytes: number): BusboyInstance {
  const ct = contentType ?? '';
  // Busboy itself would take `multipart/form-data-foo` as form data.
  if (ct.split(';')[0]!.trim().toLowerCase() !== 'multipart/form-data') {
    throw new SvcError('unsupported-media-type', `content-type ${JSON.stringify(ct.slice(0, 200))} is not allowed (multipart/form-data with a boundary)`);
  }
  try {
    return new Busboy({
      headers: { 'content-type': ct },
      limits: { ...LIMITS, fileSize: maxFileBytes },
      // A part is a file when it names one (filename or filename*), whatever its type says.
      isPartAFile: (_field, _type, filename) => filename !== undefined,
    });
  } catch (e) {
    throw invalid(`content-type ${JSON.stringify(ct.slice(0, 200))} has no usable boundary (${describeError(e)})`);
  }
}

interface PendingFile {
  stream: Readable;
  clientName: string;
  declaredType: string;
  opened: Promise<OpenedUpload>;
  /** Settles when the part is on disk; its bytes. */
  written: Promise<number>;
}

/**
 * Streams a multipart body (field `file`, optional `caption`) to its destination (by default
 * `baseDir/day/<safe name>`). The file is written under a temporary name and given its own when
 * complete; on any failure (too large → `body-too-large`,
 * malformed → `invalid-body`, client gone) the partial file is removed. Busboy may report an error
 * and then a finish for the same truncated body, so every outcome goes through one `settle`, and
 * only the first counts.
 */
export function receiveUpload(body: AsyncIterable<Buffer>, contentType: string | undefined, opts: UploadOptions): Promise<UploadResult> {
  const bb = multipartParser(contentType, opts.maxFileBytes);
  const destination = 'destination' in opts ? opts.destination : datedUploadFolder(opts.baseDir, opts.day);
  let file: PendingFile | null = null;
  let caption = '';

  return new Promise<UploadResult>((resolve, reject) => {
    let settled = false;
    let stopFeeding!: () => void;
    const feedingStopped = new Promise<void>((r) => (stopFeeding = r));
    const settle = (outcome: { error: unknown } | { ok: PendingFile }) => {
      if (settled) return;
      settled = true;
      stopFeeding();
      bb.removeAllListeners('finish');
      // Late errors of a parser we no longer read are expected and go nowhere.
      bb.on('error', () => undefined);
      void conclude(outcome).then(resolve, reject);
    };

    const conclude = async (outcome: { error: unknown } | { ok: PendingFile }): Promise<UploadResult> => {
      try {
        if ('error' in outcome) throw outcome.error;
        const f = outcome.ok;
        const size = await f.written;
        const opened = await f.opened;
        await opened.commit();
        const stored = basename(opened.final);
        // The client's own base name, for display; `path` has the stored one.
        const name = f.clientName.replace(/[\u0000-\u001f\u007f]/g, '').slice(0, 255) || stored;
        const declared = f.declaredType.toLowerCase();
        const mime = lookup(stored) || (/^[\w.+-]+\/[\w.+-]+$/.test(declared) && declared !== 'text/plain' ? declared : 'application/octet-stream');
        const result = { path: opened.final, name, mime, size };
        return { ...result, prompt: uploadPrompt(result, caption) };
      } catch (e) {
        if (file) {
          // Ends the write (a part cut at the size limit never ends by itself); once `written` has
          // settled the write stream is closed or was never opened, and the partial file can go.
          file.stream.destroy();
          await file.written.catch(() => undefined);
          const opened = await file.opened.catch(() => null);
          await opened?.discard().catch(() => undefined);
        }
        throw e;
      }
    };

    bb.on('file', (field: string, stream: Readable, filename: string, _encoding: string, mimeType: string) => {
      // A truncated body fails the part too; busboy's own 'error' settles, this one must not crash.
      stream.on('error', () => undefined);
      // Parts parsed from the same chunk after the outcome is decided are drained, never stored.
      if (settled) return void stream.resume();
      if (field !== 'file') {
        stream.resume();
        return settle({ error: invalid(`the file part must be the field "file", not ${JSON.stringify(field.slice(0, 80))}`) });
      }
      stream.on('limit', () => settle({ error: new SvcError('body-too-large', `the uploaded file exceeds the limit of ${opts.maxFileBytes} bytes`) }));
      // The file is opened before `written` can settle, so a failure's cleanup never runs ahead
      // of its creation.
      const opened = destination.open(filename);
      opened.catch(() => undefined);
      const written = (async () => {
        const fh = (await opened).handle;
        try {
          // A stream destroyed meanwhile (settled elsewhere) would hang pipeline().
          if (stream.destroyed) throw new Error('upload abandoned');
          await pipeline(stream, fh.createWriteStream());
        } finally {
          // Usually closed by the write stream already; this covers a pipeline never started.
          await fh.close().catch(() => undefined);
        }
        return (stream as Readable & { bytesRead: number }).bytesRead;
      })();
      file = { stream, clientName: filename, declaredType: mimeType, opened, written };
      written.catch((e: unknown) => settle({ error: e }));
    });
    bb.on('field', (field: string, value: string, _nameTruncated: boolean, valueTruncated: boolean) => {
      if (field !== 'caption') return;
      if (valueTruncated) return settle({ error: invalid(`caption exceeds ${MAX_CAPTION_BYTES} bytes`) });
      caption = value;
    });
    bb.on('filesLimit', () => settle({ error: invalid('more than one file part') }));
    bb.on('fieldsLimit', () => settle({ error: invalid(`more than ${LIMITS.fields} fields`) }));
    bb.on('partsLimit', () => settle({ error: invalid(`more than ${LIMITS.parts} parts`) }));
    bb.on('error', (e: unknown) => settle({ error: invalid(describeError(e)) }));
    bb.on('finish', () => settle(file ? { ok: file } : { error: invalid('no file part (field "file" with a filename)') }));

    void (async () => {
      try {
        for await (const chunk of body) {
          if (settled) return;
          // A parser that stopped early never drains; the feeding stops with it.
          if (!bb.write(chunk)) await Promise.race([once(bb, 'drain'), feedingStopped]);
        }
        if (!settled) bb.end();
      } catch (e) {
        settle({ error: e });
      }
    })();
  });
}
