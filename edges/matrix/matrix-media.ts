import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream } from 'node:stream/web';
import type { MatrixClient } from 'matrix-js-sdk';
// The Node build directly: the main entry picks WebCrypto whenever a `window` global exists.
import { decryptAttachment, encryptAttachment } from 'matrix-encrypt-attachment/lib/nodejs.js';
import { extension, lookup } from 'mime-types';
import * as v from 'valibot';
import { SvcError, describeError } from '../../schemas/index.js';
import type { UploadDestination } from '../direct/index.js';

/** As much as Telegram bots may fetch: the agent gets the same media whichever messenger brought them. */
export const MATRIX_DOWNLOAD_LIMIT = 20 * 1024 * 1024;
/** The most the bot sends, whatever the homeserver allows: the whole file is held in memory to encrypt it. */
export const MATRIX_UPLOAD_LIMIT = 50 * 1024 * 1024;

/** `mxc://<server name>/<media id>` (spec: media ids are `[A-Za-z0-9_-]+`); anything else is not fetched. */
const Mxc = v.pipe(v.string(), v.regex(/^mxc:\/\/[A-Za-z0-9.:[\]-]+\/[A-Za-z0-9_-]+$/));
/** Unpadded base64 (padding tolerated) of exactly `bytes` bytes, in the standard or URL-safe alphabet. */
const base64Of = (bytes: number, alphabet: 'std' | 'url') => {
  const chars = Math.ceil((bytes * 4) / 3);
  const pad = '='.repeat((3 - (bytes % 3)) % 3);
  const set = alphabet === 'std' ? 'A-Za-z0-9+/' : 'A-Za-z0-9_-';
  return v.pipe(v.string(), v.regex(new RegExp(`^[${set}]{${chars}}${pad ? `(${pad})?` : ''}$`)));
};

/** An attachment's encryption (spec: EncryptedFile), v2 only: the only version the library decrypts. */
const EncryptedFileSchema = v.object({
  url: Mxc,
  key: v.object({
    kty: v.literal('oct'),
    alg: v.literal('A256CTR'),
    k: base64Of(32, 'url'),
    key_ops: v.pipe(v.array(v.string()), v.check((ops) => ops.includes('decrypt'), 'key_ops lacks decrypt')),
    ext: v.boolean(),
  }),
  iv: base64Of(16, 'std'),
  hashes: v.object({ sha256: base64Of(32, 'std') }),
  v: v.literal('v2'),
});
export type EncryptedFile = v.InferOutput<typeof EncryptedFileSchema>;

const MediaInfo = v.object({
  mimetype: v.optional(v.pipe(v.string(), v.regex(/^[\w.+-]+\/[\w.+-]+$/))),
  size: v.optional(v.pipe(v.number(), v.safeInteger(), v.minValue(0))),
});

/** The part of an `m.room.message` with an attachment that is read; a sender's other keys are ignored. */
const MediaContentSchema = v.intersect([
  v.object({
    msgtype: v.picklist(['m.image', 'm.file', 'm.audio', 'm.video']),
    body: v.string(),
    /** Newer clients put the file name here and a caption in `body`. */
    filename: v.optional(v.string()),
    info: v.optional(MediaInfo),
    'org.matrix.msc3245.voice': v.optional(v.unknown()),
    'org.matrix.msc1767.audio': v.optional(v.unknown()),
  }),
  // Encrypted rooms carry `file`, others `url`. A `file` that is there must be valid: falling back
  // to `url` would store ciphertext as if it were the file.
  v.union([v.object({ file: EncryptedFileSchema }), v.object({ url: Mxc, file: v.optional(v.undefined()) })]),
]);

/** What a message carries besides text, as the agent will be told of it. */
export type MatrixMedia = {
  kind: 'voice' | 'audio' | 'photo' | 'document' | 'video';
  name: string;
  size: number | null;
  mime: string | null;
  source: { url: string } | { file: EncryptedFile };
};

const KIND = { 'm.image': 'photo', 'm.file': 'document', 'm.audio': 'audio', 'm.video': 'video' } as const;

/** The attachment of a decrypted message's content, or null when it has none or is malformed (the sender is untrusted). */
export function mediaOf(content: unknown): MatrixMedia | null {
  const r = v.safeParse(MediaContentSchema, content);
  if (!r.success) return null;
  const c = r.output;
  // Element marks a voice message with both keys; a plain audio file has neither.
  const voice = c.msgtype === 'm.audio' && ('org.matrix.msc3245.voice' in c || 'org.matrix.msc1767.audio' in c);
  const kind = voice ? 'voice' : KIND[c.msgtype];
  const mime = c.info?.mimetype ?? null;
  // A voice message's body is a label ("Voice message"), not a file name.
  const named = voice ? '' : (c.filename ?? c.body).trim();
  const name = named || `${kind}.${(mime && extension(mime)) || 'bin'}`;
  const source = c.file ? { file: c.file } : { url: c.url };
  return { kind, name, size: c.info?.size ?? null, mime, source };
}

/** Passes bytes on until more than `maxBytes` have come, then fails the pipeline (which cancels the download). */
function capped(maxBytes: number, what: string): Transform {
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _enc, done) {
      seen += chunk.length;
      done(seen > maxBytes ? new SvcError('file-too-large', `the ${what} is larger than ${maxBytes} bytes`) : null, chunk);
    },
  });
}

/**
 * Downloads an attachment from the authenticated media endpoint into `destination`, refusing more
 * than `maxBytes` both by what the message declares and by what actually arrives. An encrypted
 * file is held in memory until its hash and decryption succeed, so no unverified byte reaches the
 * disk; any failure leaves nothing behind.
 */
export async function downloadMedia(client: MatrixClient, media: MatrixMedia, destination: UploadDestination, maxBytes = MATRIX_DOWNLOAD_LIMIT): Promise<string> {
  if (media.size !== null && media.size > maxBytes) throw new SvcError('file-too-large', `the ${media.kind} is ${media.size} bytes; at most ${maxBytes} are fetched`);
  const mxc = 'file' in media.source ? media.source.file.url : media.source.url;
  const url = client.mxcUrlToHttp(mxc, undefined, undefined, undefined, false, true, true);
  if (!url) throw new SvcError('not-found', `the ${media.kind} has no download address`);
  const part = await destination.open(media.name);
  let body: Readable | undefined;
  try {
    const res = await fetch(url, { headers: { authorization: `Bearer ${client.getAccessToken() ?? ''}` } }).catch((e: unknown) => {
      throw new SvcError('not-found', `downloading the ${media.kind} failed: ${describeError(e)}`);
    });
    if (!res.ok || !res.body) {
      await res.body?.cancel();
      throw new SvcError('not-found', `downloading the ${media.kind} failed: HTTP ${res.status}`);
    }
    body = Readable.fromWeb(res.body as ReadableStream);
    if ('file' in media.source) {
      const chunks: Buffer[] = [];
      await pipeline(body, capped(maxBytes, media.kind), async (source: AsyncIterable<Buffer>) => {
        for await (const c of source) chunks.push(c);
      });
      let plain: Buffer;
      try {
        // Checks the ciphertext's sha256 against the message's before decrypting (lib/nodejs.js).
        plain = decryptAttachment(Buffer.concat(chunks), media.source.file);
      } catch (e) {
        throw new SvcError('corrupt-file', `the ${media.kind} does not match its encryption info: ${describeError(e)}`);
      }
      await part.handle.writeFile(plain);
      await part.handle.close();
    } else {
      await pipeline(body, capped(maxBytes, media.kind), part.handle.createWriteStream());
    }
    await part.commit();
  } catch (e) {
    // Cancels the download when the failure came before the pipeline did so.
    body?.destroy();
    // Usually closed already (by the write stream, or above); this covers a failure before that.
    await part.handle.close().catch(() => undefined);
    await part.discard();
    throw e;
  }
  return part.final;
}

/** The homeserver's upload limit, capped at ours; ours when it does not say. */
async function uploadLimit(client: MatrixClient): Promise<number> {
  const config = await client.getMediaConfig(true).catch(() => null);
  const theirs = config?.['m.upload.size'];
  return typeof theirs === 'number' && theirs > 0 ? Math.min(theirs, MATRIX_UPLOAD_LIMIT) : MATRIX_UPLOAD_LIMIT;
}

/** The file at `path`, refused beyond `limit` bytes: checked before reading, and by what is read (it may grow meanwhile). */
async function readCapped(path: string, limit: number): Promise<Buffer> {
  const size = await stat(path).then(
    (s) => (s.isFile() ? s.size : null),
    () => null,
  );
  if (size === null) throw new SvcError('file-missing', `${path}: no such file`, { path });
  const tooLarge = () => new SvcError('file-too-large', `${path} is larger than ${limit} bytes, the most a Matrix upload may be`, { path });
  if (size > limit) throw tooLarge();
  const chunks: Buffer[] = [];
  // `end` is inclusive: one byte past the limit is enough to know.
  for await (const c of createReadStream(path, { end: limit })) chunks.push(c as Buffer);
  const bytes = Buffer.concat(chunks);
  if (bytes.length > limit) throw tooLarge();
  return bytes;
}

export type UploadedContent = {
  msgtype: 'm.image' | 'm.file';
  body: string;
  info: { mimetype: string; size: number };
} & ({ url: string } | { file: EncryptedFile });

/**
 * Uploads the file at `path` and returns the `m.room.message` content that sends it. For an
 * encrypted room the homeserver gets only ciphertext, typed application/octet-stream and without
 * the file name; the key travels in the (encrypted) event.
 */
export async function uploadFile(client: MatrixClient, path: string, opts: { encrypted: boolean; isImage: boolean; name: string }): Promise<UploadedContent> {
  const bytes = await readCapped(path, await uploadLimit(client));
  const mimetype = lookup(opts.name) || 'application/octet-stream';
  const head = { msgtype: opts.isImage ? 'm.image' : 'm.file', body: opts.name, info: { mimetype, size: bytes.length } } as const;
  if (!opts.encrypted) {
    const { content_uri } = await client.uploadContent(bytes, { name: opts.name, type: mimetype });
    return { ...head, url: content_uri };
  }
  const { data, info } = await encryptAttachment(bytes);
  const { content_uri } = await client.uploadContent(Buffer.from(data), { type: 'application/octet-stream', includeFilename: false });
  // The library's types are looser than the spec's; parsing states that what it made is what mediaOf accepts.
  return { ...head, file: v.parse(EncryptedFileSchema, { ...info, url: content_uri }) };
}
