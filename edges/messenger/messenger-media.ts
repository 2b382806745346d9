import { SvcError } from '../../schemas/index.js';
import type { UploadDestination } from '../direct/index.js';

/*
 * What a messenger does with an attachment once it has it: the agent is told where it was saved,
 * an image is normalised first (SPEC.md ImageConfig), and a voice message or audio is transcribed,
 * so the agent reads the same prompt whichever messenger the file came through.
 */

export interface MessengerMediaDeps {
  /** Where this message's attachment is placed (a dated folder under the agent's workspace, as the direct API's uploads are). */
  destination(): UploadDestination;
  /** SPEC.md ImageConfig, applied to every incoming image; resolves with the new path. */
  normaliseImage(path: string): Promise<string>;
  /** The transcription chain; rejects with what to install when no backend works. */
  transcribe(path: string): Promise<string>;
}

export type MediaKind = 'voice' | 'audio' | 'photo' | 'document' | 'video';

/** Downloads the attachment (`fetch` places it in the destination given) and says what the agent is told of it. */
export async function mediaPrompt(
  deps: MessengerMediaDeps | undefined,
  media: { kind: MediaKind; mime: string | null },
  fetch: (destination: UploadDestination) => Promise<string>,
  caption: string,
): Promise<string> {
  if (!deps) throw new SvcError('unsupported-media-type', `this bot does not take ${media.kind} messages`);
  let path = await fetch(deps.destination());
  const tail = caption === '' ? '' : `\n\n${caption}`;
  if (media.kind === 'voice' || media.kind === 'audio') {
    const transcript = await deps.transcribe(path);
    return `[${media.kind === 'voice' ? 'Voice message' : 'Audio'} (saved as ${path}), transcribed:]\n${transcript}${tail}`;
  }
  if (media.kind === 'photo' || (media.mime ?? '').startsWith('image/')) {
    path = await deps.normaliseImage(path);
    return `[Image received: ${path}]${tail}`;
  }
  return `[File received: ${path}${media.mime ? ` (${media.mime})` : ''}]${tail}`;
}

/** Work for each chat one piece after the other (downloads and transcription take a while; the order of a chat's messages does not change). */
export class ChatLanes {
  private readonly tails = new Map<string, Promise<void>>();

  constructor(private readonly onError: (key: string, e: unknown) => void) {}

  run(key: string, work: () => Promise<void>): void {
    const tail = (this.tails.get(key) ?? Promise.resolve())
      .then(work)
      .catch((e: unknown) => this.onError(key, e))
      .finally(() => {
        if (this.tails.get(key) === tail) this.tails.delete(key);
      });
    this.tails.set(key, tail);
  }
}
