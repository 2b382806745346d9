import t from 'tap';
import {
  MAX_EXPRESSION_CHARS,
  MAX_EXPRESSION_DEPTH,
  MAX_EXPRESSION_TOKENS,
  MAX_EXPRESSION_VALUE_CHARS,
  checkWorkflowExpression,
  describeExpressionError,
  evaluateWorkflowCondition,
  evaluateWorkflowExpression,
  parseWorkflowExpression,
  parseWorkflowTemplate,
  substituteWorkflowText,
  type WorkflowScope,
  type WorkflowValue,
} from '../../machines/index.js';
import { matchWorkflowReference, workflowReferences } from '../../schemas/index.js';

/*
 * Given a scope (variables and step outputs), when an expression or a text is evaluated, then this
 * value or this error (message and column).
 */
const SCOPE: WorkflowScope = {
  variables: { name: 'Bob', answer: '  YES  ', count: '3', empty: '', version: '3.10' },
  outputs: { review: 'Approved, ship it', check: 'no' },
};

function given(scope: WorkflowScope = SCOPE) {
  return {
    when(source: string) {
      const parsed = parseWorkflowExpression(source);
      const result = parsed.ok ? evaluateWorkflowExpression(parsed.expression, scope) : parsed;
      return {
        /** The expression's value; fails the test with the error when there is one. */
        value(): WorkflowValue {
          if (!result.ok) throw new Error(`${source}: ${describeExpressionError(result.error)}`);
          return result.value;
        },
        /** The error as `column N: message`; throws when the expression evaluated. */
        error(): string {
          if (result.ok) throw new Error(`${source}: evaluated to ${JSON.stringify(result.value)}`);
          return describeExpressionError(result.error);
        },
        /** Whether parsing alone (the load-time check) already refused it. */
        refusedAtLoad: !parsed.ok,
      };
    },
  };
}

await t.test('literals: strings in either quote with escapes, numbers, true/false/none', async (t) => {
  const rows: Array<[string, WorkflowValue]> = [
    [`'single'`, 'single'],
    [`"double"`, 'double'],
    [`"it's"`, "it's"],
    [`'say "hi"'`, 'say "hi"'],
    [`'it\\'s'`, "it's"],
    [`"a\\"b"`, 'a"b'],
    [`"tab\\there"`, 'tab\there'],
    [`"line\\nnext\\r"`, 'line\nnext\r'],
    [`"back\\\\slash"`, 'back\\slash'],
    [`""`, ''],
    ['42', 42],
    ['3.5', 3.5],
    ['-7', -7],
    ['true', true],
    ['false', false],
    ['none', null],
    ['null', null],
    ['True', true],
    ['False', false],
    ['None', null],
  ];
  for (const [src, want] of rows) t.same(given().when(src).value(), want, src);
});

await t.test('== and != compare values; text and a plain decimal number compare as numbers', async (t) => {
  const rows: Array<[string, boolean]> = [
    ['"a" == "a"', true],
    ['"a" == "A"', false],
    ['"a" != "b"', true],
    ['"a" != "a"', false],
    ['1 == 1.0', true],
    ['$count == 3', true],
    ['$count != 3', false],
    ['3 == $count', true],
    ['$version == 3.1', true],
    ['"3" == "3.0"', false],
    ['"0x10" == 16', false],
    ['"" == 0', false],
    ['$name == 3', false],
    ['true == "true"', false],
    ['none == none', true],
    ['none == ""', false],
    ['none != false', true],
    ['true == true', true],
  ];
  for (const [src, want] of rows) t.equal(given().when(src).value(), want, src);
});

await t.test('in and not in look for text inside text; numbers count as their digits', async (t) => {
  const rows: Array<[string, boolean]> = [
    ['"ship" in $steps.review.output', true],
    ['"SHIP" in $steps.review.output', false],
    ['"ship" not in $steps.review.output', false],
    ['"x" not in "abc"', true],
    ['"" in "abc"', true],
    ['3 in "1234"', true],
    ['"2" in 123', true],
  ];
  for (const [src, want] of rows) t.equal(given().when(src).value(), want, src);
  t.match(given().when('none in "abc"').error(), /column 6: the left side of in must be text, not none/);
  t.match(given().when('"a" not in true').error(), /column 5: the right side of not in must be text, not true\/false/);
});

await t.test('and, or, not: truthiness as in Python, short-circuit, results are true/false', async (t) => {
  const rows: Array<[string, boolean]> = [
    ['true and true', true],
    ['true and false', false],
    ['false or true', true],
    ['false or false', false],
    ['not true', false],
    ['not not true', true],
    ['not ""', true],
    ['not $empty', true],
    ['not 0', true],
    ['not none', true],
    ['"x" and 1', true],
    ['$name or none', true],
  ];
  for (const [src, want] of rows) t.equal(given().when(src).value(), want, src);
  // The right side would be an error (unknown variable); short-circuit never reaches it.
  t.equal(given().when('false and $missing == "x"').value(), false);
  t.equal(given().when('true or $missing == "x"').value(), true);
  t.match(given().when('true and $missing == "x"').error(), /unknown variable \$missing/);
});

await t.test('precedence: or < and < not < comparison < method call; parentheses override', async (t) => {
  const rows: Array<[string, boolean]> = [
    ['true or true and false', true],
    ['(true or true) and false', false],
    ['not "a" == "b"', true],
    ['not ("a" == "a") or true', true],
    ['not ("a" == "a" or true)', false],
    ['false and false or true', true],
    ['false and (false or true)', false],
    ['"A".lower() == "a"', true],
    ['"b" in "ABC".lower() and not "z" in "abc"', true],
    ['"a" not in "b" and "c" in "c"', true],
  ];
  for (const [src, want] of rows) t.equal(given().when(src).value(), want, src);
});

await t.test('text methods: the whitelist, each one', async (t) => {
  const rows: Array<[string, WorkflowValue]> = [
    ['"MiXed".lower()', 'mixed'],
    ['"MiXed".upper()', 'MIXED'],
    ['$answer.strip()', 'YES'],
    ['$answer.lstrip()', 'YES  '],
    ['$answer.rstrip()', '  YES'],
    ['"prefix-x".startswith("prefix")', true],
    ['"prefix-x".startswith("x")', false],
    ['"file.txt".endswith(".txt")', true],
    ['"abc".contains("b")', true],
    ['"abc".contains("z")', false],
    ['"v3".endswith(3)', true],
    ['$answer.strip().lower() == "yes"', true],
    ['$steps.review.output.lower().startswith("approved")', true],
    ['"a".lower().upper().lower()', 'a'],
    ['("A" ).lower()', 'a'],
  ];
  for (const [src, want] of rows) t.same(given().when(src).value(), want, src);
});

await t.test('outside the whitelist: attribute access, other calls, indexing, assignment, unknown names', async (t) => {
  const rows: Array<[string, RegExp]> = [
    ['"a".constructor()', /^column 5: constructor is not an allowed method \(allowed: lower, upper/],
    ['"a".__proto__', /^column 5: __proto__ is not an allowed method/],
    ['"a".length', /^column 5: length is not an allowed method/],
    ['"a".replace("a", "b")', /^column 5: replace is not an allowed method/],
    ['"a".lower', /^column 10: lower is a method: call it as lower\(\)/],
    ['"a".startswith()', /^column 5: startswith\(\) takes 1 argument, given 0/],
    ['"a".lower("x")', /^column 5: lower\(\) takes no argument, given 1/],
    ['"a".', /^column 5: expected a method name after \., found the end/],
    ['len("abc")', /^column 1: unknown name len/],
    ['__proto__', /^column 1: unknown name __proto__/],
    ['constructor', /^column 1: unknown name constructor/],
    ['x == 1', /^column 1: unknown name x \(write text in quotes, or a \$reference\)/],
    ['"a"[0]', /^column 4: indexing is not supported/],
    ['x = 1', /^column 3: assignment is not supported; compare with ==/],
    ['!true', /^column 1: use not instead of !/],
    ['true && false', /^column 6: use and instead of &&/],
    ['true || false', /^column 6: use or instead of \|\|/],
    ['1 < 2', /^column 3: ordering comparisons are not supported/],
    ['1 + 2', /^column 3: arithmetic is not supported/],
    ['`cmd`', /^column 1: unexpected character "`"/],
    ['"a" == "a" == "a"', /^column 12: chained comparisons are not supported; join them with and/],
    ['"a" "b"', /^column 5: unexpected a string \(expected and, or, or the end\)/],
    ['("a"', /^column 5: expected \) to close \(, found the end/],
    ['"a")', /^column 4: unexpected \)/],
    ['', /^column 1: expected a value, found the end/],
    ['and', /^column 1: expected a value, found and/],
    ['"a" ==', /^column 7: expected a value, found the end/],
    ['"open', /^column 1: unterminated string/],
    ['"\\q"', /^column 2: unknown escape \\q/],
    ['- "a"', /^column 1: - is only allowed before a number/],
    ['$', /^column 1: \$ must start a reference/],
    ['$5 == 1', /^column 1: \$ must start a reference/],
  ];
  for (const [src, want] of rows) {
    const w = given().when(src);
    t.match(w.error(), want, src);
    t.ok(w.refusedAtLoad, `${src}: refused by the parse alone, so at load time`);
  }
  t.match(given().when('5.lower()').error(), /^column 3: lower\(\) works on text, not a number/);
  t.match(given().when('"a".contains(none)').error(), /the argument of contains\(\) must be text, not none/);
});

await t.test('references: bare ones are values; inside quotes they fill the string; unknown bare ones are errors', async (t) => {
  t.equal(given().when('$name').value(), 'Bob');
  t.equal(given().when('$variables.name').value(), 'Bob');
  t.equal(given().when('$steps.review.output').value(), 'Approved, ship it');
  t.equal(given().when('$steps.notyet.output').value(), '', 'a step without output reads as empty text');
  t.equal(given().when('"Hi $name!"').value(), 'Hi Bob!');
  t.equal(given().when('"$answer".strip().lower() == "yes"').value(), true, 'the quoted style of Python-era workflows');
  t.equal(given().when('"$missing"').value(), '$missing', 'inside quotes an unknown variable stays as written');
  t.equal(given().when('"$$name"').value(), '$name', '$$ is a literal $');
  t.match(given().when('$missing == "x"').error(), /^column 1: unknown variable \$missing/);
  t.match(given().when('$variables.missing').error(), /^column 1: unknown variable \$variables\.missing/);
  t.notOk(given().when('$missing').refusedAtLoad, 'which variables exist is known only when the run starts');
  t.equal(given({ variables: { constructor: 'x' } as Record<string, string>, outputs: {} }).when('$constructor').value(), 'x');
  t.match(given({ variables: {}, outputs: {} }).when('$constructor').error(), /unknown variable \$constructor/, 'not Object.prototype.constructor');
  t.match(given({ variables: {}, outputs: {} }).when('$toString').error(), /unknown variable/);
});

await t.test('injection: a substituted value is always one text value, never expression source', async (t) => {
  const hostile = [
    'yes" or "1"=="1',
    "yes' or '1'=='1",
    'x") or true or ("',
    '\\" or true or \\"',
    'yes or true',
    '$name',
    '$$',
    '"; process.exit(1); "',
    ') or (true',
  ];
  for (const value of hostile) {
    const scope: WorkflowScope = { variables: { name: 'Bob', v: value }, outputs: { s: value } };
    t.equal(given(scope).when('$v == "yes"').value(), false, `bare: ${value}`);
    t.equal(given(scope).when('"$v" == "yes"').value(), false, `double-quoted: ${value}`);
    t.equal(given(scope).when("'$v' == 'yes'").value(), false, `single-quoted: ${value}`);
    t.equal(given(scope).when('$steps.s.output.lower() == "yes"').value(), false, `output: ${value}`);
    t.equal(given(scope).when('$v == $steps.s.output').value(), true, `equal to itself: ${value}`);
    t.equal(given(scope).when('"$v"').value(), value, `kept verbatim, no second substitution: ${value}`);
  }
});

await t.test('bounds: length, tokens, depth and built text are capped, and fail fast', async (t) => {
  t.match(given().when(`"${'a'.repeat(MAX_EXPRESSION_CHARS)}"`).error(), /^column 1: expression too long/);
  t.match(given().when('"a" == "a"'.padEnd(1024 * 1024, ' ')).error(), /expression too long/, '1 MB of spaces');
  t.match(given().when(Array.from({ length: 300 }, () => 'true').join(' or ')).error(), new RegExp(`too many tokens \\(at most ${MAX_EXPRESSION_TOKENS}\\)`));
  const deep = (n: number) => `${'('.repeat(n)}true${')'.repeat(n)}`;
  t.equal(given().when(deep(MAX_EXPRESSION_DEPTH - 1)).value(), true, 'deep but within the cap');
  t.match(given().when(deep(MAX_EXPRESSION_DEPTH + 1)).error(), /nested too deeply/);
  t.match(given().when(deep(2000)).error(), /nested too deeply|too many tokens|too long/);
  t.match(given().when(`${'not '.repeat(100)}true`).error(), /nested too deeply/);
  t.match(given().when(`1${'0'.repeat(40)} == 1`).error(), /number too long/);

  const big = 'x'.repeat(1024 * 1024);
  const huge: WorkflowScope = { variables: { big }, outputs: { s: big } };
  t.equal(given(huge).when('"x" in $big and $steps.s.output.lower().startswith("x")').value(), true, 'a 1 MB value is fine');
  t.match(given(huge).when(`"${'$big'.repeat(10)}"`).error(), /^column 1: the text would be over/, 'a string filled with ten copies of 1 MB');
  t.ok(MAX_EXPRESSION_VALUE_CHARS >= big.length * 4);
  const growing: WorkflowScope = { variables: { s: 'ß'.repeat(MAX_EXPRESSION_VALUE_CHARS / 2 + 1) }, outputs: {} };
  t.match(given(growing).when('$s.upper()').error(), /text too long/, 'upper() may grow text (ß → SS): still capped');
});

await t.test('evaluateWorkflowCondition and checkWorkflowExpression: the two entry points the engine and loader use', async (t) => {
  t.same(evaluateWorkflowCondition('$answer.strip().lower() == "yes"', SCOPE), { ok: true, value: true });
  t.same(evaluateWorkflowCondition('$steps.check.output', SCOPE), { ok: true, value: true }, 'non-empty text is true');
  t.same(evaluateWorkflowCondition('$empty', SCOPE), { ok: true, value: false });
  t.same(evaluateWorkflowCondition('nope', SCOPE), { ok: false, error: { message: 'unknown name nope (write text in quotes, or a $reference)', offset: 0 } });
  t.equal(checkWorkflowExpression('$anything.lower() == "x"'), null, 'references need no values to parse');
  t.same(checkWorkflowExpression('"a" = "b"'), { message: 'assignment is not supported; compare with ==', offset: 4 });
  const parsed = parseWorkflowExpression('$name == "Bob"');
  t.ok(parsed.ok);
  if (parsed.ok) {
    t.same(evaluateWorkflowExpression(parsed.expression, SCOPE), { ok: true, value: true }, 'parsed once,');
    t.same(evaluateWorkflowExpression(parsed.expression, { variables: { name: 'Al' }, outputs: {} }), { ok: true, value: false }, 'evaluated against another scope');
  }
});

await t.test('substitution in prompts and messages', async (t) => {
  const rows: Array<[string, string]> = [
    ['Hello $name', 'Hello Bob'],
    ['Hello $variables.name', 'Hello Bob'],
    ['Review: $steps.review.output', 'Review: Approved, ship it'],
    ['Not run: [$steps.later.output]', 'Not run: []'],
    ['echo $HOME and $missing', 'echo $HOME and $missing'],
    ['$names (longest name wins)', '$names (longest name wins)'],
    ['$name.txt', 'Bob.txt'],
    ["$name's", "Bob's"],
    ['cost: $5, $', 'cost: $5, $'],
    ['$$name is literal, $$$name is $ then Bob', '$name is literal, $Bob is $ then Bob'],
    ['$variables alone', '$variables alone'],
    ['$steps.review (no .output)', '$steps.review (no .output)'],
    ['$steps.review.outputs', '$steps.review.outputs'],
    ['$steps.my-step.output', ''],
    ['', ''],
  ];
  for (const [text, want] of rows) t.same(substituteWorkflowText(text, SCOPE), { ok: true, text: want }, text);

  const selfRef: WorkflowScope = { variables: { a: '$b', b: 'secret' }, outputs: { s: '$b $steps.s.output' } };
  t.same(substituteWorkflowText('$a | $steps.s.output', selfRef), { ok: true, text: '$b | $b $steps.s.output' }, 'one pass: values are not read again');
  t.same(substituteWorkflowText('$constructor $toString $__proto__', { variables: {}, outputs: {} }), { ok: true, text: '$constructor $toString $__proto__' });

  const big: WorkflowScope = { variables: { big: 'x'.repeat(1000) }, outputs: {} };
  t.same(substituteWorkflowText('$big', big, 1000), { ok: true, text: 'x'.repeat(1000) });
  t.match(substituteWorkflowText('$big!', big, 1000), { ok: false, error: /over 1000 characters/ });
  t.match(substituteWorkflowText('$big'.repeat(5000), { variables: { big: 'x'.repeat(1024 * 1024) }, outputs: {} }), { ok: false }, 'stops at the cap, not after 5 GB');
});

await t.test('the reference grammar the loader and the engine share', async (t) => {
  t.same(matchWorkflowReference('x $steps.a-1.output y', 2), { ref: { kind: 'output', step: 'a-1' }, end: 19 });
  t.same(matchWorkflowReference('$variables.v', 0), { ref: { kind: 'variable', name: 'v' }, end: 12 });
  t.same(matchWorkflowReference('$steps', 0), { ref: { kind: 'variable', name: 'steps' }, end: 6 });
  t.equal(matchWorkflowReference('$ x', 0), null);
  t.same(workflowReferences('$a $$b $steps.s.output $'), [
    { ref: { kind: 'variable', name: 'a' }, offset: 0 },
    { ref: { kind: 'output', step: 's' }, offset: 7 },
  ]);
  t.same(parseWorkflowTemplate('a $x b $$'), ['a ', { ref: { kind: 'variable', name: 'x' }, raw: '$x', offset: 2 }, ' b $']);
});
