import type { StreamEvent, TurnFile, TurnStatus, TurnUsage } from '../schemas/index.js';

/** What a turn has gathered from the CLI so far; folded from stream events, one at a time. */
export interface TurnProgress {
  sessionId: string | null;
  /** Text streamed so far, in order. */
  streamed: string;
  /** The last `result` wins (PROVIDERS.md). */
  result: Extract<StreamEvent, { kind: 'result' }> | null;
  malformed: number;
}

export const EMPTY_PROGRESS: TurnProgress = { sessionId: null, streamed: '', result: null, malformed: 0 };

export function foldStreamEvent(p: TurnProgress, e: StreamEvent): TurnProgress {
  switch (e.kind) {
    case 'init':
      return { ...p, sessionId: e.sessionId || p.sessionId };
    case 'text':
      return { ...p, streamed: p.streamed + e.text };
    case 'result':
      return { ...p, result: e, sessionId: e.sessionId || p.sessionId };
    case 'malformed':
      return { ...p, malformed: p.malformed + 1 };
    default:
      return p;
  }
}

/** `text` followed by the text that `events` stream, in order. */
export function streamedText(text: string, events: readonly StreamEvent[]): string {
  for (const e of events) if (e.kind === 'text') text += e.text;
  return text;
}

/** Streamed text the log does not hold yet is at most this old or this long: what a crash can lose. */
export const CHECKPOINT_INTERVAL_MS = 1_000;
export const CHECKPOINT_MAX_CHARS = 16 * 1024;

/**
 * Whether text streamed but not yet checkpointed (`unsaved` chars, plus what `events` bring) is
 * saved now (past the size cap, or when a tool call follows it: a natural pause), later (by the interval
 * timer), or not at all (nothing new). Live deltas stay off the log; this bounds the writes.
 */
export function checkpointDue(unsaved: number, events: readonly StreamEvent[]): 'now' | 'later' | 'none' {
  let pending = unsaved;
  let textBeforeTool = false;
  for (const e of events) {
    if (e.kind === 'text') pending += e.text.length;
    else if (e.kind === 'tool' && pending > 0) textBeforeTool = true;
  }
  if (pending === 0) return 'none';
  return pending >= CHECKPOINT_MAX_CHARS || textBeforeTool ? 'now' : 'later';
}

export interface ProcessExitInfo {
  code: number | null;
  signal: string | null;
  /** Set when svc itself killed the process (abort, timeout, shutdown). */
  killedByUs: boolean;
  errorText: string;
  spawnError: string | null;
}

/** What to do when the CLI process ended while the turn was running (not while svc was killing it). */
export type ExitDecision =
  | { next: 'completed'; text: string; isError: false }
  | { next: 'failed'; reason: string; error: string; text: string; exitCode?: number }
  | { next: 'recover' }
  | { next: 'fallback' };

/**
 * PROVIDERS.md's rules, in order: a spawn failure fails; SIGKILL from outside (OOM killer, a
 * user) resets the session and retries once; a result decides; streamed text without a result
 * is the answer; nothing at all is retried once without streaming; otherwise the exit fails.
 */
export function decideExit(p: TurnProgress, exit: ProcessExitInfo, opts: { recovered: boolean; fellBack: boolean }): ExitDecision {
  if (exit.spawnError) return { next: 'failed', reason: 'spawn-failed', error: exit.spawnError, text: '' };
  if (exit.signal === 'SIGKILL' && !exit.killedByUs && !opts.recovered) return { next: 'recover' };
  if (p.result) {
    const text = p.result.text || p.streamed;
    if (p.result.isError) return { next: 'failed', reason: 'cli-error', error: text || exit.errorText || 'the CLI reported an error', text };
    return { next: 'completed', text, isError: false };
  }
  const exitedBadly = (exit.code !== null && exit.code !== 0) || exit.signal !== null;
  if (p.streamed.trim()) {
    if (!exitedBadly) return { next: 'completed', text: p.streamed, isError: false };
    return { next: 'failed', reason: 'exit-code', error: exit.errorText || describeExit(exit), text: p.streamed, ...exitCodeOf(exit) };
  }
  if (exitedBadly) return { next: 'failed', reason: 'exit-code', error: exit.errorText || describeExit(exit), text: '', ...exitCodeOf(exit) };
  if (!opts.fellBack) return { next: 'fallback' };
  return { next: 'failed', reason: 'empty-output', error: 'the CLI exited without printing an answer', text: '' };
}

/** Cron run statuses name the code (`error:exit_<rc>`); a signal has none. */
function exitCodeOf(exit: ProcessExitInfo): { exitCode?: number } {
  return exit.code !== null && exit.code !== 0 ? { exitCode: exit.code } : {};
}

function describeExit(exit: ProcessExitInfo): string {
  return exit.signal ? `the CLI was killed by ${exit.signal}` : `the CLI exited with code ${exit.code}`;
}

const IMAGE = /\.(png|jpe?g|gif|webp|bmp|svg|heic|avif)$/i;
const FILE_TAG = /<file:(\/[^>\n]+)>/g;

/** `<file:/abs/path>` tags name files the agent wants delivered; the text keeps them for transports that render tags. */
export function extractFiles(text: string): TurnFile[] {
  const seen = new Set<string>();
  const files: TurnFile[] = [];
  for (const m of text.matchAll(FILE_TAG)) {
    const path = m[1]!.trim();
    if (seen.has(path) || path.split('/').includes('..')) continue;
    seen.add(path);
    files.push({ path, name: path.slice(path.lastIndexOf('/') + 1), is_image: IMAGE.test(path) });
  }
  return files;
}

export function usageOf(p: TurnProgress): TurnUsage | null {
  if (!p.result) return null;
  const u = p.result.usage;
  return {
    input_tokens: u.input_tokens,
    output_tokens: u.output_tokens,
    ...(u.cached_tokens !== undefined ? { cached_tokens: u.cached_tokens } : {}),
  };
}

export const FINAL_STATUSES: readonly TurnStatus[] = ['completed', 'failed', 'timed_out', 'aborted'];
