import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { PROVIDERS, SvcError, type Provider } from '../../schemas/index.js';
import { findExecutable, PROVIDER_FACTS } from './discovery.js';

/*
 * The part of node-pty a login uses. node-pty is an optional dependency (a native build that may
 * fail on a machine without a toolchain): svc must compile and start without it, and only
 * `svc auth` needs it, so it is loaded on first use and typed here rather than imported.
 */
interface Pty {
  onData(listener: (data: string) => void): { dispose(): void };
  onExit(listener: (e: { exitCode: number; signal?: number }) => void): { dispose(): void };
  resize(cols: number, rows: number): void;
  write(data: string): void;
}
interface PtyModule {
  spawn(file: string, args: string[], opts: { name: string; cols: number; rows: number; cwd: string; env: Record<string, string | undefined> }): Pty;
}
function loadPty(): PtyModule {
  try {
    return createRequire(import.meta.url)('node-pty') as PtyModule;
  } catch (e) {
    throw new SvcError('login-failed', `the native module node-pty did not build or does not load (${(e as Error).message.split('\n')[0]}); it needs a C/C++ toolchain and Node's headers, then npm install again in the svc checkout`);
  }
}

/*
 * `svc auth <provider>`: the provider's own login, run in a pseudo-terminal so its prompts, browser
 * hints and paste-a-code steps behave exactly as in a normal terminal. svc never sees or stores the
 * credentials; the CLI writes them where it always does.
 */

export interface LoginInput extends NodeJS.ReadableStream {
  isTTY?: boolean;
  setRawMode?: (mode: boolean) => unknown;
}

export interface LoginOutput extends NodeJS.WritableStream {
  columns?: number;
  rows?: number;
}

export interface LoginOptions {
  /** Initial size; defaults to the output's size, else 80x24. */
  cols?: number;
  rows?: number;
  stdin: LoginInput;
  stdout: LoginOutput;
  /** Environment for the CLI (PATH is searched for it). Default: this process's. */
  env?: Readonly<Record<string, string | undefined>>;
  cwd?: string;
  /** Replaces the provider's login arguments (e.g. `['setup-token']` for claude). */
  args?: string[];
}

export interface LoginCommand {
  command: string;
  args: string[];
}

export function loginCommand(provider: Provider, args?: readonly string[]): LoginCommand {
  const facts = PROVIDER_FACTS[provider];
  return { command: facts.command, args: [...(args ?? facts.loginArgs)] };
}

export function notInstalledMessage(provider: Provider): string {
  const facts = PROVIDER_FACTS[provider];
  return `${facts.command} is not installed; install it with npm i -g ${facts.npmPackage}`;
}

function checkProvider(provider: unknown): asserts provider is Provider {
  if (!(PROVIDERS as readonly unknown[]).includes(provider)) {
    throw new SvcError('invalid-provider', `provider = ${JSON.stringify(provider) ?? String(provider)} is not allowed (one of ${PROVIDERS.join(', ')})`);
  }
}

function size(n: number | undefined, fallback: number): number {
  return typeof n === 'number' && Number.isInteger(n) && n > 0 && n <= 10000 ? n : fallback;
}

/**
 * Runs the provider's login in a pty wired to the user's terminal: raw-mode keystrokes in, output
 * out, resized when the terminal is (SIGWINCH / the output's `resize` event). Resolves with the CLI's
 * exit code (128 + signal when it was killed). Every failure to start is a rejection (SvcError).
 */
export function runLogin(provider: Provider, opts: LoginOptions): Promise<number> {
  try {
    checkProvider(provider);
  } catch (err) {
    return Promise.reject(err);
  }
  const env = opts.env ?? process.env;
  const { command, args } = loginCommand(provider, opts.args);
  const file = findExecutable(command, env.PATH);
  if (!file) return Promise.reject(new SvcError('provider-not-installed', notInstalledMessage(provider), { provider }));

  const { stdin, stdout } = opts;
  let cols = size(opts.cols ?? stdout.columns, 80);
  let rows = size(opts.rows ?? stdout.rows, 24);

  let term: Pty;
  try {
    term = loadPty().spawn(file, args, {
      name: env.TERM && env.TERM !== 'dumb' ? env.TERM : 'xterm-256color',
      cols,
      rows,
      cwd: opts.cwd ?? env.HOME ?? homedir(),
      env: { ...env },
    });
  } catch (err) {
    return Promise.reject(new SvcError('login-failed', `${file}: could not start ${[command, ...args].join(' ')}: ${(err as Error).message}`, { provider }));
  }

  const wasRaw = stdin.isTTY === true && typeof stdin.setRawMode === 'function';
  // Raw mode: every key (Ctrl-C included) goes to the CLI, which owns the terminal while it runs.
  if (wasRaw) stdin.setRawMode!(true);

  const onInput = (chunk: Buffer | string) => term.write(typeof chunk === 'string' ? chunk : chunk.toString('utf8'));
  const onResize = () => {
    const c = size(stdout.columns, cols);
    const r = size(stdout.rows, rows);
    if (c === cols && r === rows) return;
    cols = c;
    rows = r;
    try {
      term.resize(c, r);
    } catch {
      // the CLI already exited
    }
  };
  stdin.on('data', onInput);
  stdin.resume();
  stdout.on('resize', onResize);
  const watchSignal = stdout === process.stdout;
  if (watchSignal) process.on('SIGWINCH', onResize);

  const dataSub = term.onData((d) => stdout.write(d));

  return new Promise<number>((resolveExit) => {
    term.onExit(({ exitCode, signal }) => {
      dataSub.dispose();
      stdin.off('data', onInput);
      stdin.pause();
      stdout.off('resize', onResize);
      if (watchSignal) process.off('SIGWINCH', onResize);
      if (wasRaw) stdin.setRawMode!(false);
      resolveExit(signal ? 128 + signal : exitCode);
    });
  });
}
