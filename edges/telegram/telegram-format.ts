// Longer than 450 lines: one renderer. Cutting into 4096-unit messages measures the rendered HTML, not
// the Markdown, so the cutter and the renderer share the fence scanner and are tested as one.
/*
 * Agents answer in Markdown; Telegram renders a small HTML subset and refuses a message whose
 * visible text is longer than 4096 UTF-16 units, or whose HTML does not parse. Everything here
 * is built so that what we send always parses: tags are only ever emitted in pairs around
 * content that was itself rendered, and all other text is escaped. Markdown we do not
 * understand is shown as the literal text the agent wrote rather than guessed at.
 */

export const TELEGRAM_TEXT_LIMIT = 4096;

/** One Telegram message: the HTML to send with parse_mode HTML, and the plain text to send without parse_mode if Telegram refuses the HTML. */
export interface TelegramChunk {
  html: string;
  plain: string;
}

const escapeHtml = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const escapeAttr = (s: string): string => escapeHtml(s).replace(/"/g, '&quot;');

// A javascript: or data: href would be a click away from running something; Telegram itself
// only knows these schemes anyway.
const LINKABLE = /^(?:https?:\/\/|tg:|mailto:)/i;
const ASCII_PUNCT = /[!-/:-@[-`{-~]/;
const WORD = /[\p{L}\p{N}]/u;
const SPACE = /\s/;
const SPECIAL = /[\\`[<*_~]/g;

/* ---------- fences: shared by the renderer and the splitter so both agree on what is code ---------- */

interface Fence {
  /** Line indices: the opening line, and the closing one (null when the text ends inside the block). */
  openLine: number;
  closeLine: number | null;
  indent: number;
  marker: string;
  lang: string;
  /** Offsets in the source: start of the opening line, and end of the block (after the closing line, before its newline). */
  start: number;
  end: number;
}

const FENCE_OPEN = /^( {0,3})(`{3,}|~{3,})(.*)$/;
const FENCE_CLOSE = /^ {0,3}(`{3,}|~{3,})[ \t]*$/;

function scanFences(lines: string[]): Fence[] {
  const fences: Fence[] = [];
  let offset = 0;
  const starts = lines.map((l) => {
    const s = offset;
    offset += l.length + 1;
    return s;
  });
  for (let i = 0; i < lines.length; i++) {
    const m = FENCE_OPEN.exec(lines[i]!);
    if (!m) continue;
    const marker = m[2]!;
    const info = m[3]!;
    // CommonMark: a backtick fence's info string cannot hold a backtick (it would be inline code).
    if (marker[0] === '`' && info.includes('`')) continue;
    let close: number | null = null;
    for (let j = i + 1; j < lines.length; j++) {
      const c = FENCE_CLOSE.exec(lines[j]!);
      if (c && c[1]![0] === marker[0] && c[1]!.length >= marker.length) {
        close = j;
        break;
      }
    }
    const last = close ?? lines.length - 1;
    fences.push({
      openLine: i,
      closeLine: close,
      indent: m[1]!.length,
      marker,
      lang: (info.trim().split(/\s+/)[0] ?? '').replace(/[^\w+#.-]/g, ''),
      start: starts[i]!,
      end: starts[last]! + lines[last]!.length,
    });
    i = last;
  }
  return fences;
}

function renderFence(lines: string[], f: Fence): string {
  const body = lines
    .slice(f.openLine + 1, f.closeLine ?? lines.length)
    .map((l) => l.replace(new RegExp(`^ {0,${f.indent}}`), ''))
    .join('\n');
  const code = escapeHtml(body);
  return f.lang ? `<pre><code class="language-${escapeAttr(f.lang)}">${code}</code></pre>` : `<pre>${code}</pre>`;
}

/* ---------- inline ---------- */

/** Length of the run of `c` starting at `i`. */
function runAt(s: string, i: number, c: string): number {
  let j = i;
  while (s[j] === c) j++;
  return j - i;
}

/**
 * Renders one paragraph's inline Markdown. Failed searches are remembered per delimiter so a text
 * full of lone `*` or backticks costs one scan per kind, not one per occurrence.
 */
function renderInline(s: string, inLink: boolean): string {
  const noCloseFrom = new Map<string, number>();
  const failedBefore = (key: string, i: number): boolean => (noCloseFrom.get(key) ?? Infinity) <= i;
  const failed = (key: string, i: number): void => {
    noCloseFrom.set(key, Math.min(noCloseFrom.get(key) ?? Infinity, i));
  };

  /** Start of the backtick run of exactly `n` closing a code span opened before `from`, or -1. */
  const codeClose = (from: number, n: number): number => {
    const key = '`' + n;
    if (failedBefore(key, from)) return -1;
    for (let j = from; j < s.length; ) {
      if (s[j] !== '`') {
        j++;
        continue;
      }
      const len = runAt(s, j, '`');
      if (len === n) return j;
      j += len;
    }
    failed(key, from);
    return -1;
  };

  /** Start of the run closing emphasis `c`×`n` opened at `open`, or -1. */
  const emphasisClose = (open: number, c: string, n: number): number => {
    const key = c + n;
    const from = open + n;
    if (failedBefore(key, from)) return -1;
    for (let j = from; j < s.length; ) {
      const ch = s[j]!;
      if (ch === '\\') {
        j += 2;
        continue;
      }
      if (ch === '`') {
        const len = runAt(s, j, '`');
        const close = codeClose(j + len, len);
        j = close >= 0 ? close + len : j + len;
        continue;
      }
      if (ch !== c) {
        j++;
        continue;
      }
      const len = runAt(s, j, c);
      const after = s[j + len];
      if (len === n && j > from && !SPACE.test(s[j - 1]!) && !(c === '_' && after !== undefined && WORD.test(after))) return j;
      j += len;
    }
    failed(key, from);
    return -1;
  };

  /** `[text](url "title")` starting at `i`: its parts and where it ends, or null. */
  const link = (i: number): { text: string; url: string; end: number } | null => {
    if (failedBefore(']', i)) return null;
    let depth = 0;
    let j = i + 1;
    for (; j < s.length; j++) {
      const ch = s[j];
      if (ch === '\\') j++;
      else if (ch === '[') depth++;
      else if (ch === ']') {
        if (depth === 0) break;
        depth--;
      }
    }
    if (j >= s.length) {
      failed(']', i);
      return null;
    }
    const m = /^\(\s*<?((?:[^\s()<>]|\([^\s()<>]*\))+)>?(?:\s+"[^"]*")?\s*\)/.exec(s.slice(j + 1, j + 1 + 4096));
    if (!m) return null;
    return { text: s.slice(i + 1, j), url: m[1]!, end: j + 1 + m[0].length };
  };

  let out = '';
  let i = 0;
  while (i < s.length) {
    const c = s[i]!;
    if (c === '\\' && i + 1 < s.length && ASCII_PUNCT.test(s[i + 1]!)) {
      out += escapeHtml(s[i + 1]!);
      i += 2;
      continue;
    }
    if (c === '`') {
      const n = runAt(s, i, '`');
      const close = codeClose(i + n, n);
      if (close < 0) {
        out += escapeHtml(s.slice(i, i + n));
        i += n;
        continue;
      }
      let code = s.slice(i + n, close);
      // CommonMark strips one space each side so `` `x` `` can show a backtick.
      if (code.length > 2 && code.startsWith(' ') && code.endsWith(' ') && code.trim()) code = code.slice(1, -1);
      out += `<code>${escapeHtml(code)}</code>`;
      i = close + n;
      continue;
    }
    if (c === '[' && !inLink) {
      const l = link(i);
      if (l) {
        out += LINKABLE.test(l.url) ? `<a href="${escapeAttr(l.url)}">${renderInline(l.text, true)}</a>` : escapeHtml(s.slice(i, l.end));
        i = l.end;
        continue;
      }
    }
    if (c === '<' && !inLink) {
      const m = /^<((?:https?:\/\/|tg:|mailto:)[^\s<>]+)>/i.exec(s.slice(i, i + 2048));
      if (m) {
        out += `<a href="${escapeAttr(m[1]!)}">${escapeHtml(m[1]!)}</a>`;
        i += m[0].length;
        continue;
      }
    }
    if (c === '*' || c === '_' || c === '~') {
      const n = runAt(s, i, c);
      const tags = c === '~' ? (n === 2 ? ['s'] : null) : n === 1 ? ['i'] : n === 2 ? ['b'] : n === 3 ? ['b', 'i'] : null;
      const next = s[i + n];
      const prev = s[i - 1];
      const opens = tags !== null && next !== undefined && !SPACE.test(next) && !(c === '_' && prev !== undefined && WORD.test(prev));
      const close = opens ? emphasisClose(i, c, n) : -1;
      if (tags && close >= 0) {
        const inner = renderInline(s.slice(i + n, close), inLink);
        out += tags.map((t) => `<${t}>`).join('') + inner + [...tags].reverse().map((t) => `</${t}>`).join('');
        i = close + n;
      } else {
        // The whole run stays literal, so its other characters are not taken for an opener.
        out += escapeHtml(s.slice(i, i + n));
        i += n;
      }
      continue;
    }
    // Up to the next character that could start markup, all in one go.
    SPECIAL.lastIndex = i + 1;
    const stop = SPECIAL.exec(s)?.index ?? s.length;
    out += escapeHtml(s.slice(i, stop));
    i = stop;
  }
  return out;
}

/* ---------- blocks ---------- */

const HEADING = /^ {0,3}#{1,6}(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
const QUOTE = /^ {0,3}>[ \t]?(.*)$/;
const RULE = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
const BULLET = /^([ \t]*)[-*+][ \t]+(.*)$/;

function renderLineish(line: string): string {
  const b = BULLET.exec(line);
  return b ? `${b[1]}• ${renderInline(b[2]!, false)}` : renderInline(line, false);
}

function renderBlocks(md: string): string {
  const lines = md.split('\n');
  const fences = new Map(scanFences(lines).map((f) => [f.openLine, f]));
  const out: string[] = [];
  let para: string[] = [];
  const endParagraph = (): void => {
    if (para.length) out.push(renderInline(para.join('\n'), false));
    para = [];
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const fence = fences.get(i);
    if (fence) {
      endParagraph();
      out.push(renderFence(lines, fence));
      i = fence.closeLine ?? lines.length;
      continue;
    }
    if (!line.trim()) {
      endParagraph();
      out.push('');
      continue;
    }
    if (RULE.test(line)) {
      endParagraph();
      out.push('———');
      continue;
    }
    const h = HEADING.exec(line);
    if (h) {
      endParagraph();
      out.push(h[1] ? `<b>${renderInline(h[1], false)}</b>` : '');
      continue;
    }
    if (QUOTE.test(line)) {
      endParagraph();
      const quoted: string[] = [];
      for (; i < lines.length && !fences.has(i); i++) {
        const q = QUOTE.exec(lines[i]!);
        if (!q) break;
        quoted.push(renderLineish(q[1]!));
      }
      i--;
      out.push(`<blockquote>${quoted.join('\n')}</blockquote>`);
      continue;
    }
    if (BULLET.test(line)) {
      endParagraph();
      out.push(renderLineish(line));
      continue;
    }
    para.push(line);
  }
  endParagraph();
  return out.join('\n');
}

/** Markdown → Telegram HTML. Never throws; unbalanced or unknown markdown degrades to escaped literal text. Links only with http(s)/tg/mailto schemes (others rendered as text). Headings → bold line. Lists keep their bullets as text ("• " for -/* items). Blockquote lines → <blockquote>. */
export function markdownToTelegramHtml(md: string): string {
  const src = md.replace(/\r\n?/g, '\n');
  try {
    return renderBlocks(src);
  } catch {
    // Only a pathological nesting depth can get here (the stack); the text is still worth showing.
    return escapeHtml(src);
  }
}

const ENTITY = /&(?:(lt|gt|amp|quot|apos)|#(\d+)|#x([0-9a-f]+));/gi;
const NAMED: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };

function visibleText(html: string): string {
  return html.replace(/<[^>]*>/g, '').replace(ENTITY, (all, name: string | undefined, dec: string | undefined, hex: string | undefined) => {
    if (name) return NAMED[name.toLowerCase()] ?? all;
    const cp = dec ? Number(dec) : parseInt(hex!, 16);
    return cp <= 0x10ffff ? String.fromCodePoint(cp) : all;
  });
}

/** The visible text of that HTML (entities decoded, tags dropped): what Telegram counts. */
export function visibleLength(html: string): number {
  return visibleText(html).length;
}

/* ---------- splitting ---------- */

const graphemes = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

/**
 * The last offset in (from, to] at which `s` may be cut without splitting a character: a grapheme
 * boundary, so an emoji with its modifiers stays whole; a surrogate pair is never split even when
 * one grapheme alone is longer than the room.
 */
function safeCut(s: string, from: number, to: number): number {
  if (to >= s.length) return s.length;
  let best = from;
  for (const g of graphemes.segment(s.slice(from, to + 32))) {
    if (g.index > to - from) break;
    best = from + g.index;
  }
  if (best > from) return best;
  let c = to;
  const code = s.charCodeAt(c - 1);
  if (code >= 0xd800 && code <= 0xdbff) c--;
  return c > from ? c : Math.min(s.length, from + 2);
}

function fits(md: string, limit: number): boolean {
  return md.length <= limit && visibleLength(markdownToTelegramHtml(md)) <= limit;
}

interface Cut {
  /** The chunk is source[pos, at). */
  at: number;
  /** Where the next chunk starts: whitespace at the cut is not carried over. */
  next: number;
}

/** Past the blank lines at `i` (keeping the next line's indentation: it can be meaningful). */
const skipBlankLines = (s: string, i: number): number => i + (/^(?:[ \t]*\n)*/.exec(s.slice(i, i + 4096))?.[0].length ?? 0);
const skipSpace = (s: string, i: number): number => i + (/^\s*/.exec(s.slice(i, i + 4096))?.[0].length ?? 0);

/**
 * Where to end the chunk that starts at `pos`, within `room` characters: the last paragraph break,
 * else line break, else sentence end, else space, else a hard cut, never inside a code fence. A
 * better kind of break is passed over when it would leave a chunk under a quarter full, so one
 * early blank line does not make a tiny message.
 */
function chooseCut(src: string, pos: number, room: number, fences: Fence[]): Cut {
  const end = Math.min(src.length, pos + room);
  const window = src.slice(pos, end + 1);
  const inFence = (at: number): boolean => fences.some((f) => at > f.start && at < f.end);
  const kinds: [RegExp, (m: RegExpExecArray) => Cut][] = [
    [/\n[ \t]*\n/g, (m) => ({ at: pos + m.index, next: skipBlankLines(src, pos + m.index + 1) })],
    [/\n/g, (m) => ({ at: pos + m.index, next: skipBlankLines(src, pos + m.index + 1) })],
    [/[.!?…][)"'”’»\]]*(?=\s)/g, (m) => ({ at: pos + m.index + m[0].length, next: skipSpace(src, pos + m.index + m[0].length) })],
    [/[ \t]+/g, (m) => ({ at: pos + m.index, next: skipSpace(src, pos + m.index) })],
  ];
  const candidates = kinds.map(([re, cut]) => {
    let best: Cut | null = null;
    for (const m of window.matchAll(re)) {
      const c = cut(m as RegExpExecArray);
      if (c.at > pos && c.at <= end && !inFence(c.at)) best = c;
    }
    return best;
  });
  const enough = pos + Math.floor(room / 4);
  const chosen = candidates.find((c) => c && c.at >= enough) ?? candidates.find((c) => c !== null);
  if (chosen) return chosen;
  const at = safeCut(src, pos, end);
  return { at, next: at };
}

/** Cuts `s` into pieces of at most `room` characters, characters kept whole. */
function hardCuts(s: string, room: number): string[] {
  const pieces: string[] = [];
  for (let i = 0; i < s.length; ) {
    const at = safeCut(s, i, i + room);
    pieces.push(s.slice(i, at));
    i = at;
  }
  return pieces;
}

/** A code block too long for one message, as several blocks that each open and close their own fence. */
function splitFence(src: string, lines: string[], f: Fence, limit: number): string[] {
  const open = lines[f.openLine]!.trimEnd();
  const close = ' '.repeat(f.indent) + f.marker;
  const room = limit - open.length - close.length - 2;
  if (room < 1) return hardCuts(src.slice(f.start, f.end), limit);
  const body = lines.slice(f.openLine + 1, f.closeLine ?? lines.length);
  const pieces: string[] = [];
  let cur: string[] = [];
  let len = 0;
  const flush = (): void => {
    if (cur.length) pieces.push(`${open}\n${cur.join('\n')}\n${close}`);
    cur = [];
    len = 0;
  };
  for (const line of body) {
    for (const part of line.length <= room ? [line] : hardCuts(line, room)) {
      const add = (cur.length ? 1 : 0) + part.length;
      if (cur.length && len + add > room) flush();
      len += (cur.length ? 1 : 0) + part.length;
      cur.push(part);
    }
  }
  flush();
  return pieces;
}

/** Splits an agent's Markdown answer into messages that each fit `limit` visible characters (default 4096) both as HTML and as plain: prefer paragraph breaks (blank lines), then line breaks, then sentence ends, then spaces, then a hard cut; never inside a fenced code block unless the block alone is too long, in which case the block is cut at line boundaries and each piece re-opened/closed as its own fence (```lang ... ```) so every message renders as code. Empty or whitespace-only input → []. */
export function splitForTelegram(md: string, limit: number = TELEGRAM_TEXT_LIMIT): TelegramChunk[] {
  const src = md.replace(/\r\n?/g, '\n');
  const max = Math.max(1, Math.floor(limit));
  const lines = src.split('\n');
  const fences = scanFences(lines);
  const pieces: string[] = [];
  let pos = skipBlankLines(src, 0);
  while (pos < src.length && src.slice(pos).trim() !== '') {
    const fence = fences.find((f) => f.start === pos);
    if (fence && !fits(src.slice(fence.start, fence.end), max)) {
      pieces.push(...splitFence(src, lines, fence, max));
      pos = skipBlankLines(src, Math.min(src.length, fence.end + 1));
      continue;
    }
    const rest = src.slice(pos).trimEnd();
    if (rest.length <= max && fits(rest, max)) {
      pieces.push(rest);
      break;
    }
    // The plain length bounds the cut; should the HTML still be longer (it never renders more
    // than it reads, but nothing else checks that here), the room shrinks until it fits.
    let room = max;
    let cut = chooseCut(src, pos, room, fences);
    while (!fits(src.slice(pos, cut.at).trimEnd(), max) && room > 1) {
      room = Math.max(1, room - Math.max(1, src.slice(pos, cut.at).trimEnd().length - max, Math.ceil(room / 16)));
      cut = chooseCut(src, pos, room, fences);
    }
    const piece = src.slice(pos, cut.at).trimEnd();
    if (piece) pieces.push(piece);
    pos = Math.max(cut.next, cut.at, pos + 1);
  }
  return pieces.map((plain) => ({ html: markdownToTelegramHtml(plain), plain }));
}

/** The fence still open at the end of `md`, as the line that would close it; null when none is. */
function openFenceCloser(md: string): string | null {
  const lines = md.split('\n');
  const last = scanFences(lines).at(-1);
  return last && last.closeLine === null ? ' '.repeat(last.indent) + last.marker : null;
}

const closeOpenFence = (md: string): string => {
  const closer = openFenceCloser(md);
  return closer === null ? md : `${md}${md.endsWith('\n') ? '' : '\n'}${closer}`;
};

/** For streaming edits: the text so far, cut to fit one message (the last `limit` - 1 chars are not what we want — keep the BEGINNING and end with "…" when too long), as a TelegramChunk; unclosed code fences in a partial text are closed so the HTML stays valid. */
export function streamingPreview(mdSoFar: string, limit: number = TELEGRAM_TEXT_LIMIT): TelegramChunk {
  const src = mdSoFar.replace(/\r\n?/g, '\n');
  const max = Math.max(2, Math.floor(limit));
  const whole = closeOpenFence(src);
  if (fits(whole, max)) return { html: markdownToTelegramHtml(whole), plain: whole };
  let room = max - 1;
  for (;;) {
    // A word or line end near the limit reads better than a cut mid-word; further back is not worth the loss.
    const end = safeCut(src, 0, room);
    const window = src.slice(0, end);
    const soft = Math.max(window.lastIndexOf('\n'), window.search(/\s\S*$/));
    const head = src.slice(0, soft >= end * 0.8 ? soft : end).trimEnd();
    const closer = openFenceCloser(head);
    const plain = closer === null ? `${head}…` : `${head}…\n${closer}`;
    const html = markdownToTelegramHtml(plain);
    const over = Math.max(plain.length, visibleLength(html)) - max;
    if (over <= 0 || room <= 1) return { html, plain };
    room = Math.max(1, room - over);
  }
}
