import { SvcError } from '../../schemas/index.js';

/*
 * A streaming multipart/form-data parser (RFC 7578): chunks in, part events out, never more than one
 * chunk plus a delimiter's length held in memory, so an upload goes to disk as it arrives. No
 * library for this is installed, and the format needs little: boundaries, part headers, bodies.
 */

export interface PartHeaders {
  /** `name` of Content-Disposition: form-data. */
  name: string;
  /** `filename` (or RFC 5987 `filename*`), null for a plain field. */
  filename: string | null;
  contentType: string | null;
}

export type MultipartEvent =
  | { kind: 'part'; headers: PartHeaders }
  | { kind: 'data'; chunk: Buffer }
  | { kind: 'part-end' };

export interface MultipartLimits {
  /** Bytes of one part's header block. */
  maxHeaderBytes: number;
  maxParts: number;
}

const DEFAULT_LIMITS: MultipartLimits = { maxHeaderBytes: 16 * 1024, maxParts: 16 };
const CRLF = Buffer.from('\r\n');
const HEADER_END = Buffer.from('\r\n\r\n');

const bad = (why: string) => new SvcError('invalid-body', `multipart body: ${why}`);

/** The boundary of a `multipart/form-data; boundary=...` content type, or an `unsupported-media-type` error. */
export function multipartBoundary(contentType: string | undefined): string {
  const ct = contentType ?? '';
  if (!/^\s*multipart\/form-data\s*(;|$)/i.test(ct)) {
    throw new SvcError('unsupported-media-type', `content-type ${JSON.stringify(ct)} is not allowed (multipart/form-data with a boundary)`);
  }
  const m = /;\s*boundary\s*=\s*(?:"([^"]{1,70})"|([^\s;"]{1,70}))/i.exec(ct);
  const boundary = m?.[1] ?? m?.[2];
  if (!boundary || !/^[0-9A-Za-z'()+_,./:=? -]*[0-9A-Za-z'()+_,./:=?-]$/.test(boundary)) {
    throw new SvcError('invalid-body', `content-type ${JSON.stringify(ct)} has no valid boundary parameter (1 to 70 characters)`);
  }
  return boundary;
}

type State = 'preamble' | 'after-delimiter' | 'headers' | 'body' | 'done';

export class MultipartParser {
  private readonly delimiter: Buffer;
  private readonly limits: MultipartLimits;
  /** A virtual CRLF before the body lets the first boundary match like every later one. */
  private buf: Buffer = Buffer.from(CRLF);
  private state: State = 'preamble';
  private parts = 0;

  constructor(boundary: string, limits: Partial<MultipartLimits> = {}) {
    this.delimiter = Buffer.from(`\r\n--${boundary}`, 'latin1');
    this.limits = { ...DEFAULT_LIMITS, ...limits };
  }

  /** Feeds a chunk; returns the events it completes. Throws `invalid-body` on a malformed body. */
  push(chunk: Buffer): MultipartEvent[] {
    const out: MultipartEvent[] = [];
    if (this.state === 'done') return out; // epilogue: ignored
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    for (;;) {
      const before: State = this.state;
      const progressed = this.step(out);
      if (!progressed && before === this.state) break;
    }
    return out;
  }

  /** The body ended: it must have reached the closing boundary. */
  end(): void {
    if (this.state !== 'done') {
      throw bad(this.parts === 0 ? 'no parts (missing or wrong boundary)' : 'the body ended before the closing boundary');
    }
  }

  private step(out: MultipartEvent[]): boolean {
    switch (this.state) {
      case 'preamble': {
        const i = this.buf.indexOf(this.delimiter);
        if (i < 0) {
          // Keep only what could still start a delimiter.
          this.buf = this.buf.subarray(Math.max(0, this.buf.length - this.delimiter.length + 1));
          if (this.buf.length === 0) return false;
          return false;
        }
        this.buf = this.buf.subarray(i + this.delimiter.length);
        this.state = 'after-delimiter';
        return true;
      }
      case 'after-delimiter': {
        if (this.buf.length < 2) return false;
        if (this.buf[0] === 0x2d && this.buf[1] === 0x2d) {
          this.state = 'done';
          this.buf = Buffer.alloc(0);
          return true;
        }
        // RFC 2046 allows transport padding (spaces, tabs) before the CRLF.
        let j = 0;
        while (j < this.buf.length && (this.buf[j] === 0x20 || this.buf[j] === 0x09)) j++;
        if (j > 64) throw bad('garbage after a boundary');
        if (this.buf.length < j + 2) return false;
        if (this.buf[j] !== 0x0d || this.buf[j + 1] !== 0x0a) throw bad('a boundary is not followed by CRLF or "--"');
        if (++this.parts > this.limits.maxParts) throw bad(`more than ${this.limits.maxParts} parts`);
        this.buf = this.buf.subarray(j + 2);
        this.state = 'headers';
        return true;
      }
      case 'headers': {
        const i = this.buf.indexOf(HEADER_END);
        // A part with no headers at all starts with the blank line directly.
        const empty = this.buf.length >= 2 && this.buf[0] === 0x0d && this.buf[1] === 0x0a;
        if (!empty && i < 0) {
          if (this.buf.length > this.limits.maxHeaderBytes) throw bad(`part headers exceed ${this.limits.maxHeaderBytes} bytes`);
          return false;
        }
        const block = empty ? '' : this.buf.subarray(0, i).toString('utf8');
        if (block.length > this.limits.maxHeaderBytes) throw bad(`part headers exceed ${this.limits.maxHeaderBytes} bytes`);
        out.push({ kind: 'part', headers: parsePartHeaders(block) });
        this.buf = this.buf.subarray(empty ? 2 : i + HEADER_END.length);
        this.state = 'body';
        return true;
      }
      case 'body': {
        const i = this.buf.indexOf(this.delimiter);
        if (i >= 0) {
          if (i > 0) out.push({ kind: 'data', chunk: this.buf.subarray(0, i) });
          out.push({ kind: 'part-end' });
          this.buf = this.buf.subarray(i + this.delimiter.length);
          this.state = 'after-delimiter';
          return true;
        }
        const safe = this.buf.length - (this.delimiter.length - 1);
        if (safe > 0) {
          out.push({ kind: 'data', chunk: this.buf.subarray(0, safe) });
          // Copy the short tail so the big chunk can be released.
          this.buf = Buffer.from(this.buf.subarray(safe));
        }
        return false;
      }
      case 'done':
        return false;
    }
  }
}

function parsePartHeaders(block: string): PartHeaders {
  let disposition: string | null = null;
  let contentType: string | null = null;
  for (const line of block.split('\r\n')) {
    if (line === '') continue;
    const colon = line.indexOf(':');
    if (colon <= 0) throw bad(`part header line ${JSON.stringify(line.slice(0, 80))} has no name`);
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (name === 'content-disposition') disposition = value;
    else if (name === 'content-type') contentType = value;
  }
  if (disposition === null) throw bad('a part has no Content-Disposition header');
  const params = dispositionParams(disposition);
  if (!/^form-data\b/i.test(disposition) || params.name === undefined) {
    throw bad(`Content-Disposition ${JSON.stringify(disposition.slice(0, 120))} is not allowed (form-data with a name)`);
  }
  const filename = params['filename*'] ?? params.filename ?? null;
  return { name: params.name, filename, contentType };
}

function dispositionParams(value: string): Record<string, string> {
  const out: Record<string, string> = {};
  const re = /;\s*([A-Za-z0-9_*.-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;]*))/g;
  for (const m of value.matchAll(re)) {
    const key = m[1]!.toLowerCase();
    let v = m[2] !== undefined ? m[2].replace(/\\(.)/g, '$1') : m[3]!.trim();
    if (key.endsWith('*')) {
      const ext = /^([A-Za-z0-9_-]+)'[^']*'(.*)$/.exec(v);
      if (!ext) continue;
      try {
        v = decodeURIComponent(ext[2]!);
      } catch {
        continue;
      }
    }
    out[key] = v;
  }
  return out;
}
