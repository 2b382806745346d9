import * as fs from 'node:fs';
import * as fsp from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import type { Subscription } from 'rxjs';
import { causedBy, type Bus } from '../../bus/index.js';
import {
  DEFAULT_TRANSCRIPTION_API_BASE,
  DEFAULT_TRANSCRIPTION_API_MODEL,
  TRANSCRIPTION_API_BASE_VAR,
  TRANSCRIPTION_API_KEY_VAR,
  TRANSCRIPTION_API_MODEL_VAR,
  TRANSCRIPTION_BACKEND_LABELS,
  WHISPER_CPP_EXECUTABLES,
  WHISPER_CPP_MODEL_VAR,
  WHISPER_EXECUTABLES,
  cleanTranscript,
  customCommandInvocation,
  explicitLanguage,
  planTranscription,
  transcriptionEnv,
  transcriptionsUrl,
  unavailableMessage,
  whisperArgs,
  whisperCppArgs,
  whisperCppModelFiles,
  whisperOutputName,
  type TranscriptionAttempt,
  type TranscriptionFacts,
  type TranscriptionSettings,
} from '../../machines/index.js';
import { SvcError, TRANSCRIPTION_COMMANDS, describeError, type TranscriptionBackend } from '../../schemas/index.js';
import { readDotEnv, type HomePaths } from '../../store/index.js';
import { trackProcessGroup } from '../recovery/orphan-groups.js';
import { runProcess } from '../recovery/process-group.js';
import { displayPath, findExecutable } from '../providers/discovery.js';

/*
 * Runs SPEC.md's transcription chain: custom command, hosted API, local whisper, whisper.cpp;
 * first success wins. The rules (order, applicability, arguments, hints) are in
 * machines/transcription.logic.ts; this file does the spawning, reading and fetching.
 */

/** Per backend: a run past this is killed (its whole process group) and the chain moves on. */
export const DEFAULT_TRANSCRIPTION_TIMEOUT_MS = 300_000;
const MAX_TRANSCRIPT_CHARS = 4 * 1024 * 1024;
const STDERR_IN_REASON = 300;

type Env = Readonly<Record<string, string | undefined>>;

export interface TranscriberDeps {
  paths: HomePaths;
  /** Read on every call: the config is hot-reloadable. */
  config(): TranscriptionSettings;
  /** Host environment (PATH, keys); default process.env, read on every call. */
  env?: Env;
  timeoutMs?: number;
  /** Between SIGTERM and SIGKILL when a backend is killed. */
  graceMs?: number;
  /** Told about every backend that was skipped or failed on the way. */
  onAttempt?(attempt: TranscriptionAttempt): void;
  /** Told of each backend process group started; the returned function is called when it ends. */
  trackGroup?(pid: number, startTime: number | null): () => void;
}

export interface TranscriptionResult {
  transcript: string;
  backend: TranscriptionBackend;
  /** Backends skipped or failed before the one that worked. */
  attempts: TranscriptionAttempt[];
}

type Outcome = { ok: true; transcript: string } | { ok: false; reason: string };

interface CallContext {
  audio: string;
  settings: TranscriptionSettings;
  env: Record<string, string>;
  facts: TranscriptionFacts;
  apiKey: string | null;
  tempDir: string;
  timeoutMs: number;
  graceMs: number;
  trackGroup: TranscriberDeps['trackGroup'];
}

const firstExecutable = (names: readonly string[], PATH: string | undefined): string | null => {
  for (const n of names) {
    const p = findExecutable(n, PATH);
    if (p) return p;
  }
  return null;
};

function isFile(path: string): boolean {
  try {
    return fs.statSync(path).isFile();
  } catch {
    return false;
  }
}

function findWhisperCppModel(env: Record<string, string>, paths: HomePaths, model: string): string | null {
  const explicit = env[WHISPER_CPP_MODEL_VAR]?.trim();
  if (explicit) return isFile(explicit) ? explicit : null;
  for (const name of whisperCppModelFiles(model)) {
    const p = join(paths.root, 'models', name);
    if (isFile(p)) return p;
  }
  return null;
}

const short = (s: string): string => {
  const one = s.trim().replace(/\s+/g, ' ');
  return one.length > STDERR_IN_REASON ? `…${one.slice(-STDERR_IN_REASON)}` : one;
};

/** Runs one CLI to completion or the deadline; stdout is collected in full (bounded). */
async function runCli(ctx: CallContext, command: string, args: string[], env: Record<string, string>): Promise<{ ok: true; stdout: string } | { ok: false; reason: string }> {
  const lines: string[] = [];
  let chars = 0;
  let overflow = false;
  const handle = runProcess(
    { command, args, env, stdin: null, tempFiles: [], cwd: ctx.tempDir },
    {
      onLine: (line) => {
        chars += line.length + 1;
        if (chars > MAX_TRANSCRIPT_CHARS) overflow = true;
        else lines.push(line);
      },
      onStderr: () => undefined,
      onOversizeLine: () => {
        overflow = true;
      },
    },
    { inheritEnv: false, graceMs: ctx.graceMs, maxLineBytes: MAX_TRANSCRIPT_CHARS },
  );
  const untrack = handle.pid === null ? undefined : ctx.trackGroup?.(handle.pid, handle.startTime);
  const timer = setTimeout(() => void handle.kill(`timed out after ${ctx.timeoutMs} ms`), ctx.timeoutMs);
  const exit = await handle.done;
  clearTimeout(timer);
  untrack?.();
  if (exit.spawnError) return { ok: false, reason: `could not start: ${exit.spawnError}` };
  if (exit.killReason) return { ok: false, reason: `${exit.killReason}; killed` };
  if (exit.code !== 0) {
    const why = exit.code === null ? `ended by signal ${exit.signal}` : `exited with code ${exit.code}`;
    return { ok: false, reason: exit.stderr.trim() ? `${why}: ${short(exit.stderr)}` : why };
  }
  if (overflow) return { ok: false, reason: `printed more than ${MAX_TRANSCRIPT_CHARS} characters` };
  return { ok: true, stdout: lines.join('\n') };
}

const fromStdout = (r: Awaited<ReturnType<typeof runCli>>): Outcome => {
  if (!r.ok) return r;
  const transcript = cleanTranscript(r.stdout);
  return transcript === null ? { ok: false, reason: 'printed no transcript (empty output)' } : { ok: true, transcript };
};

async function runCustomCommand(ctx: CallContext): Promise<Outcome> {
  const inv = customCommandInvocation(ctx.settings.command ?? '', ctx.audio);
  return fromStdout(await runCli(ctx, inv.command, inv.args, { ...ctx.env, ...transcriptionEnv(ctx.settings) }));
}

async function runWhisper(ctx: CallContext): Promise<Outcome> {
  const outDir = join(ctx.tempDir, 'whisper-out');
  await fsp.mkdir(outDir, { recursive: true });
  const r = await runCli(ctx, ctx.facts.whisper!, whisperArgs(ctx.audio, outDir, ctx.settings), ctx.env);
  if (!r.ok) return r;
  let text: string;
  try {
    text = await fsp.readFile(join(outDir, whisperOutputName(ctx.audio)), 'utf8');
  } catch (e) {
    return { ok: false, reason: `exited 0 but wrote no ${whisperOutputName(ctx.audio)} (${describeError(e)})` };
  }
  const transcript = cleanTranscript(text);
  return transcript === null ? { ok: false, reason: 'produced an empty transcript' } : { ok: true, transcript };
}

async function runWhisperCpp(ctx: CallContext): Promise<Outcome> {
  return fromStdout(await runCli(ctx, ctx.facts.whisperCpp!, whisperCppArgs(ctx.audio, ctx.facts.whisperCppModel!, ctx.settings), ctx.env));
}

/** OpenAI-compatible `POST {base}/audio/transcriptions` (multipart: file, model, language?). */
async function runHostedApi(ctx: CallContext): Promise<Outcome> {
  const url = transcriptionsUrl(ctx.env[TRANSCRIPTION_API_BASE_VAR]?.trim() || DEFAULT_TRANSCRIPTION_API_BASE);
  const form = new FormData();
  form.append('file', new Blob([await fsp.readFile(ctx.audio)]), basename(ctx.audio));
  form.append('model', ctx.env[TRANSCRIPTION_API_MODEL_VAR]?.trim() || DEFAULT_TRANSCRIPTION_API_MODEL);
  const lang = explicitLanguage(ctx.settings);
  if (lang) form.append('language', lang);
  form.append('response_format', 'json');
  let res: Response;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${ctx.apiKey}` },
      body: form,
      signal: AbortSignal.timeout(ctx.timeoutMs),
    });
  } catch (e) {
    const timedOut = (e as Error).name === 'TimeoutError';
    return { ok: false, reason: timedOut ? `${url} gave no answer within ${ctx.timeoutMs} ms` : `${url} unreachable: ${describeError(e)}` };
  }
  const body = await res.text().catch(() => '');
  if (!res.ok) return { ok: false, reason: `${url} answered HTTP ${res.status}: ${short(apiErrorText(body))}` };
  let text: unknown;
  try {
    text = (JSON.parse(body) as { text?: unknown }).text;
  } catch {
    return { ok: false, reason: `${url} answered with something that is not JSON` };
  }
  const transcript = typeof text === 'string' ? cleanTranscript(text) : null;
  return transcript === null ? { ok: false, reason: `${url} returned no text` } : { ok: true, transcript };
}

function apiErrorText(body: string): string {
  try {
    const msg = (JSON.parse(body) as { error?: { message?: unknown } }).error?.message;
    if (typeof msg === 'string') return msg;
  } catch {
    // not JSON: show the raw start
  }
  return body || '(empty body)';
}

const RUNNERS: Record<TranscriptionBackend, (ctx: CallContext) => Promise<Outcome>> = {
  command: runCustomCommand,
  api: runHostedApi,
  whisper: runWhisper,
  'whisper-cpp': runWhisperCpp,
};

/**
 * Transcribes one audio file through the chain. Throws SvcError 'not-found' when the file is
 * missing and 'transcription-unavailable' (naming every backend and how to install one) when no
 * backend produced a transcript.
 */
export async function transcribe(deps: TranscriberDeps, audioPath: string): Promise<TranscriptionResult> {
  if (!isFile(audioPath)) throw new SvcError('not-found', `${audioPath}: no such audio file`);
  const settings = deps.config();
  const host = deps.env ?? process.env;
  // The child gets the host environment with `.env` filling gaps, as the provider CLIs do.
  const env: Record<string, string> = { ...readDotEnv(deps.paths.envFile) };
  for (const [k, val] of Object.entries(host)) if (val !== undefined) env[k] = val;
  const apiKey = env[TRANSCRIPTION_API_KEY_VAR]?.trim() || null;
  const facts: TranscriptionFacts = {
    apiKey: apiKey !== null,
    whisper: firstExecutable(WHISPER_EXECUTABLES, env.PATH),
    whisperCpp: firstExecutable(WHISPER_CPP_EXECUTABLES, env.PATH),
    whisperCppModel: findWhisperCppModel(env, deps.paths, settings.model),
  };
  const tempDir = await fsp.mkdtemp(join(tmpdir(), 'svc-transcribe-'));
  const ctx: CallContext = {
    audio: audioPath,
    settings,
    env,
    facts,
    apiKey,
    tempDir,
    timeoutMs: deps.timeoutMs ?? DEFAULT_TRANSCRIPTION_TIMEOUT_MS,
    graceMs: deps.graceMs ?? 3000,
    trackGroup: deps.trackGroup,
  };
  const attempts: TranscriptionAttempt[] = [];
  const note = (a: TranscriptionAttempt) => {
    attempts.push(a);
    deps.onAttempt?.(a);
  };
  try {
    for (const step of planTranscription(settings, facts)) {
      if (!step.run) {
        note({ backend: step.backend, outcome: 'skipped', reason: step.reason });
        continue;
      }
      let outcome: Outcome;
      try {
        outcome = await RUNNERS[step.backend](ctx);
      } catch (e) {
        outcome = { ok: false, reason: describeError(e) };
      }
      if (outcome.ok) return { transcript: outcome.transcript, backend: step.backend, attempts };
      note({ backend: step.backend, outcome: 'failed', reason: outcome.reason });
    }
  } finally {
    await fsp.rm(tempDir, { recursive: true, force: true }).catch(() => undefined);
  }
  throw new SvcError('transcription-unavailable', unavailableMessage(attempts, displayPath(deps.paths.envFile, homedir())), { attempts });
}

/**
 * Registers `transcription.transcribe {file_path}` → `{transcript, backend}` on the bus. Send it
 * with `timeoutMs: 0`: every backend has its own deadline, and a chain may run several.
 */
export function startTranscriber(deps: TranscriberDeps & { bus: Bus }): Subscription {
  const { bus } = deps;
  return bus.handle(TRANSCRIPTION_COMMANDS.transcribe, 'transcriber', async (cmd) => {
    const { data } = cmd;
    const result = await transcribe(
      {
        ...deps,
        onAttempt: (a) => {
          bus.emitLog('info', `transcription: ${TRANSCRIPTION_BACKEND_LABELS[a.backend]} ${a.outcome}: ${a.reason}`, { backend: a.backend, outcome: a.outcome });
          deps.onAttempt?.(a);
        },
        trackGroup: (pid, startTime) => trackProcessGroup(bus, 'transcription', pid, startTime, causedBy(cmd)),
      },
      data.file_path,
    );
    return { transcript: result.transcript, backend: result.backend };
  });
}
