import * as fs from 'node:fs';
import { join } from 'node:path';
import { SvcError } from '../schemas/index.js';
import type { HomePaths } from '../store/index.js';
import { parse } from './cli-args.js';

const USAGE = `usage: svc logs [-n N] [-f]

Prints the last N lines (default 50) of the daemon's log, ~/.svc/logs/svc.log.
  -n N        how many lines
  -f          keep printing new lines as they are written (follows the file across rotation)`;

const FOLLOW_POLL_MS = 250;
/** Enough for any -n a person asks for without reading a whole 10 MB file into memory for -n 5. */
const TAIL_CHUNK = 64 * 1024;

export function logFile(paths: HomePaths): string {
  return join(paths.logsDir, 'svc.log');
}

/**
 * The last `n` lines of `file`, reading backwards in chunks. Newlines are counted in the bytes and
 * the text decoded once, so a character split across two chunks stays whole.
 */
export function lastLines(file: string, n: number, end?: number): string[] {
  if (n === 0) return [];
  const fd = fs.openSync(file, 'r');
  try {
    let pos = end ?? fs.fstatSync(fd).size;
    const chunks: Buffer[] = [];
    let newlines = 0;
    while (pos > 0 && newlines <= n) {
      const len = Math.min(TAIL_CHUNK, pos);
      pos -= len;
      const buf = Buffer.alloc(len);
      fs.readSync(fd, buf, 0, len, pos);
      chunks.unshift(buf);
      for (const byte of buf) if (byte === 0x0a) newlines++;
    }
    const lines = Buffer.concat(chunks).toString('utf8').split('\n');
    if (lines[lines.length - 1] === '') lines.pop();
    return lines.slice(-n);
  } finally {
    fs.closeSync(fd);
  }
}

export async function logsCommand(args: string[], paths: HomePaths, out: (s: string) => void = (s) => process.stdout.write(s), stop?: AbortSignal): Promise<number> {
  const { values, positionals } = parse(args, { n: { type: 'string', short: 'n' }, follow: { type: 'boolean', short: 'f' } }, USAGE);
  if (values.help) {
    out(USAGE + '\n');
    return 0;
  }
  if (positionals.length) throw new SvcError('usage', `unexpected argument '${positionals[0]}'\n${USAGE}`);
  const n = values.n === undefined ? 50 : Number(values.n);
  if (!Number.isSafeInteger(n) || n < 0 || n > 1_000_000) throw new SvcError('usage', `-n ${values.n}: expected a whole number from 0 to 1000000\n${USAGE}`);
  const file = logFile(paths);
  if (!fs.existsSync(file) && !values.follow) {
    throw new SvcError('no-log', `${file} does not exist yet; svc writes it once the daemon has started on ${paths.root}`);
  }
  // Following starts where the tail ended: a line appended while the tail was printed is not skipped.
  const start = statOrNull(file);
  if (start) for (const line of lastLines(file, n, start.size)) out(line + '\n');
  if (!values.follow) return 0;
  await follow(file, out, start, stop);
  return 0;
}

function statOrNull(file: string): fs.Stats | null {
  try {
    return fs.statSync(file);
  } catch {
    return null;
  }
}

/**
 * Prints what is appended. The file is followed through an open descriptor, so what the daemon
 * wrote to it just before a rotation is still printed; then the new file (a new inode at the path)
 * is read from its beginning, as is a file truncated under us.
 */
async function follow(file: string, out: (s: string) => void, from: fs.Stats | null, stop?: AbortSignal): Promise<void> {
  let fd = openOrNull(file);
  // Where the tail ended, if the descriptor is on the file the tail was read from.
  let offset = fd !== null && from !== null && fs.fstatSync(fd).ino === from.ino ? from.size : 0;
  try {
    while (!stop?.aborted) {
      await new Promise((r) => setTimeout(r, FOLLOW_POLL_MS));
      if (fd !== null) offset = drain(fd, offset, out);
      let st: fs.Stats;
      try {
        st = fs.statSync(file);
      } catch {
        continue;
      }
      if (fd !== null && st.ino === fs.fstatSync(fd).ino) continue;
      if (fd !== null) fs.closeSync(fd);
      fd = openOrNull(file);
      offset = fd === null ? 0 : drain(fd, 0, out);
    }
  } finally {
    if (fd !== null) fs.closeSync(fd);
  }
}

function openOrNull(file: string): number | null {
  try {
    return fs.openSync(file, 'r');
  } catch {
    return null;
  }
}

/** Prints the descriptor's bytes from `offset` to its end; a file shorter than `offset` was truncated and is read from its start. */
function drain(fd: number, offset: number, out: (s: string) => void): number {
  const size = fs.fstatSync(fd).size;
  const from = size < offset ? 0 : offset;
  if (size === from) return from;
  const buf = Buffer.alloc(size - from);
  const read = fs.readSync(fd, buf, 0, buf.length, from);
  out(buf.subarray(0, read).toString('utf8'));
  return from + read;
}
