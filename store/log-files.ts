import { constants, type Stats } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';

/*
 * Reading the daemon's log (`logs/svc.log`, rotated to `svc.log.1` … by the log sink) for the admin
 * log endpoints. Only these fixed names inside the logs directory are ever opened, never through a
 * symlink, so no request can make it read anything else.
 */

export const LOG_FILE_NAME = 'svc.log';
/** Rotated files are looked for up to this index (the sink keeps 5); a gap ends the search. */
const MAX_ROTATED = 9;
/** A filtered read gives up after this many bytes, so a rare agent cannot make one request read every file. */
export const MAX_LOG_SCAN_BYTES = 16 * 1024 * 1024;
const CHUNK = 64 * 1024;

/** A record starts with the sink's ISO-8601 time; lines without one continue the record above. */
const RECORD_START = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z) /;

/** One log record: its first line's time (epoch ms) and its lines (more than one for a multi-line message). */
export interface LogRecord {
  at: number;
  lines: string[];
}

export interface LogTailQuery {
  /** At most this many lines, the newest. */
  maxLines: number;
  /** Records to keep (the agent filter); every record is still scanned. */
  keep: (record: LogRecord) => boolean;
  /** Only records strictly newer than this epoch ms. */
  afterMs?: number;
}

export interface LogTail {
  /** Oldest first. */
  lines: string[];
  /** Time of the newest record scanned, kept or not; null when no record was scanned. */
  newestMs: number | null;
}

/** `svc.log`, then `svc.log.1`, … newest first; a missing file ends the list. */
function logFiles(logsDir: string): string[] {
  return [LOG_FILE_NAME, ...Array.from({ length: MAX_ROTATED }, (_, i) => `${LOG_FILE_NAME}.${i + 1}`)].map((n) => join(logsDir, n));
}

/** The lines of one file, newest first, read backwards in chunks; a line is decoded whole, once. */
async function* linesBackwards(path: string, budget: { bytes: number }): AsyncGenerator<string> {
  let fh;
  try {
    fh = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch {
    return; // Missing, a symlink, unreadable: not a log file of ours.
  }
  try {
    const st: Stats = await fh.stat();
    if (!st.isFile()) return;
    let pos = st.size;
    let carry = Buffer.alloc(0);
    while (pos > 0 && budget.bytes > 0) {
      const len = Math.min(CHUNK, pos, budget.bytes);
      pos -= len;
      budget.bytes -= len;
      const buf = Buffer.alloc(len);
      await fh.read(buf, 0, len, pos);
      let data = Buffer.concat([buf, carry]);
      let nl = data.lastIndexOf(0x0a);
      // A trailing newline ends the last line; it does not start an empty one.
      if (pos + len === st.size && nl === data.length - 1) {
        data = data.subarray(0, nl);
        nl = data.lastIndexOf(0x0a);
      }
      while (nl >= 0) {
        yield data.subarray(nl + 1).toString('utf8');
        data = data.subarray(0, nl);
        nl = data.lastIndexOf(0x0a);
      }
      carry = Buffer.from(data);
    }
    if (pos === 0 && carry.length > 0) yield carry.toString('utf8');
  } finally {
    await fh.close();
  }
}

/**
 * The newest records of the daemon's log across its rotated files, filtered, as lines oldest first.
 * Stops at `maxLines`, at the first record not newer than `afterMs`, or after MAX_LOG_SCAN_BYTES.
 */
export async function readLogTail(logsDir: string, q: LogTailQuery): Promise<LogTail> {
  const kept: string[][] = [];
  let keptLines = 0;
  let newestMs: number | null = null;
  const budget = { bytes: MAX_LOG_SCAN_BYTES };
  for (const file of logFiles(logsDir)) {
    let pending: string[] = [];
    for await (const line of linesBackwards(file, budget)) {
      pending.unshift(line);
      const m = RECORD_START.exec(line);
      if (!m) continue;
      const record: LogRecord = { at: Date.parse(m[1]!), lines: pending };
      pending = [];
      if (q.afterMs !== undefined && !(record.at > q.afterMs)) return done();
      newestMs ??= record.at;
      if (!q.keep(record)) continue;
      kept.push(record.lines);
      keptLines += record.lines.length;
      if (keptLines >= q.maxLines) return done();
    }
    if (budget.bytes <= 0) break;
  }
  return done();

  function done(): LogTail {
    return { lines: kept.reverse().flat().slice(-q.maxLines), newestMs };
  }
}

/** The agent a record names in its `agent=` field (the sink writes fields last), or null. */
export function logRecordAgent(record: LogRecord): string | null {
  const text = record.lines.join('\n');
  let agent: string | null = null;
  for (const m of text.matchAll(/(?:^| )agent=(\S+)/g)) agent = m[1]!;
  return agent;
}
