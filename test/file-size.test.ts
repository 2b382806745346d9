// Issue 24: no file in actors/, edges/ or bin/ runs past 450 lines unless a comment at its top says why.
import t from 'tap';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const LIMIT = 450;
const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** The reason, when a file states one: a comment within its first lines saying it is longer than the limit. */
const saysWhy = (text: string) => /^\/\/.*longer than 450 lines/im.test(text.split('\n').slice(0, 5).join('\n'));

function tooLong(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => join(dir, f))
    .filter((file) => {
      const text = readFileSync(file, 'utf8');
      return text.split('\n').length > LIMIT && !saysWhy(text);
    })
    .map((file) => relative(root, file));
}

await t.test('every file in actors/, edges/ and bin/ is short, or says why not', async (t) => {
  t.same(['actors', 'edges', 'bin'].flatMap((dir) => tooLong(join(root, dir))), []);
});

await t.test('a long file without the comment is named; with it, it passes', async (t) => {
  const dir = t.testdir({
    'long.ts': 'x\n'.repeat(LIMIT + 1),
    'long-with-reason.ts': '// Longer than 450 lines: a table.\n' + 'x\n'.repeat(LIMIT + 1),
    'short.ts': 'x\n',
  });
  t.same(tooLong(dir).map((f) => f.split('/').pop()), ['long.ts']);
});
