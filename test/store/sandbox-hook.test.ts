// Runs the sub-agent sandbox hook exactly as Claude Code does: JSON on stdin, exit 0 = allow,
// exit 2 = block with the reason on stderr. Malformed input fails closed (blocked, exit 2).
import t from 'tap';
import * as fs from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { homePaths, initWorkspace, installSandboxHook } from '../../store/index.js';

const PYTHON = '/usr/bin/python3';

type T = Parameters<Parameters<typeof t.test>[0]>[0];

function setup(t: T) {
  const base = fs.realpathSync(t.testdir());
  const paths = homePaths(join(base, 'home'));
  const { workspace } = initWorkspace(paths, 'bob');
  const { script } = installSandboxHook(paths, 'bob');
  const outside = join(base, 'outside');
  const extra = join(base, 'extra');
  const otherExtra = join(base, 'other-extra');
  for (const d of [outside, extra, otherExtra, `${workspace}-evil`]) fs.mkdirSync(d, { recursive: true });
  fs.writeFileSync(join(outside, 'secret.txt'), 'secret');
  fs.writeFileSync(join(extra, 'data.csv'), 'a,b');
  fs.writeFileSync(join(workspace, 'notes.txt'), 'mine');
  fs.symlinkSync(join(outside, 'secret.txt'), join(workspace, 'link-out.txt'));
  fs.symlinkSync(outside, join(workspace, 'dir-out'));
  fs.symlinkSync(join(workspace, 'notes.txt'), join(workspace, 'link-in.txt'));

  const writeRegistry = (entries: unknown, file = paths.agentsRegistry) => {
    fs.mkdirSync(join(file, '..'), { recursive: true });
    fs.writeFileSync(file, typeof entries === 'string' ? entries : JSON.stringify(entries));
  };
  const run = (input: unknown, env: Record<string, string | undefined> = {}) => {
    const res = spawnSync(PYTHON, [script], {
      input: typeof input === 'string' || Buffer.isBuffer(input) ? input : JSON.stringify(input),
      env: { PATH: process.env.PATH, HOME: base, SVC_HOME: paths.root, SVC_AGENT_NAME: 'bob', ...env },
      encoding: 'utf8',
      timeout: 20_000,
    });
    return { code: res.status, stderr: res.stderr };
  };
  return { base, paths, workspace, outside, extra, otherExtra, run, writeRegistry };
}

type Env = ReturnType<typeof setup>;
interface Case {
  name: string;
  input: (e: Env) => unknown;
  allow: boolean;
  /** What stderr must say when blocked. */
  says?: (e: Env) => RegExp | string;
}

const call = (tool_name: string, tool_input: unknown, cwd?: string) => ({
  session_id: 's-1',
  hook_event_name: 'PreToolUse',
  tool_name,
  tool_input,
  ...(cwd === undefined ? {} : { cwd }),
});

const CASES: Case[] = [
  { name: 'Read inside the workspace', input: (e) => call('Read', { file_path: join(e.workspace, 'notes.txt') }, e.workspace), allow: true },
  { name: 'Read of the workspace itself', input: (e) => call('Read', { file_path: e.workspace }, e.workspace), allow: true },
  { name: 'Write of a new file in a new subdirectory', input: (e) => call('Write', { file_path: join(e.workspace, 'new/dir/f.md'), content: 'x' }, e.workspace), allow: true },
  { name: 'symlink staying inside', input: (e) => call('Read', { file_path: join(e.workspace, 'link-in.txt') }, e.workspace), allow: true },
  {
    name: 'Read outside',
    input: (e) => call('Read', { file_path: join(e.outside, 'secret.txt') }, e.workspace),
    allow: false,
    says: (e) => `Read of ${join(e.outside, 'secret.txt')} is outside the directories agent 'bob' may use: ${e.workspace}`,
  },
  { name: 'Read of /etc/passwd', input: (e) => call('Read', { file_path: '/etc/passwd' }, e.workspace), allow: false, says: () => '/etc/passwd' },
  { name: 'the agent home beside the workspace', input: (e) => call('Read', { file_path: join(e.paths.agentsDir, 'bob', 'config', 'config.json') }, e.workspace), allow: false },
  { name: 'a sibling whose name extends the workspace name', input: (e) => call('Write', { file_path: `${e.workspace}-evil/x`, content: '' }, e.workspace), allow: false },
  { name: 'file symlink escaping', input: (e) => call('Read', { file_path: join(e.workspace, 'link-out.txt') }, e.workspace), allow: false, says: (e) => join(e.outside, 'secret.txt') },
  { name: 'directory symlink escaping (Write)', input: (e) => call('Write', { file_path: join(e.workspace, 'dir-out', 'planted.sh'), content: '' }, e.workspace), allow: false },
  { name: 'dot-dot climbing out', input: (e) => call('Edit', { file_path: join(e.workspace, '..', '..', '..', 'outside', 'secret.txt'), old_string: 'a', new_string: 'b' }, e.workspace), allow: false },
  { name: 'relative path resolved against cwd (inside)', input: (e) => call('Read', { file_path: 'notes.txt' }, e.workspace), allow: true },
  { name: 'relative path climbing out of cwd', input: (e) => call('Read', { file_path: '../../../outside/secret.txt' }, e.workspace), allow: false },
  { name: 'relative path with cwd outside', input: (e) => call('Read', { file_path: 'secret.txt' }, e.outside), allow: false },
  { name: 'MultiEdit outside', input: (e) => call('MultiEdit', { file_path: join(e.outside, 'secret.txt'), edits: [] }, e.workspace), allow: false },
  { name: 'NotebookEdit outside (notebook_path)', input: (e) => call('NotebookEdit', { notebook_path: join(e.outside, 'n.ipynb'), new_source: '' }, e.workspace), allow: false },
  { name: 'NotebookEdit inside', input: (e) => call('NotebookEdit', { notebook_path: join(e.workspace, 'n.ipynb'), new_source: '' }, e.workspace), allow: true },
  { name: 'Grep with path outside', input: (e) => call('Grep', { pattern: 'secret', path: e.outside }, e.workspace), allow: false },
  { name: 'Grep without path searches cwd (inside)', input: (e) => call('Grep', { pattern: 'x' }, e.workspace), allow: true },
  { name: 'Grep without path, cwd outside', input: (e) => call('Grep', { pattern: 'x' }, e.outside), allow: false },
  { name: 'Glob inside', input: (e) => call('Glob', { pattern: '**/*.md' }, e.workspace), allow: true },
  { name: 'Glob with path outside', input: (e) => call('Glob', { pattern: '*', path: e.outside }, e.workspace), allow: false },
  { name: 'Glob with an absolute pattern', input: (e) => call('Glob', { pattern: `${e.outside}/*.txt` }, e.workspace), allow: false },
  { name: 'Glob pattern climbing with ..', input: (e) => call('Glob', { pattern: '../../../outside/*' }, e.workspace), allow: false },
  { name: 'Glob .. after a wildcard', input: (e) => call('Glob', { pattern: '*/../../../*' }, e.workspace), allow: false, says: () => "climbs with '..'" },
  { name: 'Glob brace alternative escaping', input: (e) => call('Glob', { pattern: `{src,${e.outside}}/*` }, e.workspace), allow: false },
  { name: 'Glob braces staying inside', input: (e) => call('Glob', { pattern: '{src,docs}/**/*.{ts,md}' }, e.workspace), allow: true },
  { name: 'Bash passes whatever it touches', input: (e) => call('Bash', { command: `cat ${e.outside}/secret.txt` }, e.workspace), allow: true },
  { name: 'an unknown tool passes', input: (e) => call('WebFetch', { url: 'https://example.com', file_path: '/etc/passwd' }, e.workspace), allow: true },
  { name: 'an MCP tool passes', input: (e) => call('mcp__fs__read', { path: '/etc/passwd' }, e.workspace), allow: true },
  { name: 'malformed JSON', input: () => '{"tool_name": "Read", "tool_input": {"file_path": "/etc/pass', allow: false, says: () => 'could not parse the hook input as JSON' },
  { name: 'empty stdin', input: () => '', allow: false, says: () => 'could not parse' },
  { name: 'stdin not an object', input: () => '["Read"]', allow: false, says: () => 'not a JSON object' },
  { name: 'invalid UTF-8 on stdin', input: () => Buffer.from([0x7b, 0xff, 0xfe, 0x7d]), allow: false, says: () => 'could not parse' },
  { name: 'Read without tool_input', input: (e) => ({ tool_name: 'Read', cwd: e.workspace }), allow: false, says: () => 'no tool_input' },
  { name: 'Read without file_path', input: (e) => call('Read', {}, e.workspace), allow: false, says: () => 'missing or not a string' },
  { name: 'file_path of the wrong type', input: (e) => call('Write', { file_path: 42, content: '' }, e.workspace), allow: false },
  { name: 'file_path with a NUL byte', input: (e) => call('Read', { file_path: `${e.workspace}/a\u0000b` }, e.workspace), allow: false, says: () => 'NUL' },
  { name: 'Glob pattern of the wrong type', input: (e) => call('Glob', { pattern: ['*'] }, e.workspace), allow: false },
];

await t.test('hook decisions (no registry: only the workspace)', async (t) => {
  const env = setup(t);
  for (const c of CASES) {
    const { code, stderr } = env.run(c.input(env));
    if (c.allow) {
      t.equal(code, 0, `${c.name}: allowed`);
      t.equal(stderr, '', `${c.name}: silent`);
    } else {
      t.equal(code, 2, `${c.name}: blocked with exit 2`);
      t.match(stderr, /^svc sandbox: /, `${c.name}: reason on stderr`);
      if (c.says) t.match(stderr, c.says(env), `${c.name}: names the problem`);
    }
  }
});

await t.test('additional_directories of the agent are allowed, others are not', async (t) => {
  const env = setup(t);
  env.writeRegistry([
    { name: 'alice', additional_directories: [env.otherExtra] },
    { name: 'bob', additional_directories: [env.extra, 'relative/ignored', 7] },
  ]);
  t.equal(env.run(call('Read', { file_path: join(env.extra, 'data.csv') }, env.workspace)).code, 0, 'own extra dir');
  t.equal(env.run(call('Grep', { pattern: 'a', path: env.extra }, env.workspace)).code, 0, 'Grep in extra dir');
  const other = env.run(call('Read', { file_path: join(env.otherExtra, 'x') }, env.workspace));
  t.equal(other.code, 2, "another agent's directory stays closed");
  t.match(other.stderr, `${env.workspace}, ${env.extra}.`, 'the message lists the allowed roots');
  t.equal(env.run(call('Read', { file_path: join(env.outside, 'secret.txt') }, env.workspace)).code, 2);
  t.equal(env.run(call('Read', { file_path: join(env.workspace, 'notes.txt') }, env.workspace)).code, 0, 'workspace still allowed');
});

await t.test('a registry edit takes effect on the very next call', async (t) => {
  const env = setup(t);
  const readExtra = call('Read', { file_path: join(env.extra, 'data.csv') }, env.workspace);
  t.equal(env.run(readExtra).code, 2, 'before: blocked');
  env.writeRegistry([{ name: 'bob', additional_directories: [env.extra] }]);
  t.equal(env.run(readExtra).code, 0, 'after adding: allowed');
  env.writeRegistry([{ name: 'bob' }]);
  t.equal(env.run(readExtra).code, 2, 'after removing: blocked again');
});

await t.test('the legacy registry is read when _secrets/agents.json is absent', async (t) => {
  const env = setup(t);
  const readExtra = call('Read', { file_path: join(env.extra, 'data.csv') }, env.workspace);
  env.writeRegistry([{ name: 'bob', additional_directories: [env.extra] }], env.paths.legacyAgentsRegistry);
  t.equal(env.run(readExtra).code, 0, 'legacy file used');
  env.writeRegistry([{ name: 'bob' }]);
  t.equal(env.run(readExtra).code, 2, '_secrets/agents.json wins once it exists');
});

await t.test('a malformed or unreadable registry leaves only the workspace', async (t) => {
  const env = setup(t);
  const readExtra = call('Read', { file_path: join(env.extra, 'data.csv') }, env.workspace);
  const readOwn = call('Read', { file_path: join(env.workspace, 'notes.txt') }, env.workspace);
  for (const [text, why] of [
    ['[{"name": "bob", "additional_directories": [', 'truncated JSON'],
    [JSON.stringify({ name: 'bob', additional_directories: [env.extra] }), 'an object instead of a list'],
    [JSON.stringify([{ name: 'bob', additional_directories: env.extra }]), 'additional_directories not a list'],
  ] as const) {
    env.writeRegistry(text);
    t.equal(env.run(readExtra).code, 2, `${why}: extra dir blocked`);
    t.equal(env.run(readOwn).code, 0, `${why}: workspace allowed`);
  }
  env.writeRegistry([{ name: 'bob', additional_directories: [env.extra] }]);
  fs.chmodSync(env.paths.agentsRegistry, 0o000);
  const unreadable = env.run(readExtra).code;
  fs.chmodSync(env.paths.agentsRegistry, 0o600);
  // root reads through mode 000; the rule under test is only "no crash, workspace still works".
  t.ok(unreadable === 2 || (process.getuid?.() === 0 && unreadable === 0), 'unreadable registry: no crash');
  t.equal(env.run(readOwn).code, 0);
});

await t.test('the agent identity comes from SVC_AGENT_NAME and must be a valid name', async (t) => {
  const env = setup(t);
  const readOwn = call('Read', { file_path: join(env.workspace, 'notes.txt') }, env.workspace);
  for (const bad of [undefined, '', '../bob', 'Bob', 'a/b']) {
    const res = env.run(readOwn, { SVC_AGENT_NAME: bad });
    t.equal(res.code, 2, `SVC_AGENT_NAME=${JSON.stringify(bad)}: file tools blocked`);
    t.match(res.stderr, 'SVC_AGENT_NAME');
  }
  t.equal(env.run(call('Bash', { command: 'ls' }, env.workspace), { SVC_AGENT_NAME: undefined }).code, 0, 'Bash still passes');
  // Another agent's identity gets that agent's workspace, not bob's.
  initWorkspace(env.paths, 'carol');
  t.equal(env.run(readOwn, { SVC_AGENT_NAME: 'carol' }).code, 2);
});
