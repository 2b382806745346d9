import { closeSync, constants, fstatSync, openSync, readSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import * as v from 'valibot';
import { LineCounter, isAlias, isMap, isNode, isScalar, isSeq, parseDocument, visit, type Document, type Node as YamlNode } from 'yaml';
import {
  WorkflowDefinitionSchema,
  checkWorkflowDefinition,
  type WorkflowDefinition,
  type WorkflowIssuePath,
} from '../schemas/index.js';

/*
 * `workflows/*.yaml|yml` (SPEC.md "Workflow definition"): read, validated and turned into
 * definitions, or into one error per file naming file:line:column and the field, because the person
 * who fixes it is looking at the YAML, not at our objects. One bad file never keeps the others out.
 *
 * Ids: a file's id is its name without the extension. An `id:` inside the file is optional and, when
 * present, must be the same, so `/workflow run <id>` always finds `<id>.yaml` and a copied file cannot
 * quietly shadow the one it was copied from. `x.yaml` beside `x.yml` is a duplicate: the second
 * (in name order, `.yaml` first) is refused.
 */

/** Same cap as a webhook body (SPEC.md Limits): a hand-written workflow is a few KiB. */
export const MAX_WORKFLOW_FILE_BYTES = 256 * 1024;
export const MAX_WORKFLOW_FILES = 200;
/** yaml's resource-exhaustion guard: aliases for reuse are fine, a billion laughs is not. */
const MAX_YAML_ALIAS_COUNT = 100;

export interface WorkflowLoadError {
  /** File name inside the workflows directory (`review.yaml`). */
  file: string;
  /** 1-based. */
  line: number;
  column: number;
  /** Field path as a user reads it (`steps[2].prompt`); empty for the whole file. */
  path: string;
  message: string;
  /** `review.yaml:12:5: steps[2].prompt: must be text`: what logs, chat replies and the API show. */
  text: string;
}

/** What an expression checker reports: the problem and its 0-based offset in the `if` text. */
export interface ExpressionProblem {
  message: string;
  offset: number;
}

export interface WorkflowLoadOptions {
  /**
   * Syntax check for condition `if` texts (machines' `checkWorkflowExpression`). Injected because
   * the expression language lives in machines/, which store/ may not import; without it `if` texts
   * are checked only when a run evaluates them.
   */
  checkExpression?: (source: string) => ExpressionProblem | null;
}

export type WorkflowParseResult = { ok: true; definition: WorkflowDefinition } | { ok: false; error: WorkflowLoadError };

export interface WorkflowDefinitions {
  /** By id. */
  definitions: WorkflowDefinition[];
  /** In file name order. */
  errors: WorkflowLoadError[];
}

const FILE_NAME = /^([A-Za-z0-9_-]{1,64})\.ya?ml$/;

/** `steps[2].prompt`: indexes in brackets, as the user counts them in their list (from 0). */
export function formatWorkflowPath(path: readonly (string | number)[]): string {
  let out = '';
  for (const k of path) out += typeof k === 'number' ? `[${k}]` : out ? `.${k}` : k;
  return out;
}

function loadError(file: string, line: number, column: number, path: readonly (string | number)[], message: string): WorkflowLoadError {
  const p = formatWorkflowPath(path);
  return { file, line, column, path: p, message, text: `${file}:${line}:${column}: ${p ? `${p}: ` : ''}${message}` };
}

/**
 * The node a path leads to, or the deepest one that exists on the way (a missing field is reported
 * where its mapping starts). An alias is not followed: the error points at the `*name` in this file.
 */
function nodeAt(doc: Document, path: readonly (string | number)[], atKey = false): YamlNode | null {
  let node: unknown = doc.contents;
  let found: YamlNode | null = isNode(node) ? node : null;
  for (const [i, seg] of path.entries()) {
    if (isAlias(node)) break;
    let next: unknown;
    if (isMap(node)) {
      const pair = node.items.find((p) => isScalar(p.key) && String(p.key.value) === String(seg));
      if (!pair) break;
      const keyWanted = atKey && i === path.length - 1;
      next = isNode(pair.value) && pair.value.range && !keyWanted ? pair.value : pair.key;
    } else if (isSeq(node) && typeof seg === 'number') {
      next = node.items[seg];
    } else {
      break;
    }
    if (!isNode(next) || !next.range) break;
    node = next;
    found = next;
  }
  return found;
}

function errorAt(file: string, doc: Document, counter: LineCounter, path: readonly (string | number)[], message: string, extra = 0, atKey = false): WorkflowLoadError {
  const node = nodeAt(doc, path, atKey);
  const { line, col } = counter.linePos((node?.range?.[0] ?? 0) + extra);
  return loadError(file, line, col, path, message);
}

/**
 * Where inside a scalar's source an offset of its value falls, when that is simple to tell (one line,
 * no escapes); otherwise 0, the scalar's start, which still names the right line.
 */
function offsetInScalar(source: string, node: YamlNode | null, valueOffset: number): number {
  if (!isScalar(node) || !node.range) return 0;
  const raw = source.slice(node.range[0], node.range[1]);
  if (raw.includes('\n')) return 0;
  if (node.type === 'PLAIN') return valueOffset;
  if (node.type === 'QUOTE_DOUBLE' && !raw.includes('\\')) return valueOffset + 1;
  if (node.type === 'QUOTE_SINGLE' && !raw.slice(1, -1).includes("''")) return valueOffset + 1;
  return 0;
}

function issuePath(issue: v.BaseIssue<unknown>): WorkflowIssuePath {
  return (issue.path ?? []).map((p) => p.key as string | number);
}

/**
 * One file's text into a definition, or the first problem in it (nearest the top). `file` is the
 * name inside the workflows directory; it gives the id. Never throws.
 */
export function parseWorkflowFile(file: string, source: string, options: WorkflowLoadOptions = {}): WorkflowParseResult {
  const fail = (error: WorkflowLoadError): WorkflowParseResult => ({ ok: false, error });
  const stem = FILE_NAME.exec(file)?.[1];
  if (stem === undefined) return fail(loadError(file, 1, 1, [], 'file name must be letters, digits, _ and - (at most 64) followed by .yaml or .yml'));
  if (source.length > MAX_WORKFLOW_FILE_BYTES || Buffer.byteLength(source, 'utf8') > MAX_WORKFLOW_FILE_BYTES) return fail(loadError(file, 1, 1, [], `file is over the ${MAX_WORKFLOW_FILE_BYTES}-byte limit`));

  const counter = new LineCounter();
  let doc: Document;
  try {
    // Deep nesting makes yaml's composer overflow the stack; it reports that as a document error, but
    // anything it throws instead is still this file's problem, not the loader's.
    doc = parseDocument(source, { lineCounter: counter, prettyErrors: false, uniqueKeys: true });
  } catch (err) {
    return fail(loadError(file, 1, 1, [], `not valid YAML (${(err as Error).message})`));
  }
  const yamlProblem = doc.errors[0] ?? doc.warnings[0];
  if (yamlProblem) {
    const { line, col } = counter.linePos(yamlProblem.pos[0]);
    return fail(loadError(file, line, col, [], `not valid YAML: ${yamlProblem.message.split('\n')[0]}`));
  }
  // Tags (`!foo`, `!!binary`) would turn text into other kinds of values; a workflow file needs none.
  const tagged: YamlNode[] = [];
  visit(doc, {
    Node(_key, node) {
      if (!isNode(node) || !node.tag) return undefined;
      tagged.push(node);
      return visit.BREAK;
    },
  });
  if (tagged[0]) {
    const { line, col } = counter.linePos(tagged[0].range?.[0] ?? 0);
    const tag = String(tagged[0].tag).replace(/^tag:yaml\.org,2002:/, '!!');
    return fail(loadError(file, line, col, [], `YAML tags (${tag}) are not supported`));
  }

  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: MAX_YAML_ALIAS_COUNT });
  } catch (err) {
    return fail(loadError(file, 1, 1, [], `not usable YAML (${(err as Error).message})`));
  }

  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    // valibot's object schemas take an array for an object (and then ask for its fields).
    return fail(errorAt(file, doc, counter, [], 'must be a mapping with at least steps: (and name:, variables:, trigger:)'));
  }
  const parsed = v.safeParse(WorkflowDefinitionSchema, value);
  if (!parsed.success) {
    // valibot reports in schema order; the one nearest the top of the file is the one to fix first.
    // A field that should not be there, or a bad name, is pointed at by its key: the value is not the problem.
    const atKey = (issue: v.BaseIssue<unknown>) => (issue.expected === 'never' && issue.kind === 'schema') || issue.path?.at(-1)?.origin === 'key';
    const located = parsed.issues.map((issue) => errorAt(file, doc, counter, issuePath(issue), issue.message, 0, atKey(issue)));
    return fail(located.reduce((a, b) => (b.line < a.line || (b.line === a.line && b.column < a.column) ? b : a)));
  }
  const def = parsed.output;
  if (def.id !== undefined && def.id !== stem) return fail(errorAt(file, doc, counter, ['id'], `"${def.id}" differs from the file name; the id of ${file} is "${stem}" (rename the file or drop id)`));

  const issues = checkWorkflowDefinition(def).map((i) => errorAt(file, doc, counter, i.path, i.message));
  if (options.checkExpression) {
    def.steps.forEach((step, i) => {
      if (step.type !== 'condition') return;
      const problem = options.checkExpression!(step.if);
      if (!problem) return;
      const path = ['steps', i, 'if'];
      issues.push(errorAt(file, doc, counter, path, problem.message, offsetInScalar(source, nodeAt(doc, path), problem.offset)));
    });
  }
  if (issues.length > 0) return fail(issues.reduce((a, b) => (b.line < a.line || (b.line === a.line && b.column < a.column) ? b : a)));
  return { ok: true, definition: { ...def, id: stem, name: def.name ?? stem } };
}

/**
 * Reads at most `limit` bytes of a regular file. Opened non-blocking and checked on the descriptor,
 * so a FIFO named `x.yaml` cannot hang the loader and a file swapped after a stat is still checked.
 */
function readBounded(path: string, limit: number): { text: string } | { problem: string } {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (err) {
    return { problem: `cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})` };
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) return { problem: 'is not a regular file' };
    if (st.size > limit) return { problem: `is ${st.size} bytes, over the ${limit}-byte limit` };
    const buf = Buffer.alloc(limit + 1);
    let n = 0;
    for (let got = -1; got !== 0 && n < buf.length; n += got) got = readSync(fd, buf, n, buf.length - n, n);
    if (n > limit) return { problem: `is over the ${limit}-byte limit` };
    try {
      return { text: new TextDecoder('utf-8', { fatal: true }).decode(buf.subarray(0, n)) };
    } catch {
      return { problem: 'is not UTF-8 text' };
    }
  } catch (err) {
    return { problem: `cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})` };
  } finally {
    closeSync(fd);
  }
}

/**
 * Every definition in `dir` (the home's `workflows/`), with one error for each file refused. A
 * missing directory is no workflows. Hidden files (editor locks such as `.#review.yaml`) are skipped.
 * Synchronous and bounded (file count and size caps), so a reload is one step with nothing between.
 */
export function loadWorkflowDefinitions(dir: string, options: WorkflowLoadOptions = {}): WorkflowDefinitions {
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => !n.startsWith('.') && /\.ya?ml$/.test(n)).sort();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { definitions: [], errors: [] };
    return { definitions: [], errors: [loadError('.', 1, 1, [], `workflows directory cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`)] };
  }
  const byId = new Map<string, { file: string; definition: WorkflowDefinition }>();
  const errors: WorkflowLoadError[] = [];
  names.forEach((file, i) => {
    if (i >= MAX_WORKFLOW_FILES) {
      if (i === MAX_WORKFLOW_FILES) errors.push(loadError(file, 1, 1, [], `not loaded, nor any file after it: at most ${MAX_WORKFLOW_FILES} workflow files are read`));
      return;
    }
    const read = readBounded(join(dir, file), MAX_WORKFLOW_FILE_BYTES);
    if ('problem' in read) {
      errors.push(loadError(file, 1, 1, [], `file ${read.problem}`));
      return;
    }
    const result = parseWorkflowFile(file, read.text, options);
    if (!result.ok) {
      errors.push(result.error);
      return;
    }
    const first = byId.get(result.definition.id);
    if (first) {
      errors.push(loadError(file, 1, 1, [], `workflow id "${result.definition.id}" is already defined by ${first.file}`));
      return;
    }
    byId.set(result.definition.id, { file, definition: result.definition });
  });
  const definitions = [...byId.values()].map((d) => d.definition).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return { definitions, errors };
}
