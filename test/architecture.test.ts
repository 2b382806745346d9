// DESIGN.md §3 as a check: who may import whom, only through index.ts, named exports only,
// and machines stay pure (no clock, randomness, env or I/O).
import t from 'tap';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import * as schemas from '../schemas/index.js';

const ROOT = new URL('..', import.meta.url).pathname;
const FOLDERS = ['schemas', 'machines', 'actors', 'bus', 'store', 'edges', 'bin'] as const;
type Folder = (typeof FOLDERS)[number];

const MAY_IMPORT: Record<Folder, Folder[]> = {
  schemas: [],
  machines: ['schemas'],
  actors: ['machines', 'schemas', 'bus', 'store'],
  bus: ['store', 'schemas'],
  store: ['schemas'],
  edges: ['bus', 'schemas', 'store'],
  bin: ['schemas', 'machines', 'actors', 'bus', 'store', 'edges'],
};

/** Packages a folder may use besides node: built-ins; everything else must go through a layer that owns it. */
const PACKAGES: Record<Folder, RegExp> = {
  schemas: /^valibot$/,
  // croner is pure calendar arithmetic (next fire of a pattern in a zone): DESIGN.md §9's cron library.
  machines: /^(xstate|valibot|croner)$/,
  actors: /./,
  bus: /^rxjs$/,
  store: /^(better-sqlite3|valibot|yaml)$/,
  edges: /./,
  bin: /./,
};

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return sources(p);
    return /\.ts$/.test(name) && !name.endsWith('.d.ts') ? [p] : [];
  });
}

const IMPORT = /^\s*(import|export)\s+(type\s+)?[^'"]*?from\s+['"]([^'"]+)['"]|^\s*import\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/gm;

const violations: string[] = [];
/** file → files it imports (type-only imports included: a cycle of types still ties the layers together). */
const edges = new Map<string, string[]>();
for (const folder of FOLDERS) {
  let files: string[];
  try {
    files = sources(join(ROOT, folder));
  } catch {
    continue;
  }
  for (const file of files) {
    const rel = relative(ROOT, file);
    const text = readFileSync(file, 'utf8');
    edges.set(rel, []);
    if (/^\s*export\s+default\b/m.test(text)) violations.push(`${rel}: default export (use named exports)`);
    for (const m of text.matchAll(IMPORT)) {
      const spec = m[3] ?? m[4] ?? m[5]!;
      if (spec.startsWith('node:')) {
        if (folder === 'machines') violations.push(`${rel}: machines must not do I/O (${spec})`);
        continue;
      }
      if (!spec.startsWith('.')) {
        const pkg = spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!;
        if (!PACKAGES[folder].test(pkg)) violations.push(`${rel}: ${folder}/ may not use package ${pkg}`);
        continue;
      }
      if (!spec.endsWith('.js')) violations.push(`${rel}: relative import '${spec}' must end in .js (NodeNext)`);
      const target = relative(ROOT, join(file, '..', spec));
      edges.get(rel)!.push(target.replace(/\.js$/, '.ts'));
      const targetFolder = target.split(sep)[0] as Folder;
      if (targetFolder === folder || !FOLDERS.includes(targetFolder)) continue;
      const allowed = MAY_IMPORT[folder].includes(targetFolder);
      if (!allowed) violations.push(`${rel}: ${folder}/ may not import ${targetFolder}/ (${spec})`);
      if (target !== join(targetFolder, 'index.js')) violations.push(`${rel}: deep import '${spec}'; import ${targetFolder}/index.js`);
    }
    if (folder === 'machines') {
      for (const [re, what] of [
        [/\bDate\.now\(|\bnew Date\(\s*\)/, 'the clock'],
        [/\bMath\.random\(|\brandomUUID\(|\brandomBytes\(/, 'randomness'],
        [/\bprocess\.(env|hrtime|cwd)\b/, 'the environment'],
        [/\bsetTimeout\(|\bsetInterval\(/, 'timers (use xstate delays)'],
      ] as const) {
        if (re.test(text)) violations.push(`${rel}: machines must not read ${what}`);
      }
    }
  }
}

await t.test('every source file follows the import rule of DESIGN.md', async (t) => {
  t.same(violations, [], violations.join('\n'));
});

await t.test('each folder exposes an index.ts', async (t) => {
  for (const folder of ['schemas', 'machines', 'actors', 'bus', 'store'] as const) {
    t.ok(statSync(join(ROOT, folder, 'index.ts')).isFile(), `${folder}/index.ts`);
  }
});

/** Every strongly connected component of more than one file (Tarjan), each as the files in it. */
function importCycles(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  let next = 0;
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) !== index.get(v)) return;
    const scc: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      scc.push(w);
    } while (w !== v);
    if (scc.length > 1 || (graph.get(v) ?? []).includes(v)) cycles.push(scc.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return cycles;
}

await t.test('no import cycle anywhere in the tree', async (t) => {
  const cycles = importCycles(edges);
  t.same(cycles, [], cycles.map((c) => c.join(' -> ')).join('\n'));
});

await t.test('the cycle finder sees a cycle through index files', async (t) => {
  const g = new Map([
    ['machines/index.ts', ['machines/a.ts']],
    ['machines/a.ts', ['actors/index.ts']],
    ['actors/index.ts', ['actors/b.ts']],
    ['actors/b.ts', ['machines/index.ts']],
    ['schemas/index.ts', []],
  ]);
  t.same(importCycles(g), [['actors/b.ts', 'actors/index.ts', 'machines/a.ts', 'machines/index.ts']]);
});

/** Every event, chunk and command type schemas/ declares. */
function declaredTypes(): Set<string> {
  const types = new Set<string>([...Object.keys(schemas.EVENT_SCHEMAS), ...Object.keys(schemas.CHUNK_SCHEMAS)]);
  const isCommand = (x: unknown): x is schemas.AnyCommandDef =>
    typeof x === 'object' && x !== null && typeof (x as { type?: unknown }).type === 'string' && 'data' in x && 'reply' in x && 'invalidCode' in x;
  for (const value of Object.values(schemas)) {
    if (isCommand(value)) types.add(value.type);
    else if (typeof value === 'object' && value !== null) for (const inner of Object.values(value)) if (isCommand(inner)) types.add(inner.type);
  }
  return types;
}

/**
 * Declared types spelled as a string literal: a dot-named quoted string (no interpolation) whose
 * content is a type schemas/ declares. Dot-named strings that are not declared types (xstate's
 * `cli.exited`, file names, config keys) are left alone.
 */
function literalTypes(source: string, declared: Set<string>): string[] {
  const found: string[] = [];
  // Comments may name a type (`turn.failed` in a doc comment); only code spells it.
  const text = source.replace(/('(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*"|`(?:\\.|[^`\\])*`)|\/\/[^\n]*|\/\*[\s\S]*?\*\//g, (_all, str) => str ?? '');
  for (const m of text.matchAll(/(['"`])([a-z][a-z0-9_]*(?:\.[a-z][a-z0-9_]*)+)\1/g)) if (declared.has(m[2]!)) found.push(m[2]!);
  return found;
}

/** Another program's vocabulary that happens to share a name: codex's JSON events are not ours. */
const FOREIGN_NAMES: Record<string, string[]> = {
  'actors/providers/codex.ts': ['turn.started', 'turn.completed', 'turn.failed'],
};

await t.test('no layer but schemas/ spells a command, event or chunk type as a string', async (t) => {
  const declared = declaredTypes();
  t.ok(declared.has('turn.completed') && declared.has('agent.message') && declared.has('log.line'), 'events, commands and chunks are all found');
  const spelled: string[] = [];
  for (const folder of FOLDERS.filter((f) => f !== 'schemas')) {
    for (const file of sources(join(ROOT, folder))) {
      const rel = relative(ROOT, file);
      const allowed = new Set(FOREIGN_NAMES[rel] ?? []);
      for (const type of literalTypes(readFileSync(file, 'utf8'), declared)) if (!allowed.has(type)) spelled.push(`${rel}: '${type}'`);
    }
  }
  t.same(spelled, [], spelled.join('\n'));
});

await t.test('the literal finder catches quotes of every kind and leaves undeclared names alone', async (t) => {
  const declared = new Set(['turn.failed', 'agent.message']);
  const sample = `emit({ type: 'turn.failed' }); send("agent.message"); x(\`turn.failed\`); y('cli.exited'); z(\`turn.\${kind}\`); w('turn.failed_x')
    // a comment naming 'turn.failed' is documentation
    /** as is \`agent.message\` in a doc comment */ v('http://x/y'); u('turn.failed')`;
  t.same(literalTypes(sample, declared), ['turn.failed', 'agent.message', 'turn.failed', 'turn.failed']);
});

await t.test('no comment says a shape is mirrored or restated: it is declared once', async (t) => {
  const copies: string[] = [];
  for (const folder of FOLDERS) {
    for (const file of sources(join(ROOT, folder))) {
      const text = readFileSync(file, 'utf8');
      if (/\b(mirror(s|ed)?|restate[sd]?)\b/i.test(text)) copies.push(relative(ROOT, file));
    }
  }
  t.same(copies, [], copies.join('\n'));
});

/** Patterns that each belong to one file: a second spelling is a second rule that can drift. */
const ONE_HOME: readonly { what: string; pattern: RegExp; home: string }[] = [
  { what: 'a real timer clock', pattern: /setTimeout:\s*\(.*?\)\s*(:\s*[\w.]+\s*)?=>\s*setTimeout\(/, home: 'bus/clock.ts' },
  { what: 'a wall-clock default', pattern: /\?\?\s*Date\.now\b|=>\s*Date\.now\(\)/, home: 'bus/clock.ts' },
  { what: 'a cause stamped from a seq', pattern: /causation:\s*[\w.]+\.seq\b/, home: 'bus/cause.ts' },
  { what: "a served file's disposition header", pattern: /['"]content-disposition['"]\s*:/, home: 'edges/http/content-headers.ts' },
  { what: 'createdOf', pattern: /function\s+createdOf\b/, home: 'machines/task.machine.ts' },
  { what: 'causedBy', pattern: /function\s+(causedBy|causeOf)\b/, home: 'bus/cause.ts' },
  { what: 'followsFrom', pattern: /function\s+(followsFrom|causeOfLast)\b/, home: 'bus/cause.ts' },
];

function strayRules(files: ReadonlyMap<string, string>): string[] {
  const stray: string[] = [];
  for (const [rel, text] of files) {
    for (const rule of ONE_HOME) if (rel !== rule.home && rule.pattern.test(text)) stray.push(`${rel}: ${rule.what} (it lives in ${rule.home})`);
  }
  return stray;
}

await t.test('one of each rule: the real clock, the cause stamps, the file headers and createdOf each have one home', async (t) => {
  const files = new Map<string, string>();
  for (const folder of FOLDERS) for (const file of sources(join(ROOT, folder))) files.set(relative(ROOT, file), readFileSync(file, 'utf8'));
  const stray = strayRules(files);
  t.same(stray, [], stray.join('\n'));
  for (const rule of ONE_HOME) t.ok(rule.pattern.test(files.get(rule.home) ?? ''), `${rule.what} is in ${rule.home}`);
});

await t.test('the rule finder sees a second definition', async (t) => {
  const copy = new Map([
    ['actors/x.ts', 'const c = { setTimeout: (fn, ms) => setTimeout(fn, ms) }; const now = d.clock ?? Date.now;'],
    ['bin/z.ts', 'const c = { now: () => Date.now(), setTimeout: (fn: () => void, ms: number): NodeJS.Timeout => setTimeout(fn, ms) };'],
    ['edges/y.ts', "headers: { 'content-disposition': x }; function causeOf(c) { return { causation: e.seq }; }"],
  ]);
  t.same(strayRules(copy).length, 7);
});
