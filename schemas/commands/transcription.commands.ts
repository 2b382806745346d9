import * as v from 'valibot';
import { defineCommand } from '../command.js';

export const TRANSCRIPTION_BACKENDS = ['command', 'api', 'whisper', 'whisper-cpp'] as const;
export type TranscriptionBackend = (typeof TRANSCRIPTION_BACKENDS)[number];

export const TranscribeCommandSchema = v.strictObject({
  file_path: v.pipe(v.string('must be a string'), v.minLength(1, 'must not be empty'), v.maxLength(4096, 'must be at most 4096 characters')),
});

/** Send it with `timeoutMs: 0`: every backend has its own deadline, and a chain may run several. */
export const TRANSCRIPTION_COMMANDS = {
  transcribe: defineCommand(
    'transcription.transcribe',
    TranscribeCommandSchema,
    v.object({ transcript: v.string(), backend: v.picklist(TRANSCRIPTION_BACKENDS) }),
  ),
} as const;
