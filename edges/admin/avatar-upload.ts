import { Busboy, type BusboyInstance } from '@fastify/busboy';
import type { Readable } from 'node:stream';
import { MAX_AVATAR_BYTES, SvcError, describeError } from '../../schemas/index.js';

/*
 * `POST /api/agents/{name}/avatar`: one file part in a multipart/form-data body the server has
 * already capped and buffered. The bytes are returned, not trusted: the handler of the command
 * decides from their signature whether they are a picture.
 */

const invalid = (why: string) => new SvcError('invalid-body', `multipart body: ${why}`);

const LIMITS = { files: 1, fields: 4, parts: 5, fieldSize: 1024, headerPairs: 16, headerSize: 16 * 1024, fileSize: MAX_AVATAR_BYTES } as const;

/** The one file part's bytes; 415 unless the body is multipart/form-data, 413 above the avatar cap. */
export function avatarFromMultipart(body: Buffer, contentType: string | undefined): Promise<Buffer> {
  const ct = contentType ?? '';
  if (ct.split(';')[0]!.trim().toLowerCase() !== 'multipart/form-data') {
    throw new SvcError('unsupported-media-type', `content-type ${JSON.stringify(ct.slice(0, 200))} is not allowed (multipart/form-data with one image file)`);
  }
  let bb: BusboyInstance;
  try {
    bb = new Busboy({ headers: { 'content-type': ct }, limits: LIMITS, isPartAFile: (_field, _type, filename) => filename !== undefined });
  } catch (e) {
    throw invalid(`content-type has no usable boundary (${describeError(e)})`);
  }
  return new Promise<Buffer>((resolve, reject) => {
    let settled = false;
    let file: Promise<Buffer> | null = null;
    const fail = (e: unknown) => {
      if (settled) return;
      settled = true;
      reject(e);
    };
    bb.on('file', (_field: string, stream: Readable) => {
      stream.on('error', () => undefined);
      const chunks: Buffer[] = [];
      stream.on('limit', () => fail(new SvcError('body-too-large', `the avatar exceeds the limit of ${MAX_AVATAR_BYTES} bytes`)));
      file = new Promise((done) => {
        stream.on('data', (c: Buffer) => chunks.push(c));
        stream.on('end', () => done(Buffer.concat(chunks)));
      });
    });
    bb.on('filesLimit', () => fail(invalid('more than one file part')));
    bb.on('partsLimit', () => fail(invalid(`more than ${LIMITS.parts} parts`)));
    bb.on('fieldsLimit', () => fail(invalid(`more than ${LIMITS.fields} fields`)));
    bb.on('error', (e: unknown) => fail(invalid(describeError(e))));
    bb.on('finish', () => {
      if (!file) return fail(invalid('no file part (a part with a filename)'));
      void file.then((bytes) => {
        if (settled) return;
        settled = true;
        resolve(bytes);
      });
    });
    bb.end(body);
  });
}
