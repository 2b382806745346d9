import t from 'tap';
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { delimiter, dirname, join, resolve } from 'node:path';
import { PassThrough } from 'node:stream';
import { loginCommand, notInstalledMessage, runLogin, type LoginOutput } from '../../actors/index.js';
import { authCommand } from '../../bin/auth-command.js';
import { homePaths } from '../../store/index.js';
import { until } from '../fixtures/until.js';

const BIN = resolve(import.meta.dirname, '../fixtures/bin');
const NODE_DIR = dirname(process.execPath);

interface FakeTerminal {
  stdin: PassThrough;
  stdout: PassThrough & LoginOutput;
  output: () => string;
}

function terminal(cols: number, rows: number): FakeTerminal {
  const stdin = new PassThrough();
  const stdout = new PassThrough() as PassThrough & LoginOutput;
  stdout.columns = cols;
  stdout.rows = rows;
  let out = '';
  stdout.on('data', (d: Buffer) => (out += d.toString('utf8')));
  return { stdin, stdout, output: () => out };
}

const env = (PATH: string) => ({ ...process.env, PATH });

await t.test('login command per provider', async (t) => {
  t.same(loginCommand('claude'), { command: 'claude', args: ['auth', 'login'] });
  t.same(loginCommand('codex'), { command: 'codex', args: ['login'] });
  t.same(loginCommand('gemini'), { command: 'gemini', args: [] });
  t.same(loginCommand('claude', ['setup-token']), { command: 'claude', args: ['setup-token'] });
  t.equal(notInstalledMessage('claude'), 'claude is not installed; install it with npm i -g @anthropic-ai/claude-code');
  t.equal(notInstalledMessage('codex'), 'codex is not installed; install it with npm i -g @openai/codex');
  t.equal(notInstalledMessage('gemini'), 'gemini is not installed; install it with npm i -g @google/gemini-cli');
});

await t.test('codex login in a pty: prompt, resize, typed answer, exit code 0', async (t) => {
  const term = terminal(90, 30);
  const done = runLogin('codex', { stdin: term.stdin, stdout: term.stdout, env: env(`${BIN}${delimiter}${NODE_DIR}`) });
  await until('the login prompt', () => term.output().includes('codex login:'));
  t.match(term.output(), /size 90x30/, 'the CLI sees the initial terminal size');

  term.stdout.columns = 120;
  term.stdout.rows = 40;
  term.stdout.emit('resize');
  await until('the resize to reach the CLI', () => term.output().includes('resized 120x40'));

  term.stdin.write('alice\r');
  t.equal(await done, 0);
  t.match(term.output(), /Logged in as alice/);
  t.equal(term.stdin.listenerCount('data'), 0, 'input listener removed after exit');
  t.equal(term.stdout.listenerCount('resize'), 0, 'resize listener removed after exit');
});

await t.test('claude login (auth login) and setup-token both run; a failing login passes its exit code through', async (t) => {
  const ok = terminal(80, 24);
  const first = runLogin('claude', { stdin: ok.stdin, stdout: ok.stdout, env: env(`${BIN}${delimiter}${NODE_DIR}`) });
  await until('the claude prompt', () => ok.output().includes('claude login:'));
  ok.stdin.write('bob\r');
  t.equal(await first, 0);
  t.match(ok.output(), /Logged in as bob/);

  const cancel = terminal(80, 24);
  const second = runLogin('claude', { stdin: cancel.stdin, stdout: cancel.stdout, env: env(`${BIN}${delimiter}${NODE_DIR}`), args: ['setup-token'] });
  await until('the setup-token prompt', () => cancel.output().includes('claude login:'));
  cancel.stdin.write('\r');
  t.equal(await second, 1, 'the CLI exit code, not ours');
  t.match(cancel.output(), /Login cancelled/);
});

await t.test('gemini login is the interactive CLI itself', async (t) => {
  const term = terminal(100, 20);
  const done = runLogin('gemini', { stdin: term.stdin, stdout: term.stdout, env: env(`${BIN}${delimiter}${NODE_DIR}`), cols: 70, rows: 21 });
  await until('the gemini prompt', () => term.output().includes('gemini login:'));
  t.match(term.output(), /size 70x21/, 'explicit cols/rows win over the output size');
  term.stdin.write('carol\r');
  t.equal(await done, 0);
  t.match(term.output(), /Logged in as carol/);
});

await t.test('not installed: clear error naming the npm package, nothing spawned', async (t) => {
  const empty = t.testdir({});
  const term = terminal(80, 24);
  await t.rejects(runLogin('claude', { stdin: term.stdin, stdout: term.stdout, env: env(empty) }), {
    code: 'provider-not-installed',
    message: 'claude is not installed; install it with npm i -g @anthropic-ai/claude-code',
  });
  await t.rejects(runLogin('gemini', { stdin: term.stdin, stdout: term.stdout, env: { PATH: undefined } }), { code: 'provider-not-installed' });
  t.equal(term.stdin.listenerCount('data'), 0);
  t.equal(term.output(), '');
});

await t.test('bad provider name is rejected before anything runs', async (t) => {
  const term = terminal(80, 24);
  await t.rejects(runLogin('openai' as never, { stdin: term.stdin, stdout: term.stdout, env: env(BIN) }), { code: 'invalid-provider', message: /"openai" is not allowed \(one of claude, codex, gemini\)/ });
});

await t.test('a non-executable file on PATH is not a CLI', async (t) => {
  const dir = t.testdir({ codex: '#!/bin/sh\necho hi\n' });
  const term = terminal(80, 24);
  await t.rejects(runLogin('codex', { stdin: term.stdin, stdout: term.stdout, env: env(dir) }), { code: 'provider-not-installed' });
});

await t.test('svc auth: usage, bad provider, status table and json, login through the command', async (t) => {
  const root = t.testdir({ home: {}, svc: { config: {} } });
  const paths = homePaths(join(root, 'svc'));
  const userHome = join(root, 'home');
  const pathDir = join(root, 'path');
  mkdirSync(pathDir);
  symlinkSync(join(BIN, 'codex'), join(pathDir, 'codex'));
  mkdirSync(join(userHome, '.codex'));
  writeFileSync(join(userHome, '.codex', 'auth.json'), JSON.stringify({ tokens: { access_token: 'a', refresh_token: 'r' } }));

  const io = () => {
    const term = terminal(80, 24);
    const err = new PassThrough();
    let errText = '';
    err.on('data', (d: Buffer) => (errText += d.toString()));
    return {
      term,
      errText: () => errText,
      io: { env: { PATH: `${pathDir}${delimiter}${NODE_DIR}`, HOME: userHome }, home: userHome, stdin: term.stdin, stdout: term.stdout, stderr: err },
    };
  };

  const usage = io();
  t.equal(await authCommand([], paths, usage.io), 0);
  t.match(usage.term.output(), /usage: svc auth <claude\|codex\|gemini>/);

  const bad = io();
  await t.rejects(authCommand(['openai'], paths, bad.io), { code: 'usage', message: /unknown provider 'openai'/ });
  await t.rejects(authCommand(['codex', 'extra'], paths, bad.io), { code: 'usage' });

  const status = io();
  t.equal(await authCommand(['status'], paths, status.io), 0);
  const table = status.term.output();
  t.match(table, /PROVIDER/);
  t.match(table, /codex\s+Codex\s+yes\s+yes\s+file:~\/\.codex\/auth\.json/);
  t.match(table, /claude\s+Claude Code\s+no\s+no\s+-/);

  const json = io();
  t.equal(await authCommand(['status', '--json'], paths, json.io), 0);
  const parsed = JSON.parse(json.term.output()) as { id: string; installed: boolean; authenticated: boolean }[];
  t.same(parsed.map((p) => [p.id, p.installed, p.authenticated]), [['claude', false, false], ['codex', true, true], ['gemini', false, false]]);

  const notInstalled = io();
  await t.rejects(authCommand(['gemini'], paths, notInstalled.io), { code: 'provider-not-installed', message: /gemini is not installed; install it with npm i -g @google\/gemini-cli/ });

  const login = io();
  const running = authCommand(['codex'], paths, login.io);
  await until('the codex prompt via svc auth', () => login.term.output().includes('codex login:'));
  login.term.stdin.write('dave\r');
  t.equal(await running, 0);
  t.match(login.term.output(), /Logged in as dave/);
  t.match(login.term.output(), /codex: signed in \(file:~\/\.codex\/auth\.json\)/);

  // A login that exits 0 but leaves no credentials svc can find is a failure, for scripts too.
  rmSync(join(userHome, '.codex', 'auth.json'));
  const empty = io();
  const noCreds = authCommand(['codex'], paths, empty.io);
  await until('the codex prompt again', () => empty.term.output().includes('codex login:'));
  empty.term.stdin.write('erin\r');
  t.equal(await noCreds, 1);
  t.match(empty.errText(), /codex: the login finished, but no credentials were found/);

  for (const args of [['status', '--help'], ['codex', '--help'], ['-h'], ['gemini', '-h', 'x']]) {
    const help = io();
    t.equal(await authCommand(args, paths, help.io), 0, `svc auth ${args.join(' ')}`);
    t.match(help.term.output(), /usage: svc auth/);
  }
});
