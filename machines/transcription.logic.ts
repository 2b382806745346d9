import { TRANSCRIPTION_BACKENDS, type TranscriptionBackend } from '../schemas/index.js';

/*
 * SPEC.md "TranscriptionConfig": the backend chain as pure rules. Which backends apply, in which
 * order, with which arguments, and what to tell the user when none worked. The transcriber
 * (actors/transcription/transcriber.ts) gathers the facts (PATH, keys, model files) and runs what this plans.
 */

export const TRANSCRIPTION_BACKEND_LABELS: Readonly<Record<TranscriptionBackend, string>> = {
  command: 'custom command (transcription.command)',
  api: 'hosted speech-to-text API',
  whisper: 'local whisper CLI',
  'whisper-cpp': 'whisper.cpp CLI',
};

/** Executable names looked up on PATH, first found wins. */
export const WHISPER_EXECUTABLES = ['whisper'] as const;
export const WHISPER_CPP_EXECUTABLES = ['whisper-cli', 'whisper-cpp'] as const;

export const TRANSCRIPTION_API_KEY_VAR = 'OPENAI_API_KEY';
export const TRANSCRIPTION_API_BASE_VAR = 'OPENAI_BASE_URL';
export const TRANSCRIPTION_API_MODEL_VAR = 'OPENAI_TRANSCRIPTION_MODEL';
export const DEFAULT_TRANSCRIPTION_API_BASE = 'https://api.openai.com/v1';
export const DEFAULT_TRANSCRIPTION_API_MODEL = 'whisper-1';
/** Explicit path of a whisper.cpp ggml model file; else `<home>/models/ggml-<model>.bin`. */
export const WHISPER_CPP_MODEL_VAR = 'WHISPER_CPP_MODEL';

/** The part of TranscriptionConfig the chain reads. */
export interface TranscriptionSettings {
  language: string;
  model: string;
  command: string | null;
}

/** What the transcriber found on this machine for one call. */
export interface TranscriptionFacts {
  /** A key for the hosted API is in the environment or `.env`. */
  apiKey: boolean;
  /** Absolute path of the whisper executable, or null. */
  whisper: string | null;
  /** Absolute path of the whisper.cpp executable, or null. */
  whisperCpp: string | null;
  /** A ggml model file for whisper.cpp, or null. */
  whisperCppModel: string | null;
}

export type BackendPlan =
  | { backend: TranscriptionBackend; run: true }
  | { backend: TranscriptionBackend; run: false; reason: string };

/** One backend's outcome, for the error the user sees when the whole chain failed. */
export interface TranscriptionAttempt {
  backend: TranscriptionBackend;
  outcome: 'skipped' | 'failed';
  reason: string;
}

/** Every backend in chain order, each either to run or skipped with the reason. */
export function planTranscription(settings: TranscriptionSettings, facts: TranscriptionFacts): BackendPlan[] {
  const command = settings.command?.trim() ?? '';
  return TRANSCRIPTION_BACKENDS.map((backend): BackendPlan => {
    switch (backend) {
      case 'command':
        return command ? { backend, run: true } : { backend, run: false, reason: 'transcription.command is not set' };
      case 'api':
        return facts.apiKey ? { backend, run: true } : { backend, run: false, reason: `no ${TRANSCRIPTION_API_KEY_VAR} in the environment or .env` };
      case 'whisper':
        return facts.whisper ? { backend, run: true } : { backend, run: false, reason: `${WHISPER_EXECUTABLES.join(', ')} not found on PATH` };
      case 'whisper-cpp':
        if (!facts.whisperCpp) return { backend, run: false, reason: `${WHISPER_CPP_EXECUTABLES.join(', ')} not found on PATH` };
        if (!facts.whisperCppModel) {
          return { backend, run: false, reason: `no model file ${whisperCppModelFiles(settings.model).join(' or ')} (set ${WHISPER_CPP_MODEL_VAR} or put it in the home's models/ folder)` };
        }
        return { backend, run: true };
    }
  });
}

/** Language for backends that take one; `auto` means "let the backend detect it". */
export function explicitLanguage(settings: TranscriptionSettings): string | null {
  const lang = settings.language.trim();
  return lang === '' || lang === 'auto' ? null : lang;
}

/** The environment SPEC.md promises the custom command. */
export function transcriptionEnv(settings: TranscriptionSettings): Record<string, string> {
  return { TRANSCRIPTION_LANGUAGE: settings.language, TRANSCRIPTION_MODEL: settings.model };
}

/**
 * The custom command is a shell command line (it may carry its own arguments); the audio path is
 * passed as a positional parameter, never pasted into the line, so no file name can inject shell.
 */
export function customCommandInvocation(command: string, audioPath: string): { command: string; args: string[] } {
  return { command: '/bin/sh', args: ['-c', `${command.trim()} "$1"`, 'svc-transcribe', audioPath] };
}

export function whisperArgs(audioPath: string, outDir: string, settings: TranscriptionSettings): string[] {
  const lang = explicitLanguage(settings);
  return [audioPath, '--model', settings.model, '--output_format', 'txt', '--output_dir', outDir, ...(lang ? ['--language', lang] : [])];
}

/** The name whisper gives its .txt output: the audio's base name with its last extension replaced. */
export function whisperOutputName(audioPath: string): string {
  const base = audioPath.slice(audioPath.lastIndexOf('/') + 1);
  const dot = base.lastIndexOf('.');
  // Like Python's splitext: a leading dot is part of the name, not an extension.
  const stem = dot > 0 ? base.slice(0, dot) : base;
  return `${stem}.txt`;
}

export function whisperCppArgs(audioPath: string, modelFile: string, settings: TranscriptionSettings): string[] {
  // -nt: no timestamps, -np: nothing but the result on stdout; whisper.cpp understands `-l auto`.
  return ['-m', modelFile, '-f', audioPath, '-nt', '-np', '-l', explicitLanguage(settings) ?? 'auto'];
}

/** ggml model file names whisper.cpp ships for a config model, most likely first. */
export function whisperCppModelFiles(model: string): string[] {
  return model === 'large' ? ['ggml-large-v3.bin', 'ggml-large.bin'] : [`ggml-${model}.bin`];
}

/** `OPENAI_BASE_URL` conventionally ends in `/v1`; a bare server root gets it added. */
export function transcriptionsUrl(base: string): string {
  const trimmed = base.trim().replace(/\/+$/, '');
  return /\/v1$/.test(trimmed) ? `${trimmed}/audio/transcriptions` : `${trimmed}/v1/audio/transcriptions`;
}

/** A usable transcript, or null when the backend printed nothing but whitespace. */
export function cleanTranscript(raw: string): string | null {
  const text = raw
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== '')
    .join('\n');
  return text === '' ? null : text;
}

export const TRANSCRIPTION_INSTALL_HINTS = (envFile: string): string[] => [
  'set transcription.command in config.json to a command that prints the transcript of the file given as its argument',
  `set ${TRANSCRIPTION_API_KEY_VAR} in ${envFile} (hosted API; ${TRANSCRIPTION_API_BASE_VAR} for an OpenAI-compatible server)`,
  'pip install openai-whisper (local whisper CLI; needs ffmpeg)',
  `install whisper.cpp (whisper-cli) and put a ggml model in the home's models/ folder or set ${WHISPER_CPP_MODEL_VAR}`,
];

/** The error text when the chain is exhausted: what was tried, why each failed, how to get one. */
export function unavailableMessage(attempts: readonly TranscriptionAttempt[], envFile: string): string {
  const lines = ['no transcription backend could transcribe the file:'];
  for (const a of attempts) lines.push(`- ${TRANSCRIPTION_BACKEND_LABELS[a.backend]}: ${a.outcome === 'skipped' ? 'skipped, ' : 'failed, '}${a.reason}`);
  lines.push('To enable one:');
  for (const h of TRANSCRIPTION_INSTALL_HINTS(envFile)) lines.push(`- ${h}`);
  return lines.join('\n');
}
