export const DEFAULT_MAX_LINE_BYTES = 1024 * 1024;

export type SplitItem = { line: string } | { tooLong: true; length: number };

const LF = 0x0a;
const CR = 0x0d;

/**
 * Cuts a byte stream into lines. Works on bytes and decodes whole lines only, so a UTF-8 character
 * split across chunks is never mangled (0x0A never occurs inside a multi-byte sequence).
 * A line longer than `maxLineBytes` is dropped as soon as it overflows — memory stays bounded —
 * and reported once, with its full length, when its newline (or the end of the stream) arrives.
 */
export class LineSplitter {
  private readonly max: number;
  private parts: Buffer[] = [];
  private pending = 0;
  private discarding = false;
  private lastByte = -1;

  constructor(opts: { maxLineBytes?: number } = {}) {
    this.max = opts.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
  }

  push(chunk: Buffer | string): SplitItem[] {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    const out: SplitItem[] = [];
    let start = 0;
    for (let nl = buf.indexOf(LF, start); nl !== -1; nl = buf.indexOf(LF, start)) {
      // A line wholly inside this chunk (the usual case) is decoded where it lies: no copies.
      if (this.pending === 0 && !this.discarding && nl - start <= this.max) {
        out.push({ line: buf.toString('utf8', start, nl > start && buf[nl - 1] === CR ? nl - 1 : nl) });
      } else {
        this.take(buf.subarray(start, nl));
        out.push(this.finish());
      }
      start = nl + 1;
    }
    if (start < buf.length) this.take(buf.subarray(start));
    return out;
  }

  /** The stream ended: a final line without a newline still counts. */
  end(): SplitItem[] {
    if (this.pending === 0 && !this.discarding) return [];
    return [this.finish()];
  }

  private take(piece: Buffer): void {
    if (piece.length === 0) return;
    this.pending += piece.length;
    this.lastByte = piece[piece.length - 1] ?? -1;
    if (this.discarding) return;
    // One byte of slack for the \r of a \r\n ending, which is not part of the line.
    if (this.pending > this.max + 1) {
      this.discarding = true;
      this.parts = [];
      return;
    }
    // Copy: the caller's chunk buffer may be reused once we return.
    this.parts.push(Buffer.from(piece));
  }

  private finish(): SplitItem {
    let item: SplitItem;
    if (this.discarding) {
      item = { tooLong: true, length: this.pending - (this.lastByte === CR ? 1 : 0) };
    } else {
      let line = Buffer.concat(this.parts, this.pending);
      if (line.length > 0 && line[line.length - 1] === CR) line = line.subarray(0, line.length - 1);
      item = line.length > this.max ? { tooLong: true, length: line.length } : { line: line.toString('utf8') };
    }
    this.parts = [];
    this.pending = 0;
    this.discarding = false;
    this.lastByte = -1;
    return item;
  }
}
