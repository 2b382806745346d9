import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { setTimeout as delay } from 'node:timers/promises';
import { readProcStat } from '../../store/index.js';
import { LineSplitter } from '../providers/line-splitter.js';
import type { Invocation } from '../providers/provider.js';

export interface RunHandlers {
  onLine(line: string): void;
  onStderr(chunk: string): void;
  /** A stdout line over the limit was dropped; the stream goes on after it. */
  onOversizeLine?(length: number): void;
}

export interface RunOptions {
  /** Between SIGTERM and SIGKILL of the group. */
  graceMs?: number;
  maxLineBytes?: number;
  /** Start from process.env (default) or from `inv.env` alone. */
  inheritEnv?: boolean;
  /** Tail of stderr kept for `done` (the handler still sees all of it). */
  maxStderrChars?: number;
  /** After the leader exits, how long a straggler holding stdout open may delay `done`. */
  closeWaitMs?: number;
}

export interface ProcessExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
  /** Set when `kill` ended the run. */
  killReason: string | null;
  /** Set when the process never started (missing binary, missing cwd). */
  spawnError: string | null;
}

export interface ProcessHandle {
  /** Also the process-group id. Null when spawning failed. */
  pid: number | null;
  /**
   * The leader's start time (clock ticks since boot, /proc/<pid>/stat field 22): with the pid and
   * the boot id it names this group even after the pid is reused. Null without /proc.
   */
  startTime: number | null;
  done: Promise<ProcessExit>;
  /** SIGTERM the whole group, SIGKILL what is left after the grace period; resolves once the run is done. */
  kill(reason: string): Promise<void>;
}

const POLL_MS = 25;

/**
 * Runs a CLI in its own process group so that everything it starts (shells, tools, their children)
 * can be ended together; killing only the leader would orphan tool processes that keep running.
 */
export function runProcess(inv: Invocation & { cwd: string }, handlers: RunHandlers, opts: RunOptions = {}): ProcessHandle {
  const graceMs = opts.graceMs ?? 3000;
  const maxStderr = opts.maxStderrChars ?? 64 * 1024;
  const closeWaitMs = opts.closeWaitMs ?? 2000;

  const removeTempFiles = () => {
    for (const f of inv.tempFiles) {
      try {
        rmSync(f.path, { force: true });
      } catch {
        // Never written (its directory could not be made): nothing to remove.
      }
    }
  };

  const env = opts.inheritEnv === false ? { ...inv.env } : { ...process.env, ...inv.env };
  let child: ChildProcessWithoutNullStreams;
  try {
    for (const f of inv.tempFiles) {
      mkdirSync(dirname(f.path), { recursive: true });
      writeFileSync(f.path, f.content, { mode: 0o600 });
    }
    child = spawn(inv.command, inv.args, { cwd: inv.cwd, env, detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
  } catch (e) {
    // An unwritable temp file or invalid argv/env (e.g. a NUL byte) throws synchronously; report it like any failed start.
    removeTempFiles();
    const exit: ProcessExit = { code: null, signal: null, stderr: '', killReason: null, spawnError: (e as Error).message };
    return { pid: null, startTime: null, done: Promise.resolve(exit), kill: () => Promise.resolve() };
  }
  const pid = child.pid ?? null;
  // Read now, while the pid surely is our child: spawn returns after fork and exec, and an exited child stays a zombie until reaped.
  const startTime = pid === null ? null : (readProcStat(pid)?.startTime ?? null);

  let stderrTail = '';
  let killReason: string | null = null;
  let spawnError: string | null = null;
  let finished = false;

  const splitter = new LineSplitter(opts.maxLineBytes === undefined ? {} : { maxLineBytes: opts.maxLineBytes });
  const deliver = (items: ReturnType<LineSplitter['push']>) => {
    for (const it of items) {
      if ('line' in it) handlers.onLine(it.line);
      else handlers.onOversizeLine?.(it.length);
    }
  };
  child.stdout.on('data', (chunk: Buffer) => deliver(splitter.push(chunk)));
  child.stdout.on('end', () => deliver(splitter.end()));

  const decoder = new StringDecoder('utf8');
  const onErrText = (text: string) => {
    if (text === '') return;
    stderrTail = (stderrTail + text).slice(-maxStderr);
    handlers.onStderr(text);
  };
  child.stderr.on('data', (chunk: Buffer) => onErrText(decoder.write(chunk)));
  child.stderr.on('end', () => onErrText(decoder.end()));

  // The CLI may exit before reading its prompt; EPIPE then is not our failure.
  child.stdin.on('error', () => {});
  child.stdin.end(inv.stdin ?? undefined);

  const done = new Promise<ProcessExit>((resolve) => {
    let exit: { code: number | null; signal: NodeJS.Signals | null } | null = null;
    const finish = () => {
      if (finished) return;
      finished = true;
      removeTempFiles();
      resolve({ code: exit?.code ?? null, signal: exit?.signal ?? null, stderr: stderrTail, killReason, spawnError });
    };
    child.on('error', (err) => {
      // 'error' without a pid: the process never ran, so no 'close' follows.
      if (pid === null) {
        spawnError = err.message;
        finish();
      }
    });
    child.on('exit', (code, signal) => {
      exit = { code, signal };
      // A detached straggler can hold stdout open forever; do not let it hold the turn too.
      const t = setTimeout(() => {
        child.stdout.destroy();
        child.stderr.destroy();
        finish();
      }, closeWaitMs);
      t.unref();
    });
    child.on('close', (code, signal) => {
      exit = { code, signal };
      finish();
    });
  });

  const groupAlive = (): boolean => {
    if (pid === null) return false;
    try {
      process.kill(-pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  const signalGroup = (sig: NodeJS.Signals) => {
    if (pid === null) return;
    try {
      process.kill(-pid, sig);
    } catch {
      // ESRCH: the group is already gone.
    }
  };

  let killing: Promise<void> | null = null;
  const kill = (reason: string): Promise<void> => {
    if (killing) return killing;
    if (finished && !groupAlive()) return Promise.resolve();
    killReason = reason;
    killing = (async () => {
      signalGroup('SIGTERM');
      const deadline = Date.now() + graceMs;
      while (groupAlive() && Date.now() < deadline) await delay(POLL_MS);
      // Grandchildren may ignore SIGTERM after the leader obeyed it; the group answers for all of them.
      if (groupAlive()) signalGroup('SIGKILL');
      await done;
    })();
    return killing;
  };

  return { pid, startTime, done, kill };
}
