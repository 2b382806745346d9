import t from 'tap';
import * as fs from 'node:fs';
import { join } from 'node:path';
import { homePaths, listContainedDir, makeContainedDir, removeContained, serviceSecretRealPaths, writeContainedFile } from '../../store/index.js';

/*
 * The containment helper's changing half, with the home itself as the root, so the service's
 * secrets lie inside it: they are refused by real path, not only by being outside.
 */
async function home(t: { testdir(): string }) {
  const dir = t.testdir();
  const paths = homePaths(join(dir, 'home'));
  fs.mkdirSync(paths.secretsDir, { recursive: true });
  fs.mkdirSync(paths.configDir);
  fs.mkdirSync(paths.workspace);
  fs.writeFileSync(paths.usersFile, 'USERS');
  fs.writeFileSync(paths.configFile, '{}');
  fs.writeFileSync(paths.envFile, 'KEY=1');
  const outside = join(dir, 'outside');
  fs.mkdirSync(outside);
  const rules = { base: paths.root, root: paths.root, rootLabel: 'the home', refused: await serviceSecretRealPaths(paths) };
  return { dir, paths, outside, rules };
}

const listing = (dir: string) => fs.readdirSync(dir).sort();

await t.test('writeContainedFile: atomic replace, parents made inside, never into secrets, through links or over the limit', async (t) => {
  const h = await home(t);
  const r = await writeContainedFile('workspace/a/b/c.md', h.rules, 'hello', { maxBytes: 10, createParents: true });
  t.match(r, { size: 5, created: true });
  t.equal(fs.readFileSync(join(h.paths.workspace, 'a', 'b', 'c.md'), 'utf8'), 'hello');
  await writeContainedFile('workspace/a/b/c.md', h.rules, 'bye', { maxBytes: 10 });
  t.equal(fs.readFileSync(join(h.paths.workspace, 'a', 'b', 'c.md'), 'utf8'), 'bye');
  t.same(listing(join(h.paths.workspace, 'a', 'b')), ['c.md'], 'no temp file left');

  fs.symlinkSync(h.outside, join(h.paths.workspace, 'out'));
  fs.symlinkSync(h.paths.secretsDir, join(h.paths.workspace, 'sec'));
  fs.symlinkSync(h.paths.usersFile, join(h.paths.workspace, 'users-link'));
  const refused: [string, RegExp | string][] = [
    ['_secrets/users.json', 'forbidden'],
    ['_secrets/new.json', 'forbidden'],
    ['config/config.json', 'forbidden'],
    ['.env', 'forbidden'],
    ['events.db', 'forbidden'],
    ['workspace/out/x.md', 'forbidden'],
    ['workspace/out/deep/x.md', 'forbidden'],
    ['workspace/sec/users.json', 'forbidden'],
    ['workspace/users-link', 'invalid-path'],
    ['../outside/x.md', 'invalid-path'],
    [join(h.outside, 'x.md'), 'forbidden'],
    ['workspace/big.md', 'file-too-large'],
    ['', 'invalid-path'],
    ['.', 'invalid-path'],
    ['workspace/a\0.md', 'invalid-path'],
    ['workspace/a', 'invalid-path'],
  ];
  for (const [p, code] of refused) {
    await t.rejects(writeContainedFile(p, h.rules, p === 'workspace/big.md' ? 'x'.repeat(11) : 'pwned', { maxBytes: 10, createParents: true }), { code }, JSON.stringify(p));
  }
  t.same(listing(h.outside), [], 'nothing made outside');
  t.equal(fs.readFileSync(h.paths.usersFile, 'utf8'), 'USERS');
  t.same(listing(h.paths.secretsDir), ['users.json']);
  t.equal(fs.readFileSync(h.paths.envFile, 'utf8'), 'KEY=1');
});

await t.test('makeContainedDir and removeContained: inside only, never the root, the secrets or a link leading out', async (t) => {
  const h = await home(t);
  await makeContainedDir('workspace/x/y', h.rules);
  t.ok(fs.statSync(join(h.paths.workspace, 'x', 'y')).isDirectory());
  await t.rejects(makeContainedDir('workspace/x/y', h.rules), { code: 'file-exists' });
  fs.symlinkSync(h.outside, join(h.paths.workspace, 'out'));
  fs.symlinkSync(join(h.dir, 'nowhere'), join(h.paths.workspace, 'broken'));
  await t.rejects(makeContainedDir('workspace/out/z', h.rules), { code: 'forbidden' });
  await t.rejects(makeContainedDir('_secrets/z', h.rules), { code: 'forbidden' });
  for (const p of ['.', '', 'workspace/..', '_secrets', '_secrets/users.json', 'config', '.env', 'workspace/out', '/']) {
    await t.rejects(removeContained(p, h.rules), JSON.stringify(p));
  }
  t.same(listing(h.outside), []);
  t.ok(fs.existsSync(h.paths.usersFile) && fs.existsSync(h.paths.configFile) && fs.existsSync(h.paths.envFile));
  t.ok(fs.lstatSync(join(h.paths.workspace, 'out')).isSymbolicLink(), 'the link leading out stays');
  await removeContained('workspace/broken', h.rules);
  t.notOk(fs.existsSync(join(h.paths.workspace, 'broken')), 'a broken link leads nowhere and may go');
  await removeContained('workspace/x', h.rules);
  t.notOk(fs.existsSync(join(h.paths.workspace, 'x')));
});

await t.test('listContainedDir: secrets and links leading out are not shown, nor listable', async (t) => {
  const h = await home(t);
  fs.symlinkSync(h.outside, join(h.paths.workspace, 'out'));
  fs.symlinkSync(h.paths.configDir, join(h.paths.workspace, 'cfg'));
  fs.mkdirSync(join(h.paths.workspace, 'in'));
  fs.symlinkSync(join(h.paths.workspace, 'in'), join(h.paths.workspace, 'in-link'));
  const root = (await listContainedDir('', h.rules)).map((e) => e.name);
  t.same(root, ['workspace'], 'the home lists without _secrets, config, .env');
  const ws = await listContainedDir('workspace', h.rules);
  t.same(ws.map((e) => [e.name, e.path, e.isDir]), [['in', 'workspace/in', true], ['in-link', 'workspace/in-link', true]]);
  await t.rejects(listContainedDir('workspace/out', h.rules), { code: 'forbidden' });
  await t.rejects(listContainedDir('workspace/cfg', h.rules), { code: 'forbidden' });
  await t.rejects(listContainedDir('_secrets', h.rules), { code: 'forbidden' });
  await t.rejects(listContainedDir('../outside', h.rules), { code: 'invalid-path' });
});
