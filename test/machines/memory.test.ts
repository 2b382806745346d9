import t from 'tap';
import { TRUNCATED_MARKER, alwaysLoadModules, buildInjection, normalizeModuleRef, overLimit, selectModules } from '../../machines/index.js';

const MAIN = `# Main Memory

<!--
Example, not the table:
| Module | Why |
|---|---|
| decoy.md | inside a comment |
-->

## About the user

- Likes short answers.

## Always Load

| Why | Module |
|-----|:------:|
| daily work | \`projects.md\` |
| people | [Alice](modules/people/alice.md) |
| shared facts | SHAREDMEMORY.md |
| bare name | servers |
| again | modules/projects.md |
| placeholder | — |
| placeholder | (none) |
| escape | ../../etc/passwd |
| absolute | /etc/passwd.md |
| spaces | two words |

Text after the table ends it.
| late.md | not in the table |

## Module index

| Module | Why |
|---|---|
| other.md | a later table is not the Always Load table |
`;

await t.test('alwaysLoadModules reads the Module column of the Always Load table', async (t) => {
  t.same(alwaysLoadModules(MAIN), ['modules/projects.md', 'modules/people/alice.md', 'SHAREDMEMORY.md', 'modules/servers.md']);
});

await t.test('alwaysLoadModules: no heading, no table, empty or malformed table', async (t) => {
  t.same(alwaysLoadModules(''), []);
  t.same(alwaysLoadModules('| Module | Why |\n|---|---|\n| a.md | x |\n'), [], 'a table without the heading is ignored');
  t.same(alwaysLoadModules('## Always Load\n\nnothing here\n\n## Next\n| Module | Why |\n|---|---|\n| a.md | x |\n'), [], 'table under the next heading');
  t.same(alwaysLoadModules('## Always Load\n| Module | Why |\n|--------|-----|\n'), [], 'header only');
  t.same(alwaysLoadModules('## Always Load\n| Module | Why |\n| a.md | no separator row |\n'), [], 'no separator row');
  t.same(alwaysLoadModules('## Always Load\n| Module | Why |'), [], 'header on the last line');
  t.same(alwaysLoadModules('### always load\r\n| Module | Why |\r\n|---|---|\r\n| a | x |\r\n'), ['modules/a.md'], 'CRLF, any heading level, any case');
  t.same(alwaysLoadModules('## Always Load\n| Name | Why |\n|---|---|\n| b.md | x |\n'), ['modules/b.md'], 'first column without a Module header');
  t.same(alwaysLoadModules('## Always Load\n| Module | Why |\n|---|---|\n| a\\|b.md | pipe |\n| c.md |\n'), ['modules/a|b.md', 'modules/c.md'], 'escaped pipe and short rows');
});

await t.test('normalizeModuleRef', async (t) => {
  t.equal(normalizeModuleRef('projects'), 'modules/projects.md');
  t.equal(normalizeModuleRef('./memory_system/modules/x.md'), 'modules/x.md');
  t.equal(normalizeModuleRef('MAINMEMORY.md'), 'MAINMEMORY.md');
  t.equal(normalizeModuleRef('[a](modules/a.md "title")'), 'modules/a.md');
  for (const bad of ['', '-', '—', '_e.g. projects.md_', '*none*', '(none)', '..', 'a/../b.md', '/abs.md', 'a\\b.md', 'a//b.md', 'two words']) {
    t.equal(normalizeModuleRef(bad), null, `${JSON.stringify(bad)} is not a module`);
  }
});

const ALL = [
  { filename: 'MAINMEMORY.md' },
  { filename: 'SHAREDMEMORY.md' },
  { filename: 'modules/people/alice.md' },
  { filename: 'modules/projects.md' },
  { filename: 'modules/unlisted.md' },
];

await t.test('selectModules: Always Load entries that exist, in table order', async (t) => {
  t.same(
    selectModules(ALL, MAIN, false).map((m) => m.filename),
    ['modules/projects.md', 'modules/people/alice.md', 'SHAREDMEMORY.md'],
    'servers.md is listed but missing: skipped',
  );
  t.same(selectModules(ALL, '', false), [], 'no table: nothing');
  t.same(selectModules([], MAIN, false), []);
  const withData = [{ filename: 'modules/projects.md', lines: 3 }];
  t.equal(selectModules(withData, MAIN, false)[0], withData[0], 'returns the caller’s own objects');
});

await t.test('selectModules: injectAll takes every module under modules/', async (t) => {
  t.same(
    selectModules(ALL, '', true).map((m) => m.filename),
    ['modules/people/alice.md', 'modules/projects.md', 'modules/unlisted.md'],
  );
});

await t.test('buildInjection: full text at session start', async (t) => {
  const text = buildInjection([
    { filename: 'modules/a.md', text: 'line 1\nline 2\n\n' },
    { filename: 'SHAREDMEMORY.md', text: 'shared\r\nfact\r\n' },
  ]);
  t.equal(
    text,
    '# Memory (svc): modules from memory_system/ loaded for this session\n\n' +
      '## memory_system/modules/a.md\n\nline 1\nline 2\n\n' +
      '## memory_system/SHAREDMEMORY.md\n\nshared\nfact\n',
  );
  t.equal(buildInjection([]), '', 'no modules: nothing to inject');
  t.equal(buildInjection([], { compactLines: 5 }), '');
});

await t.test('buildInjection: reminder truncates each module to compactLines', async (t) => {
  const long = Array.from({ length: 30 }, (_, i) => `fact ${i + 1}`).join('\n');
  const text = buildInjection(
    [
      { filename: 'modules/long.md', text: long },
      { filename: 'modules/short.md', text: 'only\n' },
      { filename: 'modules/edge.md', text: 'a\nb\nc\n' },
      { filename: 'modules/empty.md', text: '' },
    ],
    { compactLines: 3 },
  );
  t.match(text, /^# Memory reminder \(svc\)/);
  t.match(text, `## memory_system/modules/long.md\n\nfact 1\nfact 2\nfact 3\n${TRUNCATED_MARKER} 27 more lines in memory_system/modules/long.md\n`);
  t.notMatch(text, 'fact 4\n');
  t.match(text, '## memory_system/modules/short.md\n\nonly\n');
  t.match(text, '## memory_system/modules/edge.md\n\na\nb\nc\n', 'exactly at the limit: not truncated');
  t.notMatch(text.split('modules/edge.md')[1]!.split('##')[0]!, TRUNCATED_MARKER);
  t.match(text, '## memory_system/modules/empty.md');

  const zero = buildInjection([{ filename: 'modules/x.md', text: 'one\ntwo\n' }], { compactLines: 0 });
  t.match(zero, `## memory_system/modules/x.md\n\n${TRUNCATED_MARKER} 2 more lines`, 'zero lines: names only');
  const one = buildInjection([{ filename: 'modules/x.md', text: 'one\ntwo\n' }], { compactLines: 1 });
  t.match(one, `${TRUNCATED_MARKER} 1 more line in`);
  t.equal(buildInjection([{ filename: 'modules/x.md', text: 'one\ntwo\n' }], { compactLines: -4 }), zero, 'negative counts as 0');
  t.match(buildInjection([{ filename: 'modules/x.md', text: 'a\nb\nc' }], { compactLines: 1.9 }), `a\n${TRUNCATED_MARKER} 2 more lines`, 'fractions round down');
});

await t.test('overLimit names modules over the soft limit', async (t) => {
  const mods = [
    { filename: 'modules/a.md', lines: 80 },
    { filename: 'modules/b.md', lines: 81 },
    { filename: 'MAINMEMORY.md', lines: 200 },
    { filename: 'modules/c.md', lines: 0 },
  ];
  t.same(overLimit(mods, 80), ['modules/b.md', 'MAINMEMORY.md']);
  t.same(overLimit(mods, 1000), []);
  t.same(overLimit([], 80), []);
});
