import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as fsp from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { SvcError } from '../schemas/index.js';

/**
 * The Standard Schema surface every valibot schema exposes (`schema['~standard']`), so store/
 * validates with the project's schemas without importing valibot itself.
 */
export interface StandardSchema<T> {
  readonly '~standard': {
    readonly validate: (value: unknown) => unknown;
    readonly types?: { readonly output: T } | undefined;
  };
}
export type SchemaOutput<S> = S extends { readonly '~standard': { readonly types?: { readonly output: infer T } | undefined } } ? T : unknown;

interface Issue {
  message: string;
  path?: readonly unknown[];
}

/** Files SPEC.md names are small; anything this big is not one of them and would stall the daemon. */
export const MAX_JSON_FILE_BYTES = 32 * 1024 * 1024;

export interface ReadJsonOptions<T> {
  /** Value to use when the file does not exist; without it a missing file is an error. */
  missing?: () => T;
}

export interface WriteJsonOptions {
  /** Final file mode, enforced even when the file existed with a looser one. 0o600 unless told. */
  mode?: number;
  /** Mode for parent directories this call creates (existing ones are left alone). 0o700 unless told. */
  dirMode?: number;
}

function issuePath(issue: Issue): string {
  const parts = (issue.path ?? []).map((p) => (typeof p === 'object' && p !== null && 'key' in p ? (p as { key: unknown }).key : p));
  let out = '';
  for (const k of parts) out += typeof k === 'number' ? `[${k}]` : out ? `.${String(k)}` : String(k);
  return out || '(top level)';
}

function parseAndCheck<S extends StandardSchema<unknown>>(path: string, text: string, schema: S): SchemaOutput<S> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new SvcError('corrupt-file', `${path}: not valid JSON (${(err as Error).message}); fix or remove it — it was left untouched`, { path });
  }
  const result = schema['~standard'].validate(value);
  if (result instanceof Promise) throw new SvcError('invalid-schema', `${path}: the schema for this file is asynchronous; file schemas must validate synchronously`);
  const issues = (result as { issues?: readonly Issue[] }).issues;
  if (issues && issues.length > 0) {
    const first = issues[0]!;
    const more = issues.length > 1 ? ` (and ${issues.length - 1} more problem${issues.length > 2 ? 's' : ''})` : '';
    throw new SvcError('corrupt-file', `${path}: ${issuePath(first)}: ${first.message}${more}; fix the file — it was left untouched`, {
      path,
      field: issuePath(first),
      issues: issues.map((i) => ({ field: issuePath(i), message: i.message })),
    });
  }
  return (result as { value: SchemaOutput<S> }).value;
}

function missingOr<T>(path: string, opts: ReadJsonOptions<T> | undefined): T {
  if (opts?.missing) return opts.missing();
  throw new SvcError('file-missing', `${path}: file not found`, { path });
}

function tooBig(path: string, size: number): SvcError {
  return new SvcError('file-too-large', `${path}: ${size} bytes is over the ${MAX_JSON_FILE_BYTES}-byte limit for a JSON file; it was left untouched`, { path, size });
}

/** Reads and validates a JSON file; never modifies it, whatever is wrong with it. */
export async function readJsonFile<S extends StandardSchema<unknown>>(path: string, schema: S, opts?: ReadJsonOptions<SchemaOutput<S>>): Promise<SchemaOutput<S>> {
  let text: string;
  try {
    const st = await fsp.stat(path);
    if (st.isDirectory()) throw new SvcError('corrupt-file', `${path}: is a directory, expected a JSON file`, { path });
    if (st.size > MAX_JSON_FILE_BYTES) throw tooBig(path, st.size);
    text = await fsp.readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return missingOr(path, opts);
    throw err;
  }
  return parseAndCheck(path, text, schema);
}

export function readJsonFileSync<S extends StandardSchema<unknown>>(path: string, schema: S, opts?: ReadJsonOptions<SchemaOutput<S>>): SchemaOutput<S> {
  const text = readJsonTextSync(path);
  return text === null ? missingOr(path, opts) : parseAndCheck(path, text, schema);
}

/** A JSON file's text as readJsonFileSync reads it (a directory or an oversized file refused); null when missing. */
export function readJsonTextSync(path: string): string | null {
  try {
    const st = fs.statSync(path);
    if (st.isDirectory()) throw new SvcError('corrupt-file', `${path}: is a directory, expected a JSON file`, { path });
    if (st.size > MAX_JSON_FILE_BYTES) throw tooBig(path, st.size);
    return fs.readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

/** Text read by readJsonTextSync, parsed and validated as readJsonFileSync would. */
export function parseJsonText<S extends StandardSchema<unknown>>(path: string, text: string, schema: S): SchemaOutput<S> {
  return parseAndCheck(path, text, schema);
}

function serialise(path: string, data: unknown): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(data, null, 2);
  } catch (err) {
    throw new SvcError('invalid-json', `${path}: cannot serialise the value: ${(err as Error).message}; nothing was written`, { path });
  }
  if (text === undefined) throw new SvcError('invalid-json', `${path}: the value (${typeof data}) has no JSON form; nothing was written`, { path });
  return `${text}\n`;
}

// Unique per process and call, so concurrent writers (in or across processes) never share a temp file.
const tempName = (path: string) => join(dirname(path), `.${basename(path)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);

/**
 * Writes JSON so readers see the old or the new file, never a mix: temp file in the same
 * directory, fsync, chmod, rename over, fsync the directory.
 */
export async function writeJsonAtomic(path: string, data: unknown, opts: WriteJsonOptions = {}): Promise<void> {
  const mode = opts.mode ?? 0o600;
  const text = serialise(path, data);
  const dir = dirname(path);
  await fsp.mkdir(dir, { recursive: true, mode: opts.dirMode ?? 0o700 });
  const tmp = tempName(path);
  const fh = await fsp.open(tmp, 'wx', mode);
  try {
    try {
      await fh.writeFile(text, 'utf8');
      // The open mode is filtered by umask; set it explicitly so 0644 files are not left 0600 or worse.
      await fh.chmod(mode);
      await fh.sync();
    } finally {
      await fh.close();
    }
    await fsp.rename(tmp, path);
  } catch (err) {
    await fsp.rm(tmp, { force: true });
    throw err;
  }
  const dh = await fsp.open(dir, 'r');
  try {
    await dh.sync();
  } finally {
    await dh.close();
  }
}

/** Returns the text written, so a caller can know its own write when it reads the file back. */
export function writeJsonAtomicSync(path: string, data: unknown, opts: WriteJsonOptions = {}): string {
  const mode = opts.mode ?? 0o600;
  const text = serialise(path, data);
  const dir = dirname(path);
  fs.mkdirSync(dir, { recursive: true, mode: opts.dirMode ?? 0o700 });
  const tmp = tempName(path);
  const fd = fs.openSync(tmp, 'wx', mode);
  try {
    try {
      fs.writeFileSync(fd, text, 'utf8');
      fs.fchmodSync(fd, mode);
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(tmp, path);
  } catch (err) {
    fs.rmSync(tmp, { force: true });
    throw err;
  }
  const dfd = fs.openSync(dir, 'r');
  try {
    fs.fsyncSync(dfd);
  } finally {
    fs.closeSync(dfd);
  }
  return text;
}

/**
 * Creates a directory (and parents) and makes sure the directory itself has `mode`, tightening an
 * existing one — the secrets directory must be 0700 even if someone loosened it.
 */
export function ensureDir(path: string, mode: number): void {
  const notDir = () => new SvcError('not-a-directory', `${path}: exists but is not a directory; move it aside`, { path });
  try {
    fs.mkdirSync(path, { recursive: true, mode });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST' || (err as NodeJS.ErrnoException).code === 'ENOTDIR') throw notDir();
    throw err;
  }
  const st = fs.statSync(path);
  if (!st.isDirectory()) throw notDir();
  if ((st.mode & 0o7777) !== mode) fs.chmodSync(path, mode);
}
