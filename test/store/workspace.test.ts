import t from 'tap';
import * as fs from 'node:fs';
import { join } from 'node:path';
import {
  INSTRUCTION_FILES,
  SANDBOX_HOOK_COMMAND,
  SANDBOX_HOOK_MATCHER,
  countLines,
  formatSize,
  homeDefaultsDir,
  homePaths,
  initTaskFolder,
  initWorkspace,
  installSandboxHook,
  listMemoryModules,
  readMemoryModule,
  readMemoryModules,
  readTaskRules,
  workspaceDir,
  writeMemoryModule,
} from '../../store/index.js';
import { alwaysLoadModules } from '../../machines/index.js';
import { startSymlinkSwap } from '../fixtures/symlink-swap.js';

const mode = (p: string) => fs.statSync(p).mode & 0o777;
const read = (p: string) => fs.readFileSync(p, 'utf8');
const shipped = (rel: string) => read(join(homeDefaultsDir(), rel));
type T = Parameters<Parameters<typeof t.test>[0]>[0];

const throwsCode = (t: T, fn: () => unknown, code: string, msg?: string) =>
  t.throws(fn, { name: 'SvcError', code }, msg ?? `throws ${code}`);

await t.test('shipped defaults: instruction files are one text, short, and name what the agent needs', async (t) => {
  const texts = INSTRUCTION_FILES.map((f) => shipped(`workspace/${f}`));
  t.equal(texts[1], texts[0], 'AGENTS.md matches CLAUDE.md');
  t.equal(texts[2], texts[0], 'GEMINI.md matches CLAUDE.md');
  t.ok(countLines(texts[0]!) <= 60, `${countLines(texts[0]!)} lines`);
  for (const needle of ['svc', 'memory_system/MAINMEMORY.md', 'SHAREDMEMORY.md', 'modules/', '<file:/', 'output_to_user/', 'ask_agent.py', 'ask_agent_async.py', 'ask_parent.py', 'create_task.py']) {
    t.match(texts[0], needle, `mentions ${needle}`);
  }
  const main = shipped('workspace/memory_system/MAINMEMORY.md');
  t.match(main, /## Always Load[\s\S]*\| Module \| Why \|/);
  t.same(alwaysLoadModules(main), [], 'the shipped Always Load table lists nothing');
  t.match(readTaskRules(), /task folder/);
  t.match(readTaskRules(), /ask_parent\.py/);
  t.match(readTaskRules(), /final result/);
  t.ok(fs.statSync(join(homeDefaultsDir(), 'hooks', 'sandbox_hook.py')).mode & 0o100, 'hook script is executable');
});

await t.test('initWorkspace seeds the main workspace with files and directories', async (t) => {
  const paths = homePaths(join(t.testdir(), 'home'));
  const { workspace, created } = initWorkspace(paths, 'main');
  t.equal(workspace, paths.workspace);
  for (const f of [...INSTRUCTION_FILES, 'memory_system/MAINMEMORY.md', 'memory_system/SHAREDMEMORY.md']) {
    t.equal(read(join(workspace, f)), shipped(`workspace/${f}`), `${f} seeded`);
    t.ok(created.includes(f), `${f} reported`);
  }
  for (const d of ['memory_system/modules', 'output_to_user', 'api_files', 'tools', 'skills']) {
    t.ok(fs.statSync(join(workspace, d)).isDirectory(), `${d}/ exists`);
    t.ok(created.includes(`${d}/`), `${d}/ reported`);
  }
  t.same(fs.readdirSync(join(workspace, 'skills')), [], 'bundled skills are not copied per agent');
  t.notOk(fs.existsSync(join(workspace, '.claude')), 'the main agent gets no sandbox hook');
});

await t.test('initWorkspace for a sub-agent uses agents/<name>/workspace', async (t) => {
  const paths = homePaths(join(t.testdir(), 'home'));
  const { workspace } = initWorkspace(paths, 'research_bot');
  t.equal(workspace, join(paths.agentsDir, 'research_bot', 'workspace'));
  t.equal(workspaceDir(paths, 'research_bot'), workspace);
  t.ok(fs.existsSync(join(workspace, 'memory_system', 'MAINMEMORY.md')));
  t.equal(mode(paths.root), 0o700, 'a home created on the way is private');
  t.equal(mode(join(paths.agentsDir, 'research_bot')), 0o700);
});

await t.test('initWorkspace is idempotent and never overwrites what the user changed', async (t) => {
  const paths = homePaths(join(t.testdir(), 'home'));
  const { workspace } = initWorkspace(paths, 'main');
  const claude = join(workspace, 'CLAUDE.md');
  const mainMem = join(workspace, 'memory_system', 'MAINMEMORY.md');
  fs.writeFileSync(claude, 'my own instructions\n');
  fs.writeFileSync(mainMem, '');
  fs.rmSync(join(workspace, 'GEMINI.md'));
  fs.rmSync(join(workspace, 'api_files'), { recursive: true });
  fs.writeFileSync(join(workspace, 'output_to_user', 'report.txt'), 'keep');

  const again = initWorkspace(paths, 'main');
  t.same(again.created.sort(), ['GEMINI.md', 'api_files/'], 'only the missing pieces are created');
  t.equal(read(claude), 'my own instructions\n');
  t.equal(read(mainMem), '', 'an emptied file stays empty');
  t.equal(read(join(workspace, 'output_to_user', 'report.txt')), 'keep');
  t.same(initWorkspace(paths, 'main').created, [], 'third run creates nothing');

  // A symlink the user put in place of a seeded file is left alone, dangling or not.
  fs.rmSync(join(workspace, 'AGENTS.md'));
  fs.symlinkSync(join(workspace, 'nowhere.md'), join(workspace, 'AGENTS.md'));
  t.same(initWorkspace(paths, 'main').created, []);
  t.ok(fs.lstatSync(join(workspace, 'AGENTS.md')).isSymbolicLink());
});

await t.test('initWorkspace rejects bad agent names and a file where a directory must be', async (t) => {
  const root = join(t.testdir(), 'home');
  const paths = homePaths(root);
  for (const bad of ['', '../main', 'Bob', 'a/b', 'x'.repeat(65), 'a b', '.', '..', 7 as unknown as string]) {
    throwsCode(t, () => initWorkspace(paths, bad), 'invalid-agent-name', `rejects ${JSON.stringify(bad)}`);
  }
  t.notOk(fs.existsSync(root), 'nothing was created for a rejected name');

  initWorkspace(paths, 'main');
  fs.rmSync(join(paths.workspace, 'tools'), { recursive: true });
  fs.writeFileSync(join(paths.workspace, 'tools'), 'not a dir');
  throwsCode(t, () => initWorkspace(paths, 'main'), 'not-a-directory');
  t.equal(read(join(paths.workspace, 'tools')), 'not a dir', 'the squatting file is left as it was');
});

await t.test('initTaskFolder seeds TASKMEMORY.md and the instruction files', async (t) => {
  const paths = homePaths(join(t.testdir(), 'home'));
  const { folder, created } = initTaskFolder(paths, 'task-42');
  t.equal(folder, join(paths.workspace, 'tasks', 'task-42'));
  t.same(created.sort(), ['AGENTS.md', 'CLAUDE.md', 'GEMINI.md', 'TASKMEMORY.md']);
  t.equal(read(join(folder, 'TASKMEMORY.md')), shipped('task/TASKMEMORY.md'));
  t.equal(read(join(folder, 'CLAUDE.md')), shipped('workspace/CLAUDE.md'), 'shipped text when the main workspace has none');

  // The user's edited main instructions reach new task folders; existing task files are kept.
  initWorkspace(paths, 'main');
  fs.writeFileSync(join(paths.workspace, 'CLAUDE.md'), 'house rules\n');
  const other = initTaskFolder(paths, 'T_2');
  t.equal(read(join(other.folder, 'CLAUDE.md')), 'house rules\n');
  fs.writeFileSync(join(folder, 'TASKMEMORY.md'), 'progress: half');
  t.same(initTaskFolder(paths, 'task-42').created, []);
  t.equal(read(join(folder, 'TASKMEMORY.md')), 'progress: half');

  for (const bad of ['', '..', '../x', 'a/b', 'a.b', '%2e%2e', 'x'.repeat(129), null as unknown as string]) {
    throwsCode(t, () => initTaskFolder(paths, bad), 'invalid-task-id', `rejects ${JSON.stringify(bad)}`);
  }
  t.same(fs.readdirSync(join(paths.workspace, 'tasks')).sort(), ['T_2', 'task-42'], 'no folder for rejected ids');
});

await t.test('formatSize and countLines', async (t) => {
  t.equal(formatSize(0), '0 B');
  t.equal(formatSize(1023), '1023 B');
  t.equal(formatSize(1024), '1.0 KB');
  t.equal(formatSize(1229), '1.2 KB');
  t.equal(formatSize(5 * 1024 * 1024), '5.0 MB');
  t.equal(countLines(''), 0);
  t.equal(countLines('a'), 1);
  t.equal(countLines('a\n'), 1);
  t.equal(countLines('a\nb'), 2);
  t.equal(countLines('a\r\nb\r\n'), 2);
  t.equal(countLines('\n\n'), 2);
});

function memoryFixture(t: T) {
  const paths = homePaths(join(t.testdir(), 'home'));
  const { workspace } = initWorkspace(paths, 'main');
  const mem = join(workspace, 'memory_system');
  fs.writeFileSync(join(mem, 'MAINMEMORY.md'), 'one\ntwo\nthree\n');
  fs.writeFileSync(join(mem, 'modules', 'projects.md'), 'x'.repeat(1229));
  fs.mkdirSync(join(mem, 'modules', 'people'));
  fs.writeFileSync(join(mem, 'modules', 'people', 'alice.md'), 'Alice\nlikes tea\n');
  fs.writeFileSync(join(mem, 'modules', 'notes.txt'), 'not markdown');
  fs.writeFileSync(join(mem, 'modules', '.hidden.md'), 'hidden');
  const outside = join(t.testdirName, 'outside');
  fs.mkdirSync(outside, { recursive: true });
  fs.writeFileSync(join(outside, 'secret.md'), 'secret\n');
  return { paths, workspace, mem, outside };
}

await t.test('listMemoryModules lists root files and nested modules with lines and size', async (t) => {
  const { workspace } = memoryFixture(t);
  const list = listMemoryModules(workspace);
  t.same(
    list.map((m) => m.filename),
    ['MAINMEMORY.md', 'SHAREDMEMORY.md', 'modules/people/alice.md', 'modules/projects.md'],
  );
  t.same(list[0], { name: 'MAINMEMORY', filename: 'MAINMEMORY.md', lines: 3, size: '14 B' });
  t.same(list[2], { name: 'people/alice', filename: 'modules/people/alice.md', lines: 2, size: '16 B' });
  t.same(list[3], { name: 'projects', filename: 'modules/projects.md', lines: 1, size: '1.2 KB' });
  t.same(listMemoryModules(join(t.testdirName, 'no-such-workspace')), [], 'no memory_system: empty list');
});

await t.test('listMemoryModules skips symlinks that leave memory_system and symlinked directories', async (t) => {
  const { workspace, mem, outside } = memoryFixture(t);
  fs.symlinkSync(join(outside, 'secret.md'), join(mem, 'modules', 'escape.md'));
  fs.symlinkSync(outside, join(mem, 'modules', 'outdir'));
  fs.symlinkSync(join(mem, 'modules', 'projects.md'), join(mem, 'modules', 'alias.md'));
  fs.symlinkSync(join(mem, 'modules', 'missing.md'), join(mem, 'modules', 'dangling.md'));
  const names = listMemoryModules(workspace).map((m) => m.filename);
  t.notOk(names.includes('modules/escape.md'));
  t.notOk(names.some((n) => n.startsWith('modules/outdir')));
  t.notOk(names.includes('modules/dangling.md'));
  t.ok(names.includes('modules/alias.md'), 'a symlink staying inside is listed');
});

await t.test('readMemoryModule reads a listed module', async (t) => {
  const { workspace } = memoryFixture(t);
  const m = readMemoryModule(workspace, 'modules/people/alice.md');
  t.same(m, { name: 'people/alice', filename: 'modules/people/alice.md', lines: 2, size: '16 B', text: 'Alice\nlikes tea\n' });
  t.equal(readMemoryModule(workspace, 'MAINMEMORY.md').text, 'one\ntwo\nthree\n');
  throwsCode(t, () => readMemoryModule(workspace, 'modules/nope.md'), 'not-found');
});

await t.test('readMemoryModule rejects path traversal in every form', async (t) => {
  const { workspace, mem, outside } = memoryFixture(t);
  fs.writeFileSync(join(workspace, 'CLAUDE.md.md'), 'outside memory_system');
  fs.symlinkSync(join(outside, 'secret.md'), join(mem, 'modules', 'escape.md'));
  fs.symlinkSync(outside, join(mem, 'modules', 'outdir'));
  fs.symlinkSync(join(mem, 'modules', 'missing.md'), join(mem, 'modules', 'dangling.md'));
  const attempts: [string, string][] = [
    ['../CLAUDE.md.md', 'parent'],
    ['modules/../../CLAUDE.md.md', 'parent in the middle'],
    [join(outside, 'secret.md'), 'absolute'],
    ['/etc/passwd.md', 'absolute'],
    ['C:/x.md', 'drive'],
    ['..\\CLAUDE.md.md', 'backslash'],
    ['%2e%2e/CLAUDE.md.md', 'encoded dots'],
    ['..%2fCLAUDE.md.md', 'encoded slash'],
    ['%252e%252e/x.md', 'double-encoded'],
    ['modules//projects.md', 'empty segment'],
    ['./MAINMEMORY.md', 'dot segment'],
    ['modules/projects.md\0.md', 'NUL'],
    ['modules/notes.txt', 'not markdown'],
    ['modules/escape.md', 'symlink escape'],
    ['modules/outdir/secret.md', 'symlinked directory escape'],
    ['modules/dangling.md', 'dangling symlink'],
    ['', 'empty'],
    [`${'a/'.repeat(300)}x.md`, 'too long'],
  ];
  for (const [filename, why] of attempts) {
    throwsCode(t, () => readMemoryModule(workspace, filename), 'invalid-path', `${why}: ${JSON.stringify(filename).slice(0, 60)}`);
  }
  throwsCode(t, () => readMemoryModule(workspace, 42 as unknown as string), 'invalid-path', 'not a string');
  t.equal(read(join(outside, 'secret.md')), 'secret\n', 'nothing outside was touched');
});

await t.test('a memory_system that is a symlink is refused for reads and writes, as forbidden', async (t) => {
  const { workspace, mem, outside } = memoryFixture(t);
  const elsewhere = join(outside, 'memory');
  fs.mkdirSync(join(elsewhere, 'modules'), { recursive: true });
  fs.writeFileSync(join(elsewhere, 'MAINMEMORY.md'), 'OUTSIDE\n');
  fs.writeFileSync(join(elsewhere, 'modules', 'projects.md'), 'OUTSIDE\n');
  fs.renameSync(mem, join(workspace, 'memory_system.real'));
  fs.symlinkSync(elsewhere, mem);
  throwsCode(t, () => readMemoryModule(workspace, 'MAINMEMORY.md'), 'forbidden', 'a read');
  throwsCode(t, () => listMemoryModules(workspace), 'forbidden', 'the listing');
  throwsCode(t, () => readMemoryModules(workspace), 'forbidden', 'the texts for a prompt');
  await t.rejects(writeMemoryModule(workspace, 'modules/projects.md', 'written\n', []), { name: 'SvcError', code: 'forbidden' }, 'a write');
  await t.rejects(writeMemoryModule(workspace, 'modules/new.md', 'written\n', []), { name: 'SvcError', code: 'forbidden' }, 'a new module');
  t.equal(read(join(elsewhere, 'modules', 'projects.md')), 'OUTSIDE\n', 'nothing outside was written');
  t.notOk(fs.existsSync(join(elsewhere, 'modules', 'new.md')));

  // A link inside the workspace is refused too: memory is the workspace's own memory_system/ folder.
  fs.unlinkSync(mem);
  fs.symlinkSync('memory_system.real', mem);
  throwsCode(t, () => readMemoryModule(workspace, 'MAINMEMORY.md'), 'forbidden');
  fs.unlinkSync(mem);
  fs.renameSync(join(workspace, 'memory_system.real'), mem);
  t.equal(readMemoryModule(workspace, 'MAINMEMORY.md').text, 'one\ntwo\nthree\n', 'the real folder back in place is read');
  t.match(await writeMemoryModule(workspace, 'modules/projects.md', 'written\n', []), { filename: 'modules/projects.md', created: false });
});

await t.test('readMemoryModule refuses an oversized module', async (t) => {
  const { workspace, mem } = memoryFixture(t);
  fs.writeFileSync(join(mem, 'modules', 'huge.md'), Buffer.alloc(1024 * 1024 + 1, 0x61));
  throwsCode(t, () => readMemoryModule(workspace, 'modules/huge.md'), 'file-too-large');
  t.notOk(listMemoryModules(workspace).some((m) => m.filename === 'modules/huge.md'), 'left out of the listing, others still listed');
  t.ok(listMemoryModules(workspace).some((m) => m.filename === 'modules/projects.md'));
});

await t.test('installSandboxHook copies the script and registers it in a fresh settings.json', async (t) => {
  const paths = homePaths(join(t.testdir(), 'home'));
  const { workspace } = initWorkspace(paths, 'bob');
  const res = installSandboxHook(paths, 'bob');
  t.equal(res.script, join(workspace, '.claude', 'hooks', 'sandbox_hook.py'));
  t.equal(res.settings, join(workspace, '.claude', 'settings.json'));
  t.equal(read(res.script), shipped('hooks/sandbox_hook.py'));
  t.equal(mode(res.script), 0o755);
  t.equal(mode(res.settings), 0o644);
  t.same(JSON.parse(read(res.settings)), {
    hooks: { PreToolUse: [{ matcher: SANDBOX_HOOK_MATCHER, hooks: [{ type: 'command', command: SANDBOX_HOOK_COMMAND, timeout: 30 }] }] },
  });
  for (const tool of ['Read', 'Edit', 'Write', 'MultiEdit', 'NotebookEdit', 'Grep', 'Glob']) {
    t.ok(new RegExp(`^(${SANDBOX_HOOK_MATCHER})$`).test(tool), `matcher covers ${tool}`);
  }
  t.notOk(new RegExp(`^(${SANDBOX_HOOK_MATCHER})$`).test('Bash'), 'matcher leaves Bash alone');
  t.match(SANDBOX_HOOK_COMMAND, /^python3 /);

  throwsCode(t, () => installSandboxHook(paths, 'main'), 'invalid-agent-name', 'main agent gets no hook');
  t.notOk(fs.existsSync(join(paths.workspace, '.claude')));
  throwsCode(t, () => installSandboxHook(paths, '../bob'), 'invalid-agent-name');
});

await t.test('installSandboxHook merges into existing settings without clobbering, idempotently', async (t) => {
  const paths = homePaths(join(t.testdir(), 'home'));
  const { workspace } = initWorkspace(paths, 'bob');
  const settings = join(workspace, '.claude', 'settings.json');
  fs.mkdirSync(join(workspace, '.claude'));
  const userHook = { type: 'command', command: 'echo audit >> /tmp/log' };
  fs.writeFileSync(
    settings,
    JSON.stringify({
      model: 'opus',
      permissions: { allow: ['Bash(ls:*)'] },
      hooks: {
        PostToolUse: [{ matcher: 'Write', hooks: [{ type: 'command', command: 'prettier' }] }],
        PreToolUse: [
          { matcher: 'Bash', hooks: [userHook] },
          // An older svc entry sharing a group with a user hook: ours goes, theirs stays.
          { matcher: 'Read', hooks: [{ type: 'command', command: 'python3 old/sandbox_hook.py' }, userHook] },
        ],
      },
    }),
  );
  fs.chmodSync(settings, 0o600);
  installSandboxHook(paths, 'bob');
  installSandboxHook(paths, 'bob');
  t.equal(mode(settings), 0o600, 'the file keeps its mode');
  const got = JSON.parse(read(settings));
  t.equal(got.model, 'opus');
  t.same(got.permissions, { allow: ['Bash(ls:*)'] });
  t.same(got.hooks.PostToolUse, [{ matcher: 'Write', hooks: [{ type: 'command', command: 'prettier' }] }]);
  t.same(got.hooks.PreToolUse, [
    { matcher: 'Bash', hooks: [userHook] },
    { matcher: 'Read', hooks: [userHook] },
    { matcher: SANDBOX_HOOK_MATCHER, hooks: [{ type: 'command', command: SANDBOX_HOOK_COMMAND, timeout: 30 }] },
  ]);

  // A script the agent tampered with is replaced on the next install.
  const script = join(workspace, '.claude', 'hooks', 'sandbox_hook.py');
  fs.writeFileSync(script, 'import sys; sys.exit(0)\n');
  fs.chmodSync(script, 0o644);
  installSandboxHook(paths, 'bob');
  t.equal(read(script), shipped('hooks/sandbox_hook.py'));
  t.equal(mode(script), 0o755);
});

await t.test('installSandboxHook leaves a malformed settings.json untouched and installs nothing', async (t) => {
  const paths = homePaths(join(t.testdir(), 'home'));
  const { workspace } = initWorkspace(paths, 'bob');
  const settings = join(workspace, '.claude', 'settings.json');
  fs.mkdirSync(join(workspace, '.claude'));
  const cases: [string, string][] = [
    ['{"model": "opus",', 'truncated JSON'],
    ['[1, 2]', 'top level a list'],
    ['{"hooks": []}', 'hooks a list'],
    ['{"hooks": {"PreToolUse": {"matcher": "x"}}}', 'PreToolUse an object'],
  ];
  for (const [text, why] of cases) {
    fs.writeFileSync(settings, text);
    throwsCode(t, () => installSandboxHook(paths, 'bob'), 'corrupt-file', why);
    t.equal(read(settings), text, `${why}: file unchanged`);
    t.notOk(fs.existsSync(join(workspace, '.claude', 'hooks', 'sandbox_hook.py')), `${why}: no script copied`);
  }
  fs.writeFileSync(settings, '');
  installSandboxHook(paths, 'bob');
  t.equal(JSON.parse(read(settings)).hooks.PreToolUse.length, 1, 'an empty file counts as {}');
});

await t.test('readMemoryModule under a directory-for-symlink swap never reads the file outside', async (t) => {
  const { workspace, mem, outside } = memoryFixture(t);
  fs.mkdirSync(join(mem, 'modules', 'team'));
  fs.writeFileSync(join(mem, 'modules', 'team', 'secret.md'), 'inside\n');
  // The agent owns memory_system/: it flips modules/team between its folder and a link outside.
  const stopSwap = await startSymlinkSwap(t, join(mem, 'modules', 'team'), outside, 30000);
  const seen = new Map<string, number>();
  // Bounded by count, not time: 2,000 reads while the swapper (a child process) flips the link.
  for (let i = 0; i < 2000; i++) {
    let what: string;
    try {
      what = readMemoryModule(workspace, 'modules/team/secret.md').text;
    } catch (e) {
      what = (e as { code?: string }).code ?? 'error';
    }
    seen.set(what, (seen.get(what) ?? 0) + 1);
    // Let the swapper's stdout and the loop's own bookkeeping breathe.
    if (i % 100 === 0) await new Promise((r) => setImmediate(r));
  }
  await stopSwap();
  t.notOk(seen.has('secret\n'), `never the outside file (${JSON.stringify([...seen])})`);
  t.ok(seen.get('inside\n'), 'the module inside was read while it was in place');
});
