import * as fsp from 'node:fs/promises';
import { isAbsolute, join, normalize, sep } from 'node:path';
import * as v from 'valibot';
import type { Bus } from '../../bus/index.js';
import { SvcError } from '../../schemas/index.js';
import type { HomePaths } from '../../store/index.js';
import { json, parseJsonBody, type HttpRequest, type Route, type StatusTable } from '../http/index.js';

/*
 * SPEC.md "Direct API server": `POST /api/transcribe`; WIRE.md §2: body `{file_path}` or `{path}`,
 * answer `{transcript}`. The file must be a regular file inside the service home (uploads land in
 * its workspace); the transcriber actor runs the backend chain.
 */

/** The transcriber's command (actors/transcriber.ts TRANSCRIPTION_COMMAND); edges may not import actors/. */
export const TRANSCRIBE_COMMAND = 'transcription.transcribe';

export interface TranscribeRoutesDeps {
  bus: Pick<Bus, 'send'>;
  paths: HomePaths;
  /** Throws SvcError 'unauthorized' (or 'forbidden') when the request may not proceed. */
  authorize(req: HttpRequest): void | Promise<void>;
}

/** Codes these routes answer with beyond COMMON_STATUSES; merge into the server's table. */
export const TRANSCRIBE_STATUSES: StatusTable = {
  'transcription-unavailable': 503,
  'invalid-command': 400,
};

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

const within = (path: string, root: string) => path === root || path.startsWith(root.endsWith(sep) ? root : root + sep);

/**
 * The audio file's real path. Relative paths are taken from the workspace. Outside the home is
 * refused before the disk is touched (so a 404 never tells what exists there), and again after
 * symlinks are resolved.
 */
export async function resolveAudioFile(requested: string, paths: HomePaths): Promise<string> {
  const lexical = normalize(isAbsolute(requested) ? requested : join(paths.workspace, requested));
  const outside = () => new SvcError('forbidden', `${requested} is outside the service home; only files under it (e.g. uploads) can be transcribed`);
  if (!within(lexical, normalize(paths.root))) throw outside();
  let real: string;
  let realRoot: string;
  try {
    realRoot = await fsp.realpath(paths.root);
    real = await fsp.realpath(lexical);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EACCES' || code === 'EPERM') throw new SvcError('forbidden', `${requested}: the service may not read it`);
    throw new SvcError('not-found', `${requested}: no such file`);
  }
  if (!within(real, realRoot)) throw outside();
  const st = await fsp.stat(real);
  if (!st.isFile()) throw new SvcError('invalid-path', `${requested} is not a regular file`);
  return real;
}

export function transcribeRoutes(deps: TranscribeRoutesDeps): Route[] {
  const { bus, paths, authorize } = deps;
  return [
    {
      method: 'POST',
      pattern: '/api/transcribe',
      maxBodyBytes: 16 * 1024,
      handler: async (req) => {
        await authorize(req);
        const body = parseJsonBody(req, TranscribeBodySchema);
        const file = await resolveAudioFile((body.file_path ?? body.path)!, paths);
        // No bus deadline: each backend has its own, and the chain may run several.
        const r = await bus.send<{ transcript: string }>({ type: TRANSCRIBE_COMMAND, data: { file_path: file } }, { timeoutMs: 0 });
        return json(200, { transcript: r.transcript });
      },
    },
  ];
}
