/*
 * Memory injection rules (SPEC.md MemoryConfig "Injection"): which modules a new session gets and
 * the text it gets. Filenames are relative to `memory_system/` with `/`, as the store lists them.
 */

const ROOT_FILES = new Set(['MAINMEMORY.md', 'SHAREDMEMORY.md']);
const HEADING = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const TABLE_ROW = /^\s*\|.*\|\s*$/;
const SEPARATOR_CELL = /^:?-{1,}:?$/;

function cells(row: string): string[] {
  const inner = row.trim().replace(/^\|/, '').replace(/\|$/, '');
  // `\|` inside a cell is a literal pipe in GitHub markdown.
  return inner.split(/(?<!\\)\|/).map((c) => c.replace(/\\\|/g, '|').trim());
}

/**
 * A table cell naming a module -> its filename under `memory_system/`, or null for placeholders
 * (`-`, `(none)`, `_example_`) and anything that could leave the memory directory.
 * Accepts `name`, `name.md`, `modules/name.md`, `` `code` `` and `[label](modules/name.md)`.
 */
export function normalizeModuleRef(cell: string): string | null {
  let ref = cell.trim();
  const link = /^\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)$/.exec(ref);
  if (link) ref = link[1]!;
  ref = ref.replace(/^`+|`+$/g, '').trim();
  ref = ref.replace(/^(\.\/)+/, '').replace(/^memory_system\//, '');
  if (ref === '' || /^[-–—_*(]/.test(ref) || /\s/.test(ref)) return null;
  if (ref.startsWith('/') || ref.includes('\\') || ref.includes('\0')) return null;
  if (ref.split('/').some((p) => p === '' || p === '.' || p === '..')) return null;
  if (!/\.md$/i.test(ref)) ref = `${ref}.md`;
  if (!ref.includes('/') && !ROOT_FILES.has(ref)) ref = `modules/${ref}`;
  return ref;
}

/**
 * Filenames listed in the Always Load table of MAINMEMORY.md, in table order, without duplicates.
 * The table is the first one after a heading containing "Always Load", before the next heading;
 * its Module column is found by header name (first column when none is called Module).
 */
export function alwaysLoadModules(mainMemoryText: string): string[] {
  // Guidance lives in HTML comments; an example table inside one is not the table.
  const lines = mainMemoryText.replace(/\r\n?/g, '\n').replace(/<!--[\s\S]*?-->/g, '').split('\n');
  let i = lines.findIndex((l) => {
    const h = HEADING.exec(l);
    return h !== null && /always[\s_-]*load/i.test(h[2]!);
  });
  if (i < 0) return [];
  for (i++; i < lines.length; i++) {
    if (HEADING.test(lines[i]!)) return [];
    if (TABLE_ROW.test(lines[i]!)) break;
  }
  if (i >= lines.length - 1) return [];
  const header = cells(lines[i]!);
  const sepRow = cells(lines[i + 1]!);
  if (!TABLE_ROW.test(lines[i + 1]!) || !sepRow.every((c) => SEPARATOR_CELL.test(c))) return [];
  const col = Math.max(0, header.findIndex((h) => /^module/i.test(h.replace(/[*_`]/g, ''))));
  const out: string[] = [];
  for (let r = i + 2; r < lines.length && TABLE_ROW.test(lines[r]!); r++) {
    const ref = normalizeModuleRef(cells(lines[r]!)[col] ?? '');
    if (ref && !out.includes(ref)) out.push(ref);
  }
  return out;
}

/**
 * Modules a new session gets. `injectAll`: every module under `modules/`. Otherwise the Always Load
 * entries that exist, in table order. Root files are read by the agent itself (its instruction
 * files say so) unless the table names one explicitly.
 */
export function selectModules<T extends { filename: string }>(allModules: readonly T[], mainMemoryText: string, injectAll: boolean): T[] {
  if (injectAll) return allModules.filter((m) => m.filename.startsWith('modules/') && /\.md$/i.test(m.filename));
  const byName = new Map(allModules.map((m) => [m.filename, m] as const));
  const out: T[] = [];
  for (const name of alwaysLoadModules(mainMemoryText)) {
    const hit = byName.get(name);
    if (hit) out.push(hit);
  }
  return out;
}

export interface InjectionOptions {
  /** Reminder mode: keep at most this many lines of each module (config `hook_compact_lines`). */
  compactLines?: number;
}

export const TRUNCATED_MARKER = '…(truncated)';

function bodyLines(text: string): string[] {
  const trimmed = text.replace(/\r\n?/g, '\n').replace(/\n+$/, '');
  return trimmed === '' ? [] : trimmed.split('\n');
}

/**
 * The memory text put in front of a session: full modules at session start, or the reminder
 * (`compactLines` set) with each module cut to that many lines and marked. Empty when no module.
 */
export function buildInjection(modules: readonly { filename: string; text: string }[], opts: InjectionOptions = {}): string {
  if (modules.length === 0) return '';
  const compact = opts.compactLines !== undefined ? Math.max(0, Math.floor(opts.compactLines)) : undefined;
  const parts: string[] = [
    compact === undefined
      ? '# Memory (svc): modules from memory_system/ loaded for this session'
      : '# Memory reminder (svc): shortened; read the full files in memory_system/ when needed',
  ];
  for (const m of modules) {
    let lines = bodyLines(m.text);
    if (compact !== undefined && lines.length > compact) {
      const more = lines.length - compact;
      lines = [...lines.slice(0, compact), `${TRUNCATED_MARKER} ${more} more line${more === 1 ? '' : 's'} in memory_system/${m.filename}`];
    }
    parts.push(`## memory_system/${m.filename}\n\n${lines.join('\n')}`.trimEnd());
  }
  return `${parts.join('\n\n')}\n`;
}

/** Filenames of modules over the soft line limit (config `module_line_limit`), in input order. */
export function overLimit(modules: readonly { filename: string; lines: number }[], moduleLineLimit: number): string[] {
  return modules.filter((m) => m.lines > moduleLineLimit).map((m) => m.filename);
}

/**
 * Facts in a memory file (SPEC.md "RAG status" `memory_fact_count`): lines with text that are
 * neither headings (structure, not facts) nor inside HTML comments (where the templates keep their
 * guidance).
 */
export function memoryFactCount(text: string): number {
  return text
    .replace(/\r\n?/g, '\n')
    .replace(/<!--[\s\S]*?(-->|$)/g, '')
    .split('\n')
    .filter((l) => l.trim() !== '' && !/^\s{0,3}#/.test(l)).length;
}
