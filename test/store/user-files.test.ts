import t from 'tap';
import * as fs from 'node:fs';
import { join } from 'node:path';
import { checkUserUploadDir, createUserFile, homePaths, makeUserDir, removeUserFile } from '../../store/index.js';

/*
 * The file manager never changes a CLI's settings folder (.claude holds hooks that run shell
 * commands on the next turn), whatever name leads there: an agent can make links in its own
 * workspace, so the refusal is on the real path, every component after links are resolved.
 * Real symlinks on disk.
 */
function workspace(t: { testdir(): string }) {
  const paths = homePaths(join(t.testdir(), 'home'));
  const ws = paths.workspace;
  fs.mkdirSync(join(ws, '.claude', 'hooks'), { recursive: true });
  fs.writeFileSync(join(ws, '.claude', 'settings.json'), '{"hooks":{}}');
  fs.mkdirSync(join(ws, 'proj', '.Codex'), { recursive: true });
  fs.writeFileSync(join(ws, 'proj', '.Codex', 'config.toml'), 'x = 1');
  fs.symlinkSync('.claude', join(ws, 'cl_alias'));
  // A link pointing to a settings folder elsewhere in the workspace, and one to a folder inside one.
  fs.symlinkSync(join(ws, 'proj', '.Codex'), join(ws, 'cx_alias'));
  fs.symlinkSync('.claude/hooks', join(ws, 'hooks_alias'));
  return { paths, ws };
}

/** Every entry below `dir` with its content, to show nothing changed. */
function snapshot(dir: string): string {
  return fs
    .readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .sort()
    .map((p) => {
      const st = fs.lstatSync(join(dir, p));
      return `${p}:${st.isFile() ? fs.readFileSync(join(dir, p), 'utf8') : st.isSymbolicLink() ? `->${fs.readlinkSync(join(dir, p))}` : 'dir'}`;
    })
    .join('\n');
}

await t.test('a link to a CLI settings folder is no way around the refusal: upload, mkdir and delete are forbidden', async (t) => {
  const { paths, ws } = workspace(t);
  const before = snapshot(ws);
  for (const p of ['cl_alias/settings.json', 'cl_alias/hooks', 'hooks_alias/pre.sh', 'cx_alias/config.toml']) {
    await t.rejects(removeUserFile(paths, 'main', p), { code: 'forbidden' }, `delete ${p}`);
  }
  for (const p of ['cl_alias/hooks2', 'cl_alias/new/deeper', 'hooks_alias/x', 'cx_alias/sub']) {
    await t.rejects(makeUserDir(paths, 'main', p), { code: 'forbidden' }, `mkdir ${p}`);
  }
  for (const p of ['cl_alias/settings.local.json', 'hooks_alias/pre.sh', 'cx_alias/auth.json']) {
    await t.rejects(createUserFile(paths, 'main', p), { code: 'forbidden' }, `upload ${p}`);
  }
  for (const p of ['cl_alias', 'hooks_alias', 'cx_alias']) {
    await t.rejects(checkUserUploadDir(paths, 'main', p), { code: 'forbidden' }, `upload into ${p}`);
  }
  t.equal(snapshot(ws), before, 'nothing in the workspace changed');
});

await t.test('the file manager still works around the links, and deleting a link removes only the link', async (t) => {
  const { paths, ws } = workspace(t);
  await makeUserDir(paths, 'main', 'docs/a');
  const file = await createUserFile(paths, 'main', 'docs/a/note.txt');
  await file.handle.writeFile('hi');
  await file.handle.close();
  await file.commit();
  t.equal(fs.readFileSync(join(ws, 'docs', 'a', 'note.txt'), 'utf8'), 'hi');
  t.same(fs.readdirSync(join(ws, 'docs', 'a')), ['note.txt'], 'no temp file left');
  await checkUserUploadDir(paths, 'main', 'docs');
  t.same(await removeUserFile(paths, 'main', 'docs'), { wasDir: true });
  t.notOk(fs.existsSync(join(ws, 'docs')));
  t.same(await removeUserFile(paths, 'main', 'cl_alias'), { wasDir: false }, 'the link itself may go');
  t.notOk(fs.existsSync(join(ws, 'cl_alias')));
  t.equal(fs.readFileSync(join(ws, '.claude', 'settings.json'), 'utf8'), '{"hooks":{}}', 'what it pointed at stays');
});

await t.test('an upload abandoned after its checks leaves nothing behind', async (t) => {
  const { paths, ws } = workspace(t);
  const file = await createUserFile(paths, 'main', 'drop.bin');
  await file.handle.close();
  await file.discard();
  t.notOk(fs.readdirSync(ws).some((n) => n.includes('drop.bin')));
});
