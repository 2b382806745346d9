import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const SERVER = fileURLToPath(new URL('./server-process.js', import.meta.url));
export const FIXTURES = fileURLToPath(new URL('../../bench/fixtures', import.meta.url));

/** A bench/server-process.ts child, driven over its stdin/stdout. */
export interface ServerHandle {
  port: number;
  token: string;
  child: ChildProcess;
  /** The server's own CPU so far (all its threads), µs. */
  cpu(): Promise<{ user: number; system: number }>;
  /** Resident set size after full collections, bytes. */
  rss(): Promise<number>;
  stop(): Promise<void>;
}

export async function startServer(mode: 'daemon' | 'echo' | 'relay', home = '', env: Record<string, string> = {}, nodeFlags: string[] = []): Promise<ServerHandle> {
  // BENCH_CPU_PROF=<dir>: a V8 CPU profile of each server process, for finding the hot path.
  const prof = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
  const child = spawn(process.execPath, ['--expose-gc', ...prof, ...nodeFlags, SERVER, mode, home, `${FIXTURES}/bin`, JSON.stringify(env)], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  const next = async <T>(): Promise<T> => {
    const r = await lines.next();
    if (r.done) throw new Error(`bench ${mode} server exited`);
    return JSON.parse(r.value as string) as T;
  };
  const ask = <T>(cmd: string): Promise<T> => {
    child.stdin!.write(cmd + '\n');
    return next<T>();
  };
  const { port, token } = await next<{ port: number; token: string }>();
  return {
    port,
    token,
    child,
    cpu: () => ask<{ user: number; system: number }>('cpu'),
    rss: async () => (await ask<{ rss: number }>('mem')).rss,
    stop: async () => {
      const exited = new Promise((r) => child.once('exit', r));
      child.stdin!.end('stop\n');
      await exited;
    },
  };
}
