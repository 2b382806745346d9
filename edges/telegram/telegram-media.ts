import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Api } from 'grammy';
import type { Message } from 'grammy/types';
import { SvcError } from '../../schemas/index.js';
import type { UploadDestination } from '../direct/index.js';

/** The Bot API hands bots files up to 20 MB. */
export const TELEGRAM_DOWNLOAD_LIMIT = 20 * 1024 * 1024;

/** What a message carries besides text, as the agent will be told of it. */
export type TelegramMedia = { kind: 'voice' | 'audio' | 'photo' | 'document' | 'video'; file_id: string; name: string; size: number | null; mime: string | null };

/** The attachment of a message, if any; a photo is the largest size Telegram offers. */
export function mediaOf(msg: Message): TelegramMedia | null {
  if (msg.voice) return { kind: 'voice', file_id: msg.voice.file_id, name: 'voice.ogg', size: msg.voice.file_size ?? null, mime: msg.voice.mime_type ?? 'audio/ogg' };
  if (msg.audio) return { kind: 'audio', file_id: msg.audio.file_id, name: msg.audio.file_name ?? 'audio', size: msg.audio.file_size ?? null, mime: msg.audio.mime_type ?? null };
  if (msg.photo?.length) {
    const p = [...msg.photo].sort((a, b) => b.width * b.height - a.width * a.height)[0]!;
    return { kind: 'photo', file_id: p.file_id, name: 'photo.jpg', size: p.file_size ?? null, mime: 'image/jpeg' };
  }
  if (msg.video) return { kind: 'video', file_id: msg.video.file_id, name: msg.video.file_name ?? 'video.mp4', size: msg.video.file_size ?? null, mime: msg.video.mime_type ?? null };
  if (msg.document) return { kind: 'document', file_id: msg.document.file_id, name: msg.document.file_name ?? 'file', size: msg.document.file_size ?? null, mime: msg.document.mime_type ?? null };
  return null;
}

/**
 * Downloads an attachment to `destination` (as the direct API's uploads are placed: a safe, unique
 * name, written under a part name and renamed when complete), refusing more than `maxBytes` both by
 * what Telegram says and by what actually arrives; a failed download leaves nothing behind.
 */
export async function downloadMedia(api: Api, fileRoot: string, media: TelegramMedia, destination: UploadDestination, maxBytes = TELEGRAM_DOWNLOAD_LIMIT): Promise<string> {
  if (media.size !== null && media.size > maxBytes) throw new SvcError('file-too-large', `the ${media.kind} is ${media.size} bytes; bots can fetch at most ${maxBytes}`);
  const file = await api.getFile(media.file_id);
  if (!file.file_path) throw new SvcError('not-found', `Telegram gave no download for the ${media.kind}`);
  const res = await fetch(`${fileRoot}/${file.file_path.split('/').map(encodeURIComponent).join('/')}`, { headers: { connection: 'close' } });
  if (!res.ok || !res.body) throw new SvcError('not-found', `downloading the ${media.kind} failed: HTTP ${res.status}`);
  const part = await destination.open(media.name);
  let seen = 0;
  const cap = new Transform({
    transform(chunk: Buffer, _enc, done) {
      seen += chunk.length;
      done(seen > maxBytes ? new SvcError('file-too-large', `the ${media.kind} is larger than ${maxBytes} bytes`) : null, chunk);
    },
  });
  try {
    await pipeline(Readable.fromWeb(res.body as import('node:stream/web').ReadableStream), cap, part.handle.createWriteStream());
  } catch (e) {
    // Usually closed by the write stream already, as upload.ts's receiveUpload does it.
    await part.handle.close().catch(() => undefined);
    await part.discard();
    throw e;
  }
  await part.commit();
  return part.final;
}
