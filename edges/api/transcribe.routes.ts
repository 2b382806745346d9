import { createWriteStream } from 'node:fs';
import * as fsp from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import * as v from 'valibot';
import type { Bus } from '../../bus/index.js';
import { SvcError, TRANSCRIPTION_COMMANDS, type Principal } from '../../schemas/index.js';
import type { HomePaths } from '../../store/index.js';
import { fileAccessMode, json, openRequestedFileFor, withBody, type FileAccessMode, type Route } from '../http/index.js';
import { API_AUTH } from './api-auth.js';

/*
 * SPEC.md "Direct API server": `POST /api/transcribe`; WIRE.md §2: body `{file_path}` or `{path}`,
 * answer `{transcript}`. The file must be one `/files` would serve under `file_access` (uploads land
 * in the workspace); the transcriber actor runs the backend chain on a private copy of it.
 */

export interface TranscribeRoutesDeps {
  bus: Pick<Bus, 'send'>;
  paths: HomePaths;
  /** The `file_access` setting now (hot-reloadable); the file must be one `/files` would serve. */
  fileAccess(): unknown;
}

const PathField = v.pipe(
  v.string('must be a string'),
  v.minLength(1, 'must not be empty'),
  v.maxLength(4096, 'must be at most 4096 characters'),
  v.check((s) => !s.includes('\0'), 'must not contain NUL'),
);

const TranscribeBodySchema = v.pipe(
  v.object({ file_path: v.optional(PathField), path: v.optional(PathField) }),
  v.check((b) => b.file_path !== undefined || b.path !== undefined, 'needs file_path (or its alias path): the audio file to transcribe'),
);

/** Far above any voice note; bounds the private copy a request can make. */
export const MAX_AUDIO_BYTES = 256 * 1024 * 1024;

/**
 * A private copy of the audio file, read from the checked descriptor, so the backend (a command
 * given a path) opens a file nobody can swap for a symlink after the check. Named like the
 * original, since backends derive their output names from it. The caller removes `dir`.
 */
export async function copyAudioFile(principal: Pick<Principal, 'allowed_agents'>, requested: string, mode: FileAccessMode, paths: HomePaths): Promise<{ dir: string; path: string }> {
  const file = await openRequestedFileFor(principal, requested, mode, paths);
  try {
    if (file.size > MAX_AUDIO_BYTES) throw new SvcError('file-too-large', `${requested} is ${file.size} bytes; at most ${MAX_AUDIO_BYTES} can be transcribed`);
    const dir = await fsp.mkdtemp(join(tmpdir(), 'svc-transcribe-in-'));
    const path = join(dir, basename(file.realPath));
    try {
      await pipeline(file.handle.createReadStream({ start: 0, end: MAX_AUDIO_BYTES - 1, autoClose: false }), createWriteStream(path, { flags: 'wx', mode: 0o600 }));
    } catch (e) {
      await fsp.rm(dir, { recursive: true, force: true });
      throw e;
    }
    return { dir, path };
  } finally {
    await file.handle.close().catch(() => undefined);
  }
}

export function transcribeRoutes(deps: TranscribeRoutesDeps): Route[] {
  const { bus, paths } = deps;
  return [
    {
      method: 'POST',
      pattern: '/api/transcribe',
      maxBodyBytes: 16 * 1024,
      // Runs a backend chain on a file: more than reading, so not for a viewer.
      auth: API_AUTH.operator,
      summary: 'Transcribe an audio file (backends in the order of the transcription chain)',
      ...withBody(TranscribeBodySchema, async (body, _req, principal: Principal) => {
        // A caller restricted by allowed_agents reads only its agents' workspaces.
        const audio = await copyAudioFile(principal, (body.file_path ?? body.path)!, fileAccessMode(deps.fileAccess()), paths);
        try {
          // No bus deadline: each backend has its own, and the chain may run several.
          const r = await bus.send(TRANSCRIPTION_COMMANDS.transcribe, { file_path: audio.path }, { timeoutMs: 0 });
          return json(200, { transcript: r.transcript });
        } finally {
          await fsp.rm(audio.dir, { recursive: true, force: true }).catch(() => undefined);
        }
      }),
    },
  ];
}
