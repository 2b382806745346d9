import t from 'tap';
import * as fs from 'node:fs';
import { join } from 'node:path';
import { OpenedDir, sameFile } from '../../store/index.js';

// store/contained-dir.ts: acting inside a folder an agent can change, through opened directories.

function tree(base: string) {
  const root = join(base, 'root');
  const outside = join(base, 'outside');
  fs.mkdirSync(join(root, 'a', 'b'), { recursive: true });
  fs.writeFileSync(join(root, 'a', 'b', 'f.txt'), 'inside');
  fs.writeFileSync(join(root, 'a', 'g.txt'), 'inside');
  fs.mkdirSync(join(outside, 'b'), { recursive: true });
  fs.writeFileSync(join(outside, 'b', 'f.txt'), 'keep');
  fs.writeFileSync(join(outside, 'g.txt'), 'keep');
  return { root, outside };
}

await t.test('a link is never opened as a directory, neither as the start nor below it', async (t) => {
  const { root, outside } = tree(t.testdir());
  fs.symlinkSync(outside, join(root, 'link'));
  t.throws(() => OpenedDir.open(join(root, 'link')), { code: /^(ELOOP|ENOTDIR)$/ });
  const followed = OpenedDir.open(join(root, 'link'), { follow: true });
  t.equal(followed.realPath(), outside, 'unless asked to follow it');
  followed.close();
  const dir = OpenedDir.open(root);
  t.teardown(() => dir.close());
  t.throws(() => dir.openDir('link'), { code: /^(ELOOP|ENOTDIR)$/ });
  t.throws(() => dir.openPath('link/b'), { code: /^(ELOOP|ENOTDIR)$/ });
  t.throws(() => dir.at('../x'), /not one entry name/);
  t.throws(() => dir.at('..'), /not one entry name/);
});

await t.test('openPath walks and creates one component at a time', async (t) => {
  const { root } = tree(t.testdir());
  const dir = OpenedDir.open(root);
  t.teardown(() => dir.close());
  const made = dir.openPath('x/y/z', { createMode: 0o700 });
  t.equal(made.realPath(), join(root, 'x', 'y', 'z'));
  t.equal(fs.statSync(join(root, 'x', 'y')).mode & 0o777, 0o700);
  made.close();
  const same = dir.openPath('');
  t.ok(sameFile(same, dir), "'' is the directory itself");
  same.close();
});

await t.test('the directory stays bound to its descriptor when its name is swapped for a link', async (t) => {
  const { root, outside } = tree(t.testdir());
  const dir = OpenedDir.open(root);
  t.teardown(() => dir.close());
  const a = dir.openDir('a');
  t.teardown(() => a.close());
  fs.renameSync(join(root, 'a'), join(root, 'moved'));
  fs.symlinkSync(outside, join(root, 'a'));
  const st = a.lstat('g.txt')!;
  t.ok(a.unlink('g.txt', st), 'the listed file goes');
  t.notOk(fs.existsSync(join(root, 'moved', 'g.txt')));
  t.equal(fs.readFileSync(join(outside, 'g.txt'), 'utf8'), 'keep', 'the same-named file behind the link stays');
  t.notOk(dir.unlink('a', { dev: 0, ino: 0 }), 'an entry that is not the one expected is left');
  t.ok(fs.lstatSync(join(root, 'a')).isSymbolicLink());
});

await t.test('removeTree never goes through a directory swapped for a link while it is removed', async (t) => {
  const { root, outside } = tree(t.testdir());
  const dir = OpenedDir.open(root);
  t.teardown(() => dir.close());
  let swapped = false;
  const removed = dir.removeTree('a', {
    expect: fs.lstatSync(join(root, 'a')),
    onListed: (d) => {
      // 'a' has been listed (b, g.txt): b is moved away and its name linked outside before it is entered.
      if (swapped || d.realPath() !== join(root, 'a')) return;
      swapped = true;
      fs.renameSync(join(root, 'a', 'b'), join(root, 'b-moved'));
      fs.symlinkSync(join(outside, 'b'), join(root, 'a', 'b'));
    },
  });
  t.ok(swapped);
  t.ok(removed, 'the tree is gone');
  t.notOk(fs.existsSync(join(root, 'a')));
  t.equal(fs.readFileSync(join(outside, 'b', 'f.txt'), 'utf8'), 'keep', 'nothing behind the link was removed');
  t.ok(fs.existsSync(join(root, 'b-moved', 'f.txt')), 'what was moved away meanwhile is not chased');
  t.notOk(dir.removeTree('missing'));
});

await t.test('removeTree leaves an entry that is not the one expected', async (t) => {
  const { root } = tree(t.testdir());
  const dir = OpenedDir.open(root);
  t.teardown(() => dir.close());
  const other = fs.lstatSync(join(root, 'a', 'g.txt'));
  t.notOk(dir.removeTree('a', { expect: other }));
  t.ok(fs.existsSync(join(root, 'a', 'b', 'f.txt')));
});
