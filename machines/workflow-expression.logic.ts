import { matchWorkflowReference, type WorkflowReference } from '../schemas/index.js';
import { parseWorkflowTemplate, renderWorkflowTemplate, resolveWorkflowReference, type TemplatePart, type WorkflowScope } from './workflow-vars.logic.js';

/*
 * The condition language of workflow `if` texts (SPEC.md "Expressions": a safe evaluator, no eval).
 * A tokenizer, a recursive-descent parser and a tree walker; nothing reaches JavaScript's own
 * property lookup, so `__proto__`, `constructor` and friends are just unknown names.
 *
 *   expr       := or
 *   or         := and ("or" and)*
 *   and        := not ("and" not)*
 *   not        := "not" not | comparison
 *   comparison := postfix (("==" | "!=" | "in" | "not in") postfix)?     one comparison, no chains
 *   postfix    := atom ("." method "(" [expr ("," expr)*] ")")*
 *   atom       := string | number | "-" number | true | false | none | null | reference | "(" expr ")"
 *
 * Values are text, numbers, booleans and none. Semantics follow Python where the original workflows
 * came from, with two choices where a workflow author would be surprised otherwise:
 * - `==` between text and a number compares numerically when the text is a plain decimal
 *   (`$count == 3` with count "3" is true), since every substituted value is text.
 * - `in` (substring) and method arguments accept numbers as their decimal text.
 * `and`/`or` short-circuit and give true/false. Methods (on text only): lower, upper, strip, lstrip,
 * rstrip, startswith(x), endswith(x), contains(x). No `len` and no ordering (`<`): SPEC names string
 * comparisons only, and `x == ""` covers emptiness.
 *
 * References, injection-safe: a bare `$ref` is one value token, and a `$ref` inside a quoted string
 * is filled into that string's value after its quotes and escapes are read. Either way a value is
 * never read as expression source, so an answer like `yes" or "1"=="1` stays text. A bare reference
 * to an unknown variable is an error (it cannot be left "as written" inside an expression); inside a
 * quoted string it stays as written, the text rule.
 */

export type WorkflowValue = string | number | boolean | null;

export interface ExpressionError {
  message: string;
  /** 0-based offset in the expression text. */
  offset: number;
}

/** Far above any hand-written condition; refused before any work. */
export const MAX_EXPRESSION_CHARS = 4096;
export const MAX_EXPRESSION_TOKENS = 512;
/** Parentheses and `not`s nested this deep are an attack, not a condition; bounds the parser's recursion. */
export const MAX_EXPRESSION_DEPTH = 32;
/** Largest text an expression may build (quoted strings with references, upper()/lower() results). */
export const MAX_EXPRESSION_VALUE_CHARS = 4 * 1024 * 1024;
const MAX_NUMBER_CHARS = 32;

type Node =
  | { k: 'value'; value: WorkflowValue; at: number }
  | { k: 'text'; parts: TemplatePart[]; at: number }
  | { k: 'ref'; ref: WorkflowReference; raw: string; at: number }
  | { k: 'not'; e: Node; at: number }
  | { k: 'and' | 'or'; a: Node; b: Node; at: number }
  | { k: 'cmp'; op: '==' | '!=' | 'in' | 'not in'; a: Node; b: Node; at: number }
  | { k: 'call'; target: Node; method: string; args: Node[]; at: number };

/** A parsed expression: opaque, made by parseWorkflowExpression, evaluated any number of times. */
export interface WorkflowExpression {
  readonly source: string;
  readonly root: unknown;
}

class Fail extends Error {
  constructor(message: string, readonly offset: number) {
    super(message);
  }
}

// ---------------------------------------------------------------- tokens

type Token =
  | { t: 'str'; parts: TemplatePart[]; at: number }
  | { t: 'num'; value: number; at: number }
  | { t: 'ref'; ref: WorkflowReference; raw: string; at: number }
  | { t: 'name'; name: string; at: number }
  | { t: 'op'; op: '==' | '!=' | '(' | ')' | '.' | ',' | '-'; at: number }
  | { t: 'end'; at: number };

const ESCAPES: Readonly<Record<string, string>> = { '\\': '\\', "'": "'", '"': '"', n: '\n', t: '\t', r: '\r' };
const NAME = /[A-Za-z_][A-Za-z0-9_]*/y;
const NUMBER = /[0-9]+(?:\.[0-9]+)?/y;

/** Characters people try from other languages, with what to write instead. */
const HINTS: Readonly<Record<string, string>> = {
  '=': 'assignment is not supported; compare with ==',
  '!': 'use not instead of !',
  '&': 'use and instead of &&',
  '|': 'use or instead of ||',
  '[': 'indexing is not supported',
  '<': 'ordering comparisons are not supported; use ==, != or in',
  '>': 'ordering comparisons are not supported; use ==, != or in',
  '+': 'arithmetic is not supported',
  '*': 'arithmetic is not supported',
  '/': 'arithmetic is not supported',
};

function tokenize(src: string): Token[] {
  const tokens: Token[] = [];
  const push = (tok: Token) => {
    if (tokens.length >= MAX_EXPRESSION_TOKENS) throw new Fail(`too many tokens (at most ${MAX_EXPRESSION_TOKENS})`, tok.at);
    tokens.push(tok);
  };
  let i = 0;
  while (i < src.length) {
    const c = src[i]!;
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') {
      i++;
      continue;
    }
    if (c === "'" || c === '"') {
      const start = i;
      let raw = '';
      i++;
      for (;;) {
        if (i >= src.length) throw new Fail('unterminated string (no closing quote)', start);
        const d = src[i]!;
        if (d === c) break;
        if (d === '\\') {
          const e = ESCAPES[src[i + 1] ?? ''];
          if (e === undefined) throw new Fail(`unknown escape \\${src[i + 1] ?? ''} (use \\\\, \\', \\", \\n, \\t or \\r)`, i);
          raw += e;
          i += 2;
          continue;
        }
        raw += d;
        i++;
      }
      i++;
      push({ t: 'str', parts: parseWorkflowTemplate(raw), at: start });
      continue;
    }
    if (c === '$') {
      const m = matchWorkflowReference(src, i);
      if (!m) throw new Fail('$ must start a reference: $name, $variables.name or $steps.<id>.output', i);
      push({ t: 'ref', ref: m.ref, raw: src.slice(i, m.end), at: i });
      i = m.end;
      continue;
    }
    NUMBER.lastIndex = i;
    const num = NUMBER.exec(src);
    if (num) {
      if (num[0].length > MAX_NUMBER_CHARS) throw new Fail(`number too long (at most ${MAX_NUMBER_CHARS} characters)`, i);
      push({ t: 'num', value: Number(num[0]), at: i });
      i += num[0].length;
      continue;
    }
    NAME.lastIndex = i;
    const name = NAME.exec(src);
    if (name) {
      push({ t: 'name', name: name[0], at: i });
      i += name[0].length;
      continue;
    }
    const two = src.slice(i, i + 2);
    if (two === '==' || two === '!=') {
      push({ t: 'op', op: two, at: i });
      i += 2;
      continue;
    }
    if (c === '(' || c === ')' || c === '.' || c === ',' || c === '-') {
      push({ t: 'op', op: c, at: i });
      i++;
      continue;
    }
    throw new Fail(HINTS[c] ?? `unexpected character ${JSON.stringify(c)}`, i);
  }
  tokens.push({ t: 'end', at: src.length });
  return tokens;
}

// ---------------------------------------------------------------- parser

const METHODS = new Map<string, number>([
  ['lower', 0], ['upper', 0], ['strip', 0], ['lstrip', 0], ['rstrip', 0],
  ['startswith', 1], ['endswith', 1], ['contains', 1],
]);
const ALLOWED_METHODS = [...METHODS.keys()].join(', ');
const CONSTANTS = new Map<string, WorkflowValue>([
  ['true', true], ['false', false], ['none', null], ['null', null],
  // Python spellings, since the original workflows were evaluated by Python.
  ['True', true], ['False', false], ['None', null],
]);

function describe(tok: Token): string {
  switch (tok.t) {
    case 'end': return 'the end';
    case 'str': return 'a string';
    case 'num': return 'a number';
    case 'ref': return tok.raw;
    case 'name': return tok.name;
    case 'op': return tok.op;
  }
}

function parse(tokens: Token[]): Node {
  let pos = 0;
  let depth = 0;
  const peek = () => tokens[pos]!;
  const isName = (name: string, tok = peek()) => tok.t === 'name' && tok.name === name;
  const isOp = (op: string, tok = peek()) => tok.t === 'op' && tok.op === op;
  const expect = (op: string, what: string) => {
    if (!isOp(op)) throw new Fail(`expected ${what}, found ${describe(peek())}`, peek().at);
    pos++;
  };
  const nested = <T>(at: number, f: () => T): T => {
    if (++depth > MAX_EXPRESSION_DEPTH) throw new Fail(`nested too deeply (at most ${MAX_EXPRESSION_DEPTH} levels)`, at);
    try {
      return f();
    } finally {
      depth--;
    }
  };

  const or = (): Node => {
    let a = and();
    while (isName('or')) {
      const at = tokens[pos++]!.at;
      a = { k: 'or', a, b: and(), at };
    }
    return a;
  };
  const and = (): Node => {
    let a = not();
    while (isName('and')) {
      const at = tokens[pos++]!.at;
      a = { k: 'and', a, b: not(), at };
    }
    return a;
  };
  const not = (): Node => {
    if (isName('not')) {
      const at = tokens[pos++]!.at;
      return nested(at, () => ({ k: 'not', e: not(), at }));
    }
    return comparison();
  };
  const comparison = (): Node => {
    const a = postfix();
    const op = comparisonOp();
    if (!op) return a;
    const b = postfix();
    if (comparisonOp()) throw new Fail('chained comparisons are not supported; join them with and', tokens[pos - 1]!.at);
    return { k: 'cmp', op: op.op, a, b, at: op.at };
  };
  const comparisonOp = (): { op: '==' | '!=' | 'in' | 'not in'; at: number } | null => {
    const tok = peek();
    if (tok.t === 'op' && (tok.op === '==' || tok.op === '!=')) {
      pos++;
      return { op: tok.op, at: tok.at };
    }
    if (isName('in')) {
      pos++;
      return { op: 'in', at: tok.at };
    }
    if (isName('not') && isName('in', tokens[pos + 1])) {
      pos += 2;
      return { op: 'not in', at: tok.at };
    }
    return null;
  };
  const postfix = (): Node => {
    let target = atom();
    while (isOp('.')) {
      pos++;
      const tok = peek();
      if (tok.t !== 'name') throw new Fail(`expected a method name after ., found ${describe(tok)}`, tok.at);
      const arity = METHODS.get(tok.name);
      if (arity === undefined) throw new Fail(`${tok.name} is not an allowed method (allowed: ${ALLOWED_METHODS})`, tok.at);
      pos++;
      if (!isOp('(')) throw new Fail(`${tok.name} is a method: call it as ${tok.name}(${arity ? 'x' : ''})`, peek().at);
      pos++;
      const args: Node[] = [];
      if (!isOp(')')) {
        args.push(nested(tok.at, or));
        while (isOp(',')) {
          pos++;
          args.push(nested(tok.at, or));
        }
      }
      expect(')', `) to close ${tok.name}(`);
      if (args.length !== arity) throw new Fail(`${tok.name}() takes ${arity === 0 ? 'no argument' : `${arity} argument`}, given ${args.length}`, tok.at);
      target = { k: 'call', target, method: tok.name, args, at: tok.at };
    }
    return target;
  };
  const atom = (): Node => {
    const tok = peek();
    switch (tok.t) {
      case 'str':
        pos++;
        return { k: 'text', parts: tok.parts, at: tok.at };
      case 'num':
        pos++;
        return { k: 'value', value: tok.value, at: tok.at };
      case 'ref':
        pos++;
        return { k: 'ref', ref: tok.ref, raw: tok.raw, at: tok.at };
      case 'name': {
        const value = CONSTANTS.get(tok.name);
        if (value === undefined) {
          throw new Fail(
            ['and', 'or', 'in', 'not'].includes(tok.name) ? `expected a value, found ${tok.name}` : `unknown name ${tok.name} (write text in quotes, or a $reference)`,
            tok.at,
          );
        }
        pos++;
        return { k: 'value', value, at: tok.at };
      }
      case 'op':
        if (tok.op === '(') {
          pos++;
          const inner = nested(tok.at, or);
          expect(')', ') to close (');
          return inner;
        }
        if (tok.op === '-') {
          const next = tokens[pos + 1]!;
          if (next.t !== 'num') throw new Fail('- is only allowed before a number', tok.at);
          pos += 2;
          return { k: 'value', value: -next.value, at: tok.at };
        }
        throw new Fail(`expected a value, found ${tok.op}`, tok.at);
      case 'end':
        throw new Fail('expected a value, found the end', tok.at);
    }
  };

  const root = or();
  if (peek().t !== 'end') throw new Fail(`unexpected ${describe(peek())} (expected and, or, or the end)`, peek().at);
  return root;
}

// ---------------------------------------------------------------- evaluation

function truthy(x: WorkflowValue): boolean {
  if (typeof x === 'string') return x !== '';
  if (typeof x === 'number') return x !== 0 && !Number.isNaN(x);
  return x === true;
}

const DECIMAL = /^[+-]?[0-9]+(?:\.[0-9]+)?$/;

function equal(a: WorkflowValue, b: WorkflowValue): boolean {
  if (typeof a === 'string' && typeof b === 'number') return DECIMAL.test(a.trim()) && Number(a.trim()) === b;
  if (typeof a === 'number' && typeof b === 'string') return equal(b, a);
  return a === b;
}

const typeName = (x: WorkflowValue) => (x === null ? 'none' : typeof x === 'string' ? 'text' : typeof x === 'number' ? 'a number' : 'true/false');

/** Text for `in` and method arguments: text as is, numbers as their decimal text. */
function asText(x: WorkflowValue, what: string, at: number): string {
  if (typeof x === 'string') return x;
  if (typeof x === 'number') return String(x);
  throw new Fail(`${what} must be text, not ${typeName(x)}`, at);
}

function bounded(s: string, at: number): string {
  if (s.length > MAX_EXPRESSION_VALUE_CHARS) throw new Fail(`text too long (over ${MAX_EXPRESSION_VALUE_CHARS} characters)`, at);
  return s;
}

function evaluate(node: Node, scope: WorkflowScope): WorkflowValue {
  switch (node.k) {
    case 'value':
      return node.value;
    case 'text': {
      const r = renderWorkflowTemplate(node.parts, scope, MAX_EXPRESSION_VALUE_CHARS);
      if (!r.ok) throw new Fail(r.error, node.at);
      return r.text;
    }
    case 'ref': {
      const value = resolveWorkflowReference(node.ref, scope);
      if (value === undefined) throw new Fail(`unknown variable ${node.raw}`, node.at);
      return value;
    }
    case 'not':
      return !truthy(evaluate(node.e, scope));
    case 'and':
      return truthy(evaluate(node.a, scope)) && truthy(evaluate(node.b, scope));
    case 'or':
      return truthy(evaluate(node.a, scope)) || truthy(evaluate(node.b, scope));
    case 'cmp': {
      const a = evaluate(node.a, scope);
      const b = evaluate(node.b, scope);
      if (node.op === '==') return equal(a, b);
      if (node.op === '!=') return !equal(a, b);
      const found = asText(b, `the right side of ${node.op}`, node.at).includes(asText(a, `the left side of ${node.op}`, node.at));
      return node.op === 'in' ? found : !found;
    }
    case 'call': {
      const target = evaluate(node.target, scope);
      if (typeof target !== 'string') throw new Fail(`${node.method}() works on text, not ${typeName(target)}`, node.at);
      const arg = () => asText(evaluate(node.args[0]!, scope), `the argument of ${node.method}()`, node.at);
      switch (node.method) {
        case 'lower': return bounded(target.toLowerCase(), node.at);
        case 'upper': return bounded(target.toUpperCase(), node.at);
        case 'strip': return target.trim();
        case 'lstrip': return target.trimStart();
        case 'rstrip': return target.trimEnd();
        case 'startswith': return target.startsWith(arg());
        case 'endswith': return target.endsWith(arg());
        case 'contains': return target.includes(arg());
      }
      throw new Fail(`${node.method} is not an allowed method`, node.at);
    }
  }
}

// ---------------------------------------------------------------- API

export type ExpressionParse = { ok: true; expression: WorkflowExpression } | { ok: false; error: ExpressionError };
export type ExpressionResult<T> = { ok: true; value: T } | { ok: false; error: ExpressionError };

/** Reads an `if` text without any values, so a syntax error is found when the file loads. */
export function parseWorkflowExpression(source: string): ExpressionParse {
  if (source.length > MAX_EXPRESSION_CHARS) return { ok: false, error: { message: `expression too long (at most ${MAX_EXPRESSION_CHARS} characters)`, offset: 0 } };
  try {
    return { ok: true, expression: { source, root: parse(tokenize(source)) } };
  } catch (err) {
    if (err instanceof Fail) return { ok: false, error: { message: err.message, offset: err.offset } };
    throw err;
  }
}

/** The expression's value with the scope's references filled in; type mismatches are errors. */
export function evaluateWorkflowExpression(expression: WorkflowExpression, scope: WorkflowScope): ExpressionResult<WorkflowValue> {
  try {
    return { ok: true, value: evaluate(expression.root as Node, scope) };
  } catch (err) {
    if (err instanceof Fail) return { ok: false, error: { message: err.message, offset: err.offset } };
    throw err;
  }
}

/** A condition step's `if`: parsed and evaluated, its value taken as true/false the Python way ("" and 0 are false). */
export function evaluateWorkflowCondition(source: string, scope: WorkflowScope): ExpressionResult<boolean> {
  const parsed = parseWorkflowExpression(source);
  if (!parsed.ok) return parsed;
  const r = evaluateWorkflowExpression(parsed.expression, scope);
  return r.ok ? { ok: true, value: truthy(r.value) } : r;
}

/** The loader's `checkExpression` hook (store/ cannot import this folder, so the composition root passes it in). */
export function checkWorkflowExpression(source: string): ExpressionError | null {
  const r = parseWorkflowExpression(source);
  return r.ok ? null : r.error;
}

/** `column 7: unknown name foo`, for step errors shown to a person. */
export function describeExpressionError(error: ExpressionError): string {
  return `column ${error.offset + 1}: ${error.message}`;
}
