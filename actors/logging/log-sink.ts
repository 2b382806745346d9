import { mkdirSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import { filter, type Subscription } from 'rxjs';
import { createStream, type RotatingFileStream } from 'rotating-file-stream';
import type { Bus, LogLevel, LogLine } from '../../bus/index.js';
import { LOG_CHUNKS } from '../../schemas/index.js';

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

/** Config `log_level` uses Python-style names (INFO, WARNING); accept both spellings. */
export function parseLogLevel(name: string | undefined): LogLevel {
  switch ((name ?? 'info').toLowerCase()) {
    case 'debug':
      return 'debug';
    case 'warn':
    case 'warning':
      return 'warn';
    case 'error':
    case 'critical':
      return 'error';
    default:
      return 'info';
  }
}

export function formatLogLine(at: number, line: LogLine): string {
  const { level, msg, ...fields } = line;
  const extra = Object.entries(fields)
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join(' ');
  return `${new Date(at).toISOString()} ${level.toUpperCase().padEnd(5)} ${msg}${extra ? ' ' + extra : ''}\n`;
}

/** `svc.log` is rotated past this size, keeping this many older files (`svc.log.1` newest): at most 60 MB. */
export const LOG_ROTATE_SIZE = '10M';
export const LOG_ROTATE_KEEP = 5;

/**
 * Writes the bus's log lines to stderr and to a file the admin log endpoints read. Logs travel on
 * the bus so that edges and machines' hosts can log without importing this module.
 */
export class LogSink {
  private readonly sub: Subscription;
  private readonly file: RotatingFileStream | null;
  private fileFailed = false;
  level: LogLevel;

  /** `rotateSize` as rotating-file-stream reads it (`10M`, `300B`); tests use a small one. */
  constructor(bus: Bus, opts: { level: LogLevel; file?: string; stderr?: boolean; rotateSize?: string }) {
    this.level = opts.level;
    if (opts.file) mkdirSync(dirname(opts.file), { recursive: true, mode: 0o700 });
    const name = opts.file ? basename(opts.file) : '';
    // Classical logrotate naming (svc.log, svc.log.1, ...): what an operator and `svc logs` expect.
    this.file = opts.file
      ? createStream((index: number | Date | null) => (typeof index === 'number' && index > 0 ? `${name}.${index}` : name), {
          path: dirname(opts.file),
          size: opts.rotateSize ?? LOG_ROTATE_SIZE,
          rotate: LOG_ROTATE_KEEP,
          mode: 0o600,
        })
      : null;
    // A log file that fails (disk full, directory removed) must not crash the daemon or hang close().
    this.file?.on('error', (e) => {
      if (!this.fileFailed) process.stderr.write(`svc: log file ${opts.file}: ${e.message}; logging to stderr only\n`);
      this.fileFailed = true;
    });
    const toStderr = opts.stderr ?? true;
    this.sub = bus.transient$.pipe(filter((m) => m.type === LOG_CHUNKS.line)).subscribe((m) => {
      const line = m.data as LogLine;
      if (RANK[line.level] < RANK[this.level]) return;
      const text = formatLogLine(bus.now(), line);
      if (toStderr) process.stderr.write(text);
      if (!this.fileFailed) this.file?.write(text);
    });
  }

  async close(): Promise<void> {
    this.sub.unsubscribe();
    const file = this.file;
    if (!file || file.destroyed) return;
    await new Promise<void>((resolve) => {
      file.once('close', resolve);
      file.once('error', () => resolve());
      file.end();
    });
  }
}
