import { matchWorkflowReference, type WorkflowReference } from '../schemas/index.js';

/*
 * `$` references in prompt, message and `if` texts (SPEC.md "Variable references").
 *
 * Rules, chosen to do what someone writing a prompt expects:
 * - `$name` and `$variables.name` read a variable (defaults merged with run-time overrides by the
 *   caller); the longest name wins (`$topics` is `topics`, not `topic` + "s"), as in shell and
 *   Python's string.Template.
 * - An unknown variable is left as written: prompts often carry shell text (`echo $HOME`) that was
 *   never meant as a reference, and a visible `$typo` in the agent's prompt is easier to spot than
 *   a silent empty string.
 * - `$steps.<id>.output` reads a step's output; a step that has not produced one (not run yet, on a
 *   branch not taken, skipped) reads as empty text. The loader refuses ids that name no step, so
 *   this never hides a typo.
 * - `$$` is a literal `$` (string.Template's escape), for the rare text that needs `$name` verbatim
 *   while `name` is a variable.
 * - Substitution is one pass: a value that itself contains `$x` is not read again, so what an agent
 *   answered can never pull in other values.
 * In `if` texts references are not pasted into the expression source; see workflow-expression.logic.ts.
 */

/** What references read: plain records so a run's state stays JSON-safe and replayable. */
export interface WorkflowScope {
  variables: Readonly<Record<string, string>>;
  /** Step id → output, for steps that produced one. */
  outputs: Readonly<Record<string, string>>;
}

/**
 * A substituted text may not grow past this (chars): ten references to a large agent answer must not
 * turn one prompt into hundreds of MB held in memory and written to the log.
 */
export const MAX_SUBSTITUTED_CHARS = 4 * 1024 * 1024;

/** A variable's value, a step's output (empty when none yet), or undefined for an unknown variable. */
export function resolveWorkflowReference(ref: WorkflowReference, scope: WorkflowScope): string | undefined {
  // Object.hasOwn: a variable named like an Object.prototype member must not read the prototype.
  if (ref.kind === 'variable') return Object.hasOwn(scope.variables, ref.name) ? scope.variables[ref.name] : undefined;
  return Object.hasOwn(scope.outputs, ref.step) ? scope.outputs[ref.step] : '';
}

export type TemplatePart = string | { ref: WorkflowReference; raw: string; offset: number };

/** A text as literal runs (with `$$` already turned into `$`) and references, each with its offset. */
export function parseWorkflowTemplate(text: string): TemplatePart[] {
  const parts: TemplatePart[] = [];
  let literal = '';
  let i = 0;
  while (i < text.length) {
    const dollar = text.indexOf('$', i);
    if (dollar === -1) {
      literal += text.slice(i);
      break;
    }
    literal += text.slice(i, dollar);
    if (text[dollar + 1] === '$') {
      literal += '$';
      i = dollar + 2;
      continue;
    }
    const m = matchWorkflowReference(text, dollar);
    if (!m) {
      literal += '$';
      i = dollar + 1;
      continue;
    }
    if (literal) parts.push(literal);
    literal = '';
    parts.push({ ref: m.ref, raw: text.slice(dollar, m.end), offset: dollar });
    i = m.end;
  }
  if (literal) parts.push(literal);
  return parts;
}

export type SubstituteResult = { ok: true; text: string } | { ok: false; error: string };

/** Joins template parts with the scope's values; the one place the size cap is enforced. */
export function renderWorkflowTemplate(parts: readonly TemplatePart[], scope: WorkflowScope, limit = MAX_SUBSTITUTED_CHARS): SubstituteResult {
  let out = '';
  for (const part of parts) {
    const piece = typeof part === 'string' ? part : resolveWorkflowReference(part.ref, scope) ?? part.raw;
    if (out.length + piece.length > limit) return { ok: false, error: `the text would be over ${limit} characters once references are filled in` };
    out += piece;
  }
  return { ok: true, text: out };
}

/** A prompt or message with its references filled in (rules at the top of this file). */
export function substituteWorkflowText(text: string, scope: WorkflowScope, limit = MAX_SUBSTITUTED_CHARS): SubstituteResult {
  return renderWorkflowTemplate(parseWorkflowTemplate(text), scope, limit);
}
