import * as v from 'valibot';
import { PROVIDERS } from './config.schema.js';

/*
 * A workflow definition file, `workflows/<id>.yaml` (SPEC.md "Workflow definition"). Objects are
 * strict: a user writes these by hand, and a typo (`promt:`) silently ignored would make a step send
 * an empty prompt; an unknown field is refused with its line instead. `description` is the one field
 * beyond SPEC's, accepted everywhere, because commented workflows are common and it changes nothing.
 *
 * The schema checks each value on its own; rules between values (ids unique, jump targets exist,
 * what may run inside `parallel`) are `checkWorkflowDefinition`'s, so both give an issue with a path
 * that the loader turns into file:line:column.
 */

export const MAX_WORKFLOW_STEPS = 100;
export const MAX_WORKFLOW_VARIABLES = 100;
/** Far above any prompt a person writes; bounds what one step can make the engine hold. */
export const MAX_WORKFLOW_TEXT_CHARS = 100_000;
const MAX_ID_CHARS = 64;
const MAX_NAME_CHARS = 200;
/** One week: a step that needs longer is a job for a task, and a typo like 36000000 is caught. */
export const MAX_STEP_TIMEOUT_SECONDS = 7 * 24 * 3600;
const MAX_RETRY_ATTEMPTS = 100;
const MAX_RETRY_DELAY_SECONDS = 24 * 3600;
/** SPEC.md Limits: "`timeout` default 3600" when the config block gives none. */
export const DEFAULT_WORKFLOW_STEP_TIMEOUT = 3600;

export const WORKFLOW_STEP_TYPES = ['ask_agent', 'notify', 'wait_for_reply', 'condition', 'parallel'] as const;
export const ON_ERROR_STRATEGIES = ['abort', 'retry', 'fallback', 'skip'] as const;
export type OnErrorStrategy = (typeof ON_ERROR_STRATEGIES)[number];
/** What a step inside `parallel` may do on error: a fallback jump has nowhere to go from a branch. */
const NESTED_ON_ERROR = ['abort', 'retry', 'skip'] as const;
/** The types a `parallel` block may run: the others jump (condition), pause the run (wait_for_reply) or nest. */
export const PARALLEL_STEP_TYPES = ['ask_agent', 'notify'] as const;
/** `on_error: retry` without a `retry` block: three attempts in all, back to back. */
export const DEFAULT_RETRY = { max_attempts: 3, delay_seconds: 0 } as const;

/**
 * Messages for an object's own issues: valibot reports a missing field and an unknown one through
 * the object schema, and its default wording ("Expected never but received ...") means nothing to
 * someone editing YAML.
 */
function objectMessage(unknownField: (key: string) => string = (key) => `unknown field "${key}"`) {
  return (issue: v.BaseIssue<unknown>): string => {
    if (issue.kind === 'schema' && issue.expected === 'never') return unknownField(String(issue.input));
    if (issue.received === 'undefined' && issue.expected?.startsWith('"')) return 'is required';
    return 'must be a mapping (key: value lines)';
  };
}
const strict = <E extends v.ObjectEntries>(entries: E, unknownField?: (key: string) => string) =>
  v.strictObject(entries, objectMessage(unknownField));
/** A strict object that also refuses a list: valibot's object schemas take `[1]` for an object with key "0". */
const mapping = <E extends v.ObjectEntries>(entries: E, unknownField?: (key: string) => string) => v.pipe(
  v.custom<Record<string, unknown>>((x) => typeof x === 'object' && x !== null && !Array.isArray(x), 'must be a mapping (key: value lines)'),
  strict(entries, unknownField),
);

const text = (what = 'text (quote it if YAML reads it as a number or true/false)') => v.pipe(
  v.string(`must be ${what}`),
  v.maxLength(MAX_WORKFLOW_TEXT_CHARS, `must be at most ${MAX_WORKFLOW_TEXT_CHARS} characters`),
);
const nonEmptyText = (what?: string) => v.pipe(text(what), v.check((s) => s.trim() !== '', 'must not be empty'));

/**
 * Step and workflow ids: letters, digits, `_` and `-`, so `$steps.<id>.output` can find where the id
 * ends and a workflow id is also its file name.
 */
export const WorkflowIdSchema = v.pipe(
  v.string('must be a string of letters, digits, _ and -'),
  v.regex(/^[A-Za-z0-9_-]+$/, 'must be letters, digits, _ and - only'),
  v.maxLength(MAX_ID_CHARS, `must be at most ${MAX_ID_CHARS} characters`),
);
const StepId = WorkflowIdSchema;

/** `variables` and `steps` would be shadowed by `$variables.x` and `$steps.x.output`. */
const RESERVED_VARIABLE_NAMES = new Set(['variables', 'steps', '__proto__', 'constructor', 'prototype']);
export const WORKFLOW_VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** A variable name, as the file declares it and as a run-time override (`--var key=val`) names it. */
export const WorkflowVariableNameSchema = v.pipe(
  v.string('must be a string'),
  v.regex(WORKFLOW_VARIABLE_NAME, 'must start with a letter or _ and hold letters, digits and _ only'),
  v.maxLength(MAX_ID_CHARS, `must be at most ${MAX_ID_CHARS} characters`),
  v.check((name) => !RESERVED_VARIABLE_NAMES.has(name), 'is a reserved name'),
);

const VariablesSchema = v.pipe(
  // Checked before v.record, which silently drops `__proto__`/`constructor` keys instead of refusing them.
  v.custom<Record<string, unknown>>(
    (x) => typeof x === 'object' && x !== null && !Array.isArray(x) && Object.keys(x).every((k) => !RESERVED_VARIABLE_NAMES.has(k)),
    (issue) => typeof issue.input === 'object' && issue.input !== null && !Array.isArray(issue.input)
      ? `uses a reserved name (${Object.keys(issue.input).filter((k) => RESERVED_VARIABLE_NAMES.has(k)).join(', ')})`
      : 'must be a mapping of names to text',
  ),
  v.record(WorkflowVariableNameSchema, text('text (quote numbers, e.g. "3.10", so they keep their digits)')),
  v.check((r) => Object.keys(r).length <= MAX_WORKFLOW_VARIABLES, `must hold at most ${MAX_WORKFLOW_VARIABLES} variables`),
);

const TimeoutSchema = v.pipe(
  v.number('must be a number of seconds'),
  v.check((n) => Number.isFinite(n) && n > 0 && n <= MAX_STEP_TIMEOUT_SECONDS, `must be more than 0 and at most ${MAX_STEP_TIMEOUT_SECONDS} seconds`),
);

/** `max_attempts` counts every attempt, the first included: 3 means one try and two retries. */
const RetrySchema = mapping({
  max_attempts: v.optional(v.pipe(
    v.number('must be a whole number'),
    v.check((n) => Number.isInteger(n) && n >= 1 && n <= MAX_RETRY_ATTEMPTS, `must be a whole number from 1 to ${MAX_RETRY_ATTEMPTS}`),
  ), DEFAULT_RETRY.max_attempts),
  delay_seconds: v.optional(v.pipe(
    v.number('must be a number of seconds'),
    v.check((n) => Number.isFinite(n) && n >= 0 && n <= MAX_RETRY_DELAY_SECONDS, `must be from 0 to ${MAX_RETRY_DELAY_SECONDS} seconds`),
  ), DEFAULT_RETRY.delay_seconds),
});

const FallbackSchema = mapping({ goto: StepId });

const commonFields = {
  id: StepId,
  description: v.optional(text()),
  goto: v.optional(StepId),
  on_error: v.optional(v.picklist(ON_ERROR_STRATEGIES, `must be one of ${ON_ERROR_STRATEGIES.join(', ')}`), 'abort'),
  retry: v.optional(RetrySchema),
  fallback: v.optional(FallbackSchema),
  timeout: v.optional(TimeoutSchema),
};

/** A branch of `parallel` runs beside the others and ends there: it cannot jump anywhere. */
const nestedFields = {
  ...commonFields,
  goto: v.optional(v.never('a step inside a parallel block cannot jump (goto); set goto on the parallel step')),
  on_error: v.optional(v.picklist(NESTED_ON_ERROR, `must be one of ${NESTED_ON_ERROR.join(', ')} inside a parallel block (a fallback jump cannot leave a branch)`), 'abort'),
  fallback: v.optional(v.never('a step inside a parallel block cannot jump (fallback); set it on the parallel step')),
};

const askAgentEntries = {
  type: v.literal('ask_agent'),
  agent: v.pipe(
    v.string('must be an agent name'),
    v.regex(/^[A-Za-z0-9_-]+$/, 'must be an agent name of letters, digits, _ and -'),
    v.maxLength(MAX_ID_CHARS, `must be at most ${MAX_ID_CHARS} characters`),
  ),
  prompt: nonEmptyText(),
  new_session: v.optional(v.boolean('must be true or false'), true),
  provider: v.optional(v.picklist(PROVIDERS, `must be one of ${PROVIDERS.join(', ')}`)),
  model: v.optional(v.pipe(v.string('must be a model name'), v.maxLength(MAX_NAME_CHARS))),
};
const notifyEntries = { type: v.literal('notify'), message: nonEmptyText() };

export const AskAgentStepSchema = strict({ ...commonFields, ...askAgentEntries });
export const NotifyStepSchema = strict({ ...commonFields, ...notifyEntries });
export const WaitForReplyStepSchema = strict({ ...commonFields, type: v.literal('wait_for_reply'), message: nonEmptyText() });
/**
 * `then`/`else` name the step to go to; a missing one means "carry on with the next step", so
 * `if … then: skip_ahead` reads as a guard. A condition jumps only through them, never `goto`.
 */
export const ConditionStepSchema = strict({
  ...commonFields,
  type: v.literal('condition'),
  if: nonEmptyText('an expression in text (quote it)'),
  then: v.optional(StepId),
  else: v.optional(StepId),
  goto: v.optional(v.never('a condition jumps with then/else, not goto')),
});

const typeMessage = (allowed: readonly string[], where = '') => (issue: v.BaseIssue<unknown>): string =>
  issue.expected === 'Object' ? 'must be a step (a mapping with id: and type:)'
    : issue.received === 'undefined' ? `is required (one of ${allowed.join(', ')})`
      : `must be one of ${allowed.join(', ')}${where}`;

export const ParallelBranchStepSchema = v.variant('type', [
  strict({ ...nestedFields, ...askAgentEntries }),
  strict({ ...nestedFields, ...notifyEntries }),
], typeMessage(PARALLEL_STEP_TYPES, ' inside a parallel block (wait_for_reply, condition and parallel cannot run there)'));

export const ParallelStepSchema = strict({
  ...commonFields,
  type: v.literal('parallel'),
  steps: v.pipe(
    v.array(ParallelBranchStepSchema, 'must be a list of steps'),
    v.minLength(1, 'must hold at least one step'),
    v.maxLength(MAX_WORKFLOW_STEPS, `must hold at most ${MAX_WORKFLOW_STEPS} steps`),
  ),
});

export const WorkflowStepSchema = v.variant('type', [
  AskAgentStepSchema,
  NotifyStepSchema,
  WaitForReplyStepSchema,
  ConditionStepSchema,
  ParallelStepSchema,
], typeMessage(WORKFLOW_STEP_TYPES));

/** SPEC shows `manual: true` only; other trigger kinds are refused rather than ignored, so nobody waits for a cron that never fires. */
const TriggerSchema = mapping(
  { manual: v.optional(v.literal(true, 'must be true (a manual trigger is the only kind supported)'), true) },
  (key) => `unknown trigger "${key}": only manual: true is supported`,
);

export const WorkflowDefinitionSchema = strict({
  /** Optional: the file name gives it (see the loader); when present it must agree. */
  id: v.optional(WorkflowIdSchema),
  name: v.optional(v.pipe(v.string('must be text'), v.maxLength(MAX_NAME_CHARS, `must be at most ${MAX_NAME_CHARS} characters`))),
  description: v.optional(text()),
  trigger: v.optional(TriggerSchema, () => ({ manual: true as const })),
  variables: v.optional(VariablesSchema, () => ({})),
  steps: v.pipe(
    v.array(WorkflowStepSchema, 'must be a list of steps'),
    v.minLength(1, 'must hold at least one step'),
    v.maxLength(MAX_WORKFLOW_STEPS, `must hold at most ${MAX_WORKFLOW_STEPS} steps`),
  ),
});

export type WorkflowStep = v.InferOutput<typeof WorkflowStepSchema>;
export type AskAgentStep = v.InferOutput<typeof AskAgentStepSchema>;
export type NotifyStep = v.InferOutput<typeof NotifyStepSchema>;
export type WaitForReplyStep = v.InferOutput<typeof WaitForReplyStepSchema>;
export type ConditionStep = v.InferOutput<typeof ConditionStepSchema>;
export type ParallelStep = v.InferOutput<typeof ParallelStepSchema>;
export type ParallelBranchStep = v.InferOutput<typeof ParallelBranchStepSchema>;
/** The file as parsed; `WorkflowDefinition` is what the loader hands out, with `id` and `name` settled. */
export type WorkflowFile = v.InferOutput<typeof WorkflowDefinitionSchema>;
export type WorkflowDefinition = WorkflowFile & { id: string; name: string };

/**
 * Seconds a step may run: its own `timeout`, else for ask_agent the config's
 * `workflow.default_step_timeout` (SPEC: "timeout default 3600"). Other steps have no default
 * (null): a notify is instant, a wait_for_reply waits for the person as long as the run lives, and a
 * parallel block is bounded by its branches' own timeouts.
 */
export function stepTimeoutSeconds(step: WorkflowStep | ParallelBranchStep, config: { default_step_timeout: number } | undefined): number | null {
  if (step.timeout !== undefined) return step.timeout;
  return step.type === 'ask_agent' ? config?.default_step_timeout ?? DEFAULT_WORKFLOW_STEP_TIMEOUT : null;
}

// ---------------------------------------------------------------- references

/**
 * A `$` reference in prompt, message and `if` texts (SPEC.md "Variable references"). The grammar
 * lives here, beside the ids it points at, so the loader can check `$steps.<id>.output` against the
 * steps at load time and the run engine substitutes with the same reading.
 */
export type WorkflowReference =
  | { kind: 'variable'; name: string }
  | { kind: 'output'; step: string };

const VARIABLE_AT = /\$(?:variables\.)?([A-Za-z_][A-Za-z0-9_]*)/y;
const OUTPUT_AT = /\$steps\.([A-Za-z0-9_-]+)\.output(?![A-Za-z0-9_-])/y;

/**
 * The reference starting at `text[offset]` (which must be `$`), and where it ends; null when what
 * follows the `$` is not one (`$5`, `$ `), so the caller keeps it as plain text. `$steps.x.output`
 * is tried first because `$steps` alone would also read as a variable.
 */
export function matchWorkflowReference(text: string, offset: number): { ref: WorkflowReference; end: number } | null {
  OUTPUT_AT.lastIndex = offset;
  const out = OUTPUT_AT.exec(text);
  if (out) return { ref: { kind: 'output', step: out[1]! }, end: offset + out[0].length };
  VARIABLE_AT.lastIndex = offset;
  const name = VARIABLE_AT.exec(text);
  if (name) return { ref: { kind: 'variable', name: name[1]! }, end: offset + name[0].length };
  return null;
}

/** Every reference in a text with its offset, `$$` (a literal `$`) skipped. */
export function workflowReferences(text: string): Array<{ ref: WorkflowReference; offset: number }> {
  const found: Array<{ ref: WorkflowReference; offset: number }> = [];
  for (let i = text.indexOf('$'); i !== -1; i = text.indexOf('$', i)) {
    if (text[i + 1] === '$') {
      i += 2;
      continue;
    }
    const m = matchWorkflowReference(text, i);
    if (m) found.push({ ref: m.ref, offset: i });
    i = m ? m.end : i + 1;
  }
  return found;
}

// ---------------------------------------------------------------- rules between fields

export type WorkflowIssuePath = Array<string | number>;
export interface WorkflowIssue {
  path: WorkflowIssuePath;
  message: string;
}

/**
 * The load-time rules the schema cannot state field by field: step ids unique across the whole file
 * (nested ones too, since `$steps.<id>.output` has one namespace), every jump (`goto`, `then`, `else`,
 * `fallback.goto`) naming a top-level step (a branch of `parallel` is not a place to resume from),
 * `on_error: fallback` coming with its target, `$steps.<id>.output` naming a step that exists, and
 * at most MAX_WORKFLOW_STEPS steps counting nested ones. The loader reports the one nearest the top
 * of the file, so the order here does not matter.
 */
export function checkWorkflowDefinition(def: WorkflowFile): WorkflowIssue[] {
  const issues: WorkflowIssue[] = [];
  const seen = new Map<string, string>();
  const topLevel = new Set(def.steps.map((s) => s.id));
  const allIds = new Set<string>();
  const visit = (step: WorkflowStep | ParallelBranchStep, path: WorkflowIssuePath) => {
    const where = path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${p}`)).join('').replace(/^\./, '');
    const first = seen.get(step.id);
    if (first !== undefined) issues.push({ path: [...path, 'id'], message: `duplicate step id "${step.id}" (first used at ${first})` });
    else seen.set(step.id, where);
    allIds.add(step.id);
    if (step.type === 'parallel') step.steps.forEach((s, i) => visit(s, [...path, 'steps', i]));
  };
  def.steps.forEach((s, i) => visit(s, ['steps', i]));

  let total = 0;
  for (const s of def.steps) total += 1 + (s.type === 'parallel' ? s.steps.length : 0);
  if (total > MAX_WORKFLOW_STEPS) issues.push({ path: ['steps'], message: `must hold at most ${MAX_WORKFLOW_STEPS} steps counting those inside parallel blocks (${total})` });

  const target = (id: string | undefined, path: WorkflowIssuePath) => {
    if (id === undefined || topLevel.has(id)) return;
    issues.push({
      path,
      message: allIds.has(id) ? `"${id}" is inside a parallel block; jump to the parallel step instead` : `names no step of this workflow ("${id}")`,
    });
  };
  const refs = (value: string, path: WorkflowIssuePath) => {
    for (const { ref } of workflowReferences(value)) {
      if (ref.kind === 'output' && !allIds.has(ref.step)) issues.push({ path, message: `$steps.${ref.step}.output names no step of this workflow` });
    }
  };
  const visitRules = (step: WorkflowStep | ParallelBranchStep, path: WorkflowIssuePath) => {
    if (step.on_error === 'fallback' && step.fallback === undefined) issues.push({ path: [...path, 'on_error'], message: 'fallback needs fallback: {goto: <step id>}' });
    switch (step.type) {
      case 'ask_agent': refs(step.prompt, [...path, 'prompt']); break;
      case 'notify': refs(step.message, [...path, 'message']); break;
      case 'wait_for_reply': refs(step.message, [...path, 'message']); break;
      case 'condition':
        refs(step.if, [...path, 'if']);
        target(step.then, [...path, 'then']);
        target(step.else, [...path, 'else']);
        break;
      case 'parallel': step.steps.forEach((s, i) => visitRules(s, [...path, 'steps', i])); break;
    }
    if ('goto' in step) target(step.goto, [...path, 'goto']);
    if (step.fallback) target(step.fallback.goto, [...path, 'fallback', 'goto']);
  };
  def.steps.forEach((s, i) => visitRules(s, ['steps', i]));
  return issues;
}
