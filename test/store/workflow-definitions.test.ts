import t from 'tap';
import type { Test } from 'tap';
import { execFileSync } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { checkWorkflowExpression } from '../../machines/index.js';
import {
  DEFAULT_WORKFLOW_STEP_TIMEOUT,
  MAX_WORKFLOW_STEPS,
  defaultConfig,
  stepTimeoutSeconds,
  type WorkflowStep,
} from '../../schemas/index.js';
import { MAX_WORKFLOW_FILE_BYTES, loadWorkflowDefinitions, parseWorkflowFile } from '../../store/index.js';

/*
 * Given files in a workflows directory, when it is loaded, then these definitions and one error per
 * bad file, each naming file:line:column and the field.
 */

const withExpressions = { checkExpression: checkWorkflowExpression };

function givenFiles(t: Test, files: Record<string, string>): string {
  const dir = join(t.testdir(), 'workflows');
  mkdirSync(dir);
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

/** The error text for one file's source, or a failure naming the definition it unexpectedly gave. */
function refusal(source: string, file = 'review.yaml'): string {
  const r = parseWorkflowFile(file, source, withExpressions);
  if (r.ok) throw new Error(`accepted: ${JSON.stringify(r.definition)}`);
  return r.error.text;
}

const EVERY_STEP = `
name: Code review
description: one of each step type
trigger:
  manual: true
variables:
  repo: svc
  branch: "3.10"
steps:
  - id: ask
    type: ask_agent
    agent: reviewer
    prompt: Review $repo on $variables.branch
    timeout: 120
    new_session: false
    provider: codex
    model: gpt-5
    on_error: retry
    retry: {max_attempts: 2, delay_seconds: 1.5}
  - id: tell
    type: notify
    message: "Review done: $steps.ask.output"
    on_error: skip
  - id: wait
    type: wait_for_reply
    message: Ship it? (yes/no)
    timeout: 600
  - id: decide
    type: condition
    if: '"$steps.wait.output".strip().lower() == "yes"'
    then: fanout
    else: stop
  - id: fanout
    type: parallel
    on_error: fallback
    fallback:
      goto: stop
    goto: stop
    steps:
      - {id: docs, type: ask_agent, agent: writer, prompt: Document $repo}
      - {id: ping, type: notify, message: shipping, on_error: retry}
  - id: stop
    type: notify
    message: bye
`;

await t.test('every step type parses, with defaults filled in', async (t) => {
  const dir = givenFiles(t, { 'review.yaml': EVERY_STEP, 'minimal.yml': 'steps:\n  - {id: only, type: ask_agent, agent: main, prompt: hi}\n' });
  const { definitions, errors } = loadWorkflowDefinitions(dir, withExpressions);
  t.same(errors, []);
  t.same(definitions.map((d) => d.id), ['minimal', 'review'], 'sorted by id, the id being the file name');
  const [minimal, review] = definitions;
  t.same(minimal, {
    id: 'minimal', name: 'minimal', trigger: { manual: true }, variables: {},
    steps: [{ id: 'only', type: 'ask_agent', agent: 'main', prompt: 'hi', new_session: true, on_error: 'abort' }],
  });
  t.match(review, {
    id: 'review', name: 'Code review', description: 'one of each step type', trigger: { manual: true },
    variables: { repo: 'svc', branch: '3.10' },
    steps: [
      { id: 'ask', type: 'ask_agent', agent: 'reviewer', timeout: 120, new_session: false, provider: 'codex', model: 'gpt-5', on_error: 'retry', retry: { max_attempts: 2, delay_seconds: 1.5 } },
      { id: 'tell', type: 'notify', message: 'Review done: $steps.ask.output', on_error: 'skip' },
      { id: 'wait', type: 'wait_for_reply', message: 'Ship it? (yes/no)', timeout: 600 },
      { id: 'decide', type: 'condition', if: '"$steps.wait.output".strip().lower() == "yes"', then: 'fanout', else: 'stop' },
      {
        id: 'fanout', type: 'parallel', on_error: 'fallback', fallback: { goto: 'stop' }, goto: 'stop',
        steps: [{ id: 'docs', type: 'ask_agent', new_session: true, on_error: 'abort' }, { id: 'ping', type: 'notify', on_error: 'retry' }],
      },
      { id: 'stop', type: 'notify', message: 'bye', on_error: 'abort' },
    ],
  });
});

await t.test('step timeouts: the step own, else the config default for ask_agent, else none', async (t) => {
  const r = parseWorkflowFile('review.yaml', EVERY_STEP);
  if (!r.ok) throw new Error(r.error.text);
  const steps = r.definition.steps;
  const byId = (id: string) => steps.find((s) => s.id === id) as WorkflowStep;
  const config = defaultConfig().workflow;
  t.equal(stepTimeoutSeconds(byId('ask'), config), 120);
  t.equal(stepTimeoutSeconds(byId('wait'), config), 600);
  t.equal(stepTimeoutSeconds(byId('tell'), config), null);
  const fanout = byId('fanout');
  if (fanout.type !== 'parallel') throw new Error('not parallel');
  t.equal(stepTimeoutSeconds(fanout.steps[0]!, { default_step_timeout: 42 }), 42);
  t.equal(stepTimeoutSeconds(fanout.steps[0]!, config), config.default_step_timeout);
  t.equal(stepTimeoutSeconds(fanout.steps[0]!, undefined), DEFAULT_WORKFLOW_STEP_TIMEOUT);
  t.same(defaultConfig().workflow, { enabled: true, max_parallel_runs: 5, default_step_timeout: 3600 }, 'the config block SPEC names');
  const retried = parseWorkflowFile('x.yaml', 'steps:\n  - {id: a, type: notify, message: m, on_error: retry, retry: {}}\n');
  t.match(retried, { ok: true, definition: { steps: [{ retry: { max_attempts: 3, delay_seconds: 0 } }] } }, 'retry fields default');
});

await t.test('schema errors name file:line:column and the field path', async (t) => {
  const step = (fields: string) => `name: x\nsteps:\n  - id: a\n${fields}`;
  const rows: Array<[string, string, string]> = [
    ['unknown type', step('    type: ask_agnt\n'), 'review.yaml:4:11: steps[0].type: must be one of ask_agent, notify, wait_for_reply, condition, parallel'],
    ['missing type', step('    agent: main\n'), 'review.yaml:3:5: steps[0].type: is required (one of ask_agent, notify, wait_for_reply, condition, parallel)'],
    ['missing field', step('    type: ask_agent\n    agent: main\n'), 'review.yaml:3:5: steps[0].prompt: is required'],
    ['mistyped field', step('    type: notify\n    message: hi\n    mesage: hi\n'), 'review.yaml:6:5: steps[0].mesage: unknown field "mesage"'],
    ['number for text', step('    type: ask_agent\n    agent: main\n    prompt: 12\n'), 'review.yaml:6:13: steps[0].prompt: must be text (quote it if YAML reads it as a number or true/false)'],
    ['empty prompt', step('    type: ask_agent\n    agent: main\n    prompt: "  "\n'), 'review.yaml:6:13: steps[0].prompt: must not be empty'],
    ['bad agent name', step('    type: ask_agent\n    agent: ../etc\n    prompt: p\n'), 'review.yaml:5:12: steps[0].agent: must be an agent name of letters, digits, _ and -'],
    ['bad provider', step('    type: ask_agent\n    agent: a\n    prompt: p\n    provider: gpt\n'), 'review.yaml:7:15: steps[0].provider: must be one of claude, codex, gemini'],
    ['new_session text', step('    type: ask_agent\n    agent: a\n    prompt: p\n    new_session: "no"\n'), 'review.yaml:7:18: steps[0].new_session: must be true or false'],
    ['bad on_error', step('    type: notify\n    message: m\n    on_error: ignore\n'), 'review.yaml:6:15: steps[0].on_error: must be one of abort, retry, fallback, skip'],
    ['retry as a list', step('    type: notify\n    message: m\n    retry: [3]\n'), 'review.yaml:6:12: steps[0].retry: must be a mapping (key: value lines)'],
    ['retry attempts', step('    type: notify\n    message: m\n    retry: {max_attempts: 0}\n'), 'review.yaml:6:27: steps[0].retry.max_attempts: must be a whole number from 1 to 100'],
    ['negative timeout', step('    type: notify\n    message: m\n    timeout: -1\n'), 'review.yaml:6:14: steps[0].timeout: must be more than 0 and at most 604800 seconds'],
    ['bad step id', step('    type: notify\n    message: m\n    goto: "a b"\n'), 'review.yaml:6:11: steps[0].goto: must be letters, digits, _ and - only'],
    ['step not a mapping', 'steps:\n  - just text\n', 'review.yaml:2:5: steps[0]: must be a step (a mapping with id: and type:)'],
    ['steps not a list', 'steps: {a: 1}\n', 'review.yaml:1:8: steps: must be a list of steps'],
    ['empty steps', 'steps: []\n', 'review.yaml:1:8: steps: must hold at least one step'],
    ['no steps', 'name: x\n', 'review.yaml:1:1: steps: is required'],
    ['file is a list', '- a\n', 'review.yaml:1:1: must be a mapping with at least steps: (and name:, variables:, trigger:)'],
    ['empty file', '', 'review.yaml:1:1: must be a mapping with at least steps: (and name:, variables:, trigger:)'],
    ['unknown top-level field', 'steps:\n  - {id: a, type: notify, message: m}\nstep: []\n', 'review.yaml:3:1: step: unknown field "step"'],
    ['variable not text', 'variables:\n  n: 3\nsteps:\n  - {id: a, type: notify, message: m}\n', 'review.yaml:2:6: variables.n: must be text (quote numbers, e.g. "3.10", so they keep their digits)'],
    ['variable name', 'variables:\n  my-var: x\nsteps:\n  - {id: a, type: notify, message: m}\n', 'review.yaml:2:3: variables.my-var: must start with a letter or _ and hold letters, digits and _ only'],
    ['reserved variable', 'variables:\n  steps: x\nsteps:\n  - {id: a, type: notify, message: m}\n', 'review.yaml:2:3: variables: uses a reserved name (steps)'],
    ['__proto__ variable', 'variables:\n  __proto__: x\nsteps:\n  - {id: a, type: notify, message: m}\n', 'review.yaml:2:3: variables: uses a reserved name (__proto__)'],
    ['unknown trigger', 'trigger:\n  cron: "0 9 * * *"\nsteps:\n  - {id: a, type: notify, message: m}\n', 'review.yaml:2:3: trigger.cron: unknown trigger "cron": only manual: true is supported'],
    ['manual false', 'trigger: {manual: false}\nsteps:\n  - {id: a, type: notify, message: m}\n', 'review.yaml:1:19: trigger.manual: must be true (a manual trigger is the only kind supported)'],
    ['if not text', 'steps:\n  - {id: a, type: condition, if: true, then: a}\n', 'review.yaml:2:34: steps[0].if: must be an expression in text (quote it)'],
    ['condition with goto', 'steps:\n  - {id: a, type: condition, if: "true", then: a, goto: a}\n', 'review.yaml:2:51: steps[0].goto: a condition jumps with then/else, not goto'],
  ];
  for (const [name, source, want] of rows) t.equal(refusal(source), want, name);
});

await t.test('load-time rules name file:line:column and the field path', async (t) => {
  const rows: Array<[string, string, string]> = [
    ['duplicate id', 'steps:\n  - {id: a, type: notify, message: m}\n  - {id: a, type: notify, message: m}\n', 'review.yaml:3:10: steps[1].id: duplicate step id "a" (first used at steps[0])'],
    [
      'duplicate nested id',
      'steps:\n  - {id: a, type: notify, message: m}\n  - id: p\n    type: parallel\n    steps:\n      - {id: a, type: notify, message: m}\n',
      'review.yaml:6:14: steps[1].steps[0].id: duplicate step id "a" (first used at steps[0])',
    ],
    ['goto missing', 'steps:\n  - {id: a, type: notify, message: m, goto: nowhere}\n', 'review.yaml:2:45: steps[0].goto: names no step of this workflow ("nowhere")'],
    ['then missing', 'steps:\n  - id: c\n    type: condition\n    if: "true"\n    then: gone\n', 'review.yaml:5:11: steps[0].then: names no step of this workflow ("gone")'],
    ['else missing', 'steps:\n  - id: c\n    type: condition\n    if: "true"\n    else: gone\n', 'review.yaml:5:11: steps[0].else: names no step of this workflow ("gone")'],
    ['fallback missing', 'steps:\n  - id: a\n    type: notify\n    message: m\n    on_error: fallback\n    fallback: {goto: gone}\n', 'review.yaml:6:22: steps[0].fallback.goto: names no step of this workflow ("gone")'],
    ['fallback without target', 'steps:\n  - id: a\n    type: notify\n    message: m\n    on_error: fallback\n', 'review.yaml:5:15: steps[0].on_error: fallback needs fallback: {goto: <step id>}'],
    [
      'jump into a parallel block',
      'steps:\n  - {id: a, type: notify, message: m, goto: b}\n  - id: p\n    type: parallel\n    steps:\n      - {id: b, type: notify, message: m}\n',
      'review.yaml:2:45: steps[0].goto: "b" is inside a parallel block; jump to the parallel step instead',
    ],
    [
      'wait_for_reply inside parallel',
      'steps:\n  - id: p\n    type: parallel\n    steps:\n      - id: w\n        type: wait_for_reply\n        message: m\n',
      'review.yaml:6:15: steps[0].steps[0].type: must be one of ask_agent, notify inside a parallel block (wait_for_reply, condition and parallel cannot run there)',
    ],
    [
      'nested parallel',
      'steps:\n  - id: p\n    type: parallel\n    steps:\n      - id: q\n        type: parallel\n        steps: []\n',
      'review.yaml:6:15: steps[0].steps[0].type: must be one of ask_agent, notify inside a parallel block (wait_for_reply, condition and parallel cannot run there)',
    ],
    [
      'condition inside parallel',
      'steps:\n  - id: p\n    type: parallel\n    steps:\n      - {id: c, type: condition, if: "true"}\n',
      'review.yaml:5:23: steps[0].steps[0].type: must be one of ask_agent, notify inside a parallel block (wait_for_reply, condition and parallel cannot run there)',
    ],
    [
      'goto inside parallel',
      'steps:\n  - id: p\n    type: parallel\n    steps:\n      - {id: n, type: notify, message: m, goto: p}\n',
      'review.yaml:5:43: steps[0].steps[0].goto: a step inside a parallel block cannot jump (goto); set goto on the parallel step',
    ],
    [
      'fallback inside parallel',
      'steps:\n  - id: p\n    type: parallel\n    steps:\n      - {id: n, type: notify, message: m, on_error: fallback}\n',
      'review.yaml:5:53: steps[0].steps[0].on_error: must be one of abort, retry, skip inside a parallel block (a fallback jump cannot leave a branch)',
    ],
    ['empty parallel', 'steps:\n  - {id: p, type: parallel, steps: []}\n', 'review.yaml:2:36: steps[0].steps: must hold at least one step'],
    ['output of no step', 'steps:\n  - {id: a, type: notify, message: "got $steps.ghost.output"}\n', 'review.yaml:2:36: steps[0].message: $steps.ghost.output names no step of this workflow'],
    ['id differs from the file', 'id: other\nsteps:\n  - {id: a, type: notify, message: m}\n', 'review.yaml:1:5: id: "other" differs from the file name; the id of review.yaml is "review" (rename the file or drop id)'],
    ['expression syntax, exact column', 'steps:\n  - id: c\n    type: condition\n    if: $x = "y"\n    then: c\n', 'review.yaml:4:12: steps[0].if: assignment is not supported; compare with =='],
    ['expression syntax, quoted', 'steps:\n  - id: c\n    type: condition\n    if: \'"a".length\'\n    then: c\n', 'review.yaml:4:14: steps[0].if: length is not an allowed method (allowed: lower, upper, strip, lstrip, rstrip, startswith, endswith, contains)'],
    ['expression syntax, folded: the line of the if', 'steps:\n  - id: c\n    type: condition\n    if: >-\n      "a" ==\n      foo\n    then: c\n', 'review.yaml:4:9: steps[0].if: unknown name foo (write text in quotes, or a $reference)'],
  ];
  for (const [name, source, want] of rows) t.equal(refusal(source), want, name);
  t.equal(refusal('steps:\n  - {id: a, type: notify, message: m}\n', 'bad name.yaml'), 'bad name.yaml:1:1: file name must be letters, digits, _ and - (at most 64) followed by .yaml or .yml');
  t.ok(parseWorkflowFile('review.yaml', 'id: review\nsteps:\n  - {id: a, type: notify, message: m}\n').ok, 'an id equal to the file name is fine');
  t.ok(parseWorkflowFile('review.yaml', 'steps:\n  - {id: c, type: condition, if: "x = 1"}\n').ok, 'without the expression hook, if texts wait for the run');

  const many = Array.from({ length: MAX_WORKFLOW_STEPS }, (_, i) => `      - {id: s${i}, type: notify, message: m}`).join('\n');
  t.equal(
    refusal(`steps:\n  - {id: top, type: notify, message: m}\n  - id: p\n    type: parallel\n    steps:\n${many}\n`),
    `review.yaml:2:3: steps: must hold at most ${MAX_WORKFLOW_STEPS} steps counting those inside parallel blocks (${MAX_WORKFLOW_STEPS + 2})`,
  );
  const tooMany = Array.from({ length: MAX_WORKFLOW_STEPS + 1 }, (_, i) => `  - {id: s${i}, type: notify, message: m}`).join('\n');
  t.equal(refusal(`steps:\n${tooMany}\n`), `review.yaml:2:3: steps: must hold at most ${MAX_WORKFLOW_STEPS} steps`);
  t.equal(
    refusal('steps:\n  - {id: a, type: notify, message: m, goto: zz}\n  - {id: a, type: notify, message: m}\n'),
    'review.yaml:2:45: steps[0].goto: names no step of this workflow ("zz")',
    'of several problems, the one nearest the top',
  );
});

await t.test('hostile YAML is refused cleanly and quickly', async (t) => {
  const laughs = ['a: &a ["x","x","x","x","x","x","x","x","x"]'];
  for (const n of ['b', 'c', 'd', 'e', 'f', 'g']) laughs.push(`${n}: &${n} [${Array(9).fill(`*${laughs.length === 1 ? 'a' : String.fromCharCode(n.charCodeAt(0) - 1)}`).join(',')}]`);
  const rows: Array<[string, string, RegExp]> = [
    ['billion laughs', `${laughs.join('\n')}\nsteps: []\n`, /^review\.yaml:1:1: not usable YAML \(Excessive alias count/],
    ['custom tag', 'steps:\n  - {id: a, type: notify, message: !js/function "x"}\n', /^review\.yaml:2:36: not valid YAML: Unresolved tag: !js\/function/],
    ['binary tag', 'steps:\n  - {id: a, type: notify, message: !!binary aGk=}\n', /^review\.yaml:2:45: YAML tags \(!!binary\) are not supported/],
    ['str tag', 'steps:\n  - {id: !!str a, type: notify, message: m}\n', /^review\.yaml:2:16: YAML tags \(!!str\) are not supported/],
    ['deep nesting', `steps: ${'['.repeat(100_000)}`, /^review\.yaml:1:\d+: not valid YAML/],
    ['duplicate keys', 'steps: []\nsteps: []\n', /^review\.yaml:2:1: not valid YAML: Map keys must be unique/],
    ['two documents', 'steps: []\n---\nsteps: []\n', /^review\.yaml:2:1: not valid YAML: Source contains multiple documents/],
    ['broken syntax', 'steps:\n  - {id: a\n', /^review\.yaml:\d+:\d+: not valid YAML/],
    ['huge number', 'steps:\n  - {id: a, type: notify, message: m, timeout: 1e999}\n', /steps\[0\]\.timeout: must be more than 0/],
    ['huge integer', `steps:\n  - {id: a, type: notify, message: m, retry: {max_attempts: ${'9'.repeat(400)}}}\n`, /steps\[0\]\.retry\.max_attempts: must be a whole number from 1 to 100/],
    ['nan', 'steps:\n  - {id: a, type: notify, message: m, timeout: .nan}\n', /steps\[0\]\.timeout: must be a number of seconds/],
    ['__proto__ in a step', 'steps:\n  - {id: a, type: notify, message: m, __proto__: {polluted: 1}}\n', /^review\.yaml:2:39: steps\[0\]\.__proto__: unknown field "__proto__"/],
    ['__proto__ at top', '__proto__: {steps: []}\nsteps:\n  - {id: a, type: notify, message: m}\n', /^review\.yaml:1:1: __proto__: unknown field "__proto__"/],
    ['too big', `steps: []\n#${'x'.repeat(MAX_WORKFLOW_FILE_BYTES)}\n`, /^review\.yaml:1:1: file is over the 262144-byte limit/],
    ['too big in bytes, not in characters', `steps: []\n#${'é'.repeat(MAX_WORKFLOW_FILE_BYTES / 2)}\n`, /^review\.yaml:1:1: file is over the 262144-byte limit/],
  ];
  for (const [name, source, want] of rows) t.match(refusal(source), want, name);
  t.equal(({} as Record<string, unknown>).polluted, undefined, 'no prototype was touched');

  const cyclic = parseWorkflowFile('review.yaml', 'steps: &s\n  - id: p\n    type: parallel\n    steps: *s\n');
  t.match(cyclic, { ok: false, error: { text: /^review\.yaml:4:12: steps\[0\]\.steps\[0\]\.type: must be one of ask_agent, notify inside a parallel block/ } }, 'an alias that contains itself ends at the schema');
  const reused = parseWorkflowFile('review.yaml', 'steps:\n  - {id: a, type: notify, message: &m "same text"}\n  - {id: b, type: notify, message: *m}\n');
  t.match(reused, { ok: true, definition: { steps: [{ message: 'same text' }, { message: 'same text' }] } }, 'ordinary aliases still work');
});

await t.test('a directory: each bad file is one error, the others load; odd files are handled', async (t) => {
  const good = 'steps:\n  - {id: a, type: notify, message: m}\n';
  const dir = givenFiles(t, {
    'alpha.yaml': good,
    'beta.yml': 'name: Beta\n' + good,
    'broken.yaml': 'steps:\n  - {id: a, type: nope}\n',
    'alpha.yml': good,
    'notes.txt': 'not a workflow',
    '.#alpha.yaml': 'editor lock',
    'bad name.yaml': good,
    'latin1.yaml': '',
    'huge.yaml': '',
  });
  writeFileSync(join(dir, 'latin1.yaml'), Buffer.from([0x6e, 0x61, 0x6d, 0x65, 0x3a, 0x20, 0xe9, 0x0a]));
  writeFileSync(join(dir, 'huge.yaml'), `#${'x'.repeat(MAX_WORKFLOW_FILE_BYTES + 10)}\n`);
  mkdirSync(join(dir, 'folder.yaml'));
  symlinkSync(join(dir, 'missing-target'), join(dir, 'dangling.yaml'));
  execFileSync('mkfifo', [join(dir, 'fifo.yaml')]);

  const { definitions, errors } = loadWorkflowDefinitions(dir, withExpressions);
  t.same(definitions.map((d) => [d.id, d.name]), [['alpha', 'alpha'], ['beta', 'Beta']]);
  t.same(errors.map((e) => e.text), [
    'alpha.yml:1:1: workflow id "alpha" is already defined by alpha.yaml',
    'bad name.yaml:1:1: file name must be letters, digits, _ and - (at most 64) followed by .yaml or .yml',
    'broken.yaml:2:19: steps[0].type: must be one of ask_agent, notify, wait_for_reply, condition, parallel',
    'dangling.yaml:1:1: file cannot be read (ENOENT)',
    'fifo.yaml:1:1: file is not a regular file',
    'folder.yaml:1:1: file is not a regular file',
    `huge.yaml:1:1: file is ${MAX_WORKFLOW_FILE_BYTES + 12} bytes, over the ${MAX_WORKFLOW_FILE_BYTES}-byte limit`,
    'latin1.yaml:1:1: file is not UTF-8 text',
  ]);
  t.match(errors[2], { file: 'broken.yaml', line: 2, column: 19, path: 'steps[0].type', message: /^must be one of/ });

  t.same(loadWorkflowDefinitions(join(t.testdir(), 'absent')), { definitions: [], errors: [] }, 'no directory, no workflows');
});
