// The clients of the internal API, run as real processes against a real server: the agent tool
// scripts (python3, stdlib only) and `svc ask`.
import t from 'tap';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureMainAgentToken, homePaths } from '../../store/index.js';
import { BOB_TOKEN, MAIN_TOKEN, serveInternal } from '../fixtures/internal-api.js';

const TOOLS = fileURLToPath(new URL('../../home-defaults/workspace/tools/', import.meta.url));
const RUNNER = fileURLToPath(new URL('../fixtures/ask-command-runner.ts', import.meta.url));
const tsLoader = import.meta.resolve('@tapjs/typescript/import');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(cmd: string, args: string[], opts: { env?: NodeJS.ProcessEnv; stdin?: string; onStdout?: (all: string) => void } = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env: opts.env ?? {}, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d;
      opts.onStdout?.(stdout);
    });
    child.stderr.on('data', (d: Buffer) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(opts.stdin ?? '');
  });
}

async function until<T>(what: string, check: () => T | undefined | null | false, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = check();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A port nothing listens on: bound, noted, released. */
async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as { port: number }).port;
  await new Promise((r) => srv.close(r));
  return port;
}

t.test('ask_agent.py and ask_agent_async.py', async (t) => {
  const { port, rt, bus } = await serveInternal(t);
  const env = (agent: string, token: string, extra: NodeJS.ProcessEnv = {}) => ({
    PATH: process.env.PATH,
    SVC_INTERAGENT_PORT: String(port),
    SVC_AGENT_NAME: agent,
    SVC_INTERAGENT_TOKEN: token,
    ...extra,
  });
  const ask = (args: string[], e: NodeJS.ProcessEnv, stdin?: string) => run('/usr/bin/python3', [join(TOOLS, 'ask_agent.py'), ...args], { env: e, ...(stdin ? { stdin } : {}) });

  let r = await ask(['bob', 'how', 'are', 'you'], env('main', MAIN_TOKEN));
  t.same(r, { code: 0, stdout: 'bob heard: how are you\n', stderr: '' });
  t.match(rt!.received[0], { agent: 'bob', new_session: false, principal: { role: 'admin', acting_for: null } });

  r = await ask(['--new-session', 'main', '-'], env('bob', BOB_TOKEN, { SVC_CALLER_USER_ID: 'alice' }), 'from stdin\n');
  t.equal(r.code, 0);
  t.match(rt!.received[1], { agent: 'main', new_session: true, principal: { acting_for: 'alice' } });

  r = await ask(['bob', 'x'], env('main', MAIN_TOKEN, { SVC_CALLER_USER_ID: 'vic' }));
  t.equal(r.code, 1);
  t.match(r.stderr, /ask_agent\.py: user "vic" may not use agent "bob".*\(HTTP 403\)/);
  r = await ask(['main', 'x'], env('bob', 'wrong'.repeat(8)));
  t.same([r.code, r.stdout], [1, '']);
  t.match(r.stderr, /wrong interagent_token for "bob" \(HTTP 401\)/);
  r = await ask(['carol', 'please FAIL'], env('main', MAIN_TOKEN));
  t.equal(r.code, 1);
  t.match(r.stderr, /agent carol: turn failed \(exit-code\)\ncarol heard: please FAIL/);
  const sentSoFar = rt!.received.length;

  for (const args of [['--user-id', 'alice', 'bob', 'x'], ['--user-id=alice', 'bob', 'x'], ['bob', '--user-id', 'alice', 'x'], ['--user_id=alice', 'bob', 'x']]) {
    r = await ask(args, env('main', MAIN_TOKEN));
    t.equal(r.code, 2, `${args.join(' ')} exits 2`);
    t.match(r.stderr, /--user-id was removed: the caller identity comes only from SVC_CALLER_USER_ID/);
    const a = await run('/usr/bin/python3', [join(TOOLS, 'ask_agent_async.py'), ...args], { env: env('main', MAIN_TOKEN) });
    t.equal(a.code, 2, `async: ${args.join(' ')} exits 2`);
  }
  r = await ask(['bob'], env('main', MAIN_TOKEN));
  t.equal(r.code, 2, 'no message: usage');
  t.match(r.stderr, /usage: ask_agent\.py/);
  r = await ask(['bob', 'x'], { PATH: process.env.PATH, SVC_INTERAGENT_PORT: String(port) });
  t.equal(r.code, 1);
  t.match(r.stderr, /SVC_AGENT_NAME is not set/);
  t.equal(rt!.received.length, sentSoFar, 'refused invocations sent nothing');

  const down = await closedPort();
  r = await ask(['bob', 'x'], env('main', MAIN_TOKEN, { SVC_INTERAGENT_PORT: String(down) }));
  t.same([r.code, r.stderr], [1, `ask_agent.py: svc is not running (nothing listens on 127.0.0.1:${down})\n`]);

  const a = await run('/usr/bin/python3', [join(TOOLS, 'ask_agent_async.py'), 'dave', 'later'], { env: env('bob', BOB_TOKEN) });
  t.equal(a.code, 0);
  const taskId = a.stdout.trim();
  t.match(taskId, /^ia-id\d+$/);
  const done = await until('the async result', () => bus.log.read({ stream: `interagent:${taskId}`, types: ['interagent.completed'] })[0]);
  t.match(done.data, { from: 'bob', to: 'dave', success: true, text: 'dave heard: later' });
});

t.test('svc ask streams the answer and reports the outcome in its exit code', async (t) => {
  const { port, rt } = await serveInternal(t);
  const paths = homePaths(join(t.testdir(), 'home'));
  fs.mkdirSync(paths.configDir, { recursive: true });
  const writePort = (p: number) => fs.writeFileSync(paths.configFile, JSON.stringify({ interagent_port: p }));
  writePort(port);
  ensureMainAgentToken(paths, () => MAIN_TOKEN);
  const svcAsk = (args: string[], opts: { stdin?: string; onStdout?: (s: string) => void } = {}) =>
    run(process.execPath, [`--import=${tsLoader}`, RUNNER, paths.root, ...args], { env: { ...process.env, TS_NODE_TRANSPILE_ONLY: '1' }, ...opts });

  let r = await svcAsk(['--agent', 'carol', 'hello carol']);
  t.equal(r.code, 0, r.stderr);
  t.equal(r.stdout, 'carol heard: hello carol\n', 'text deltas on stdout');
  t.equal(r.stderr, '[status] thinking\n[tool] Read\n', 'status and tool activity on stderr, one line each');
  t.match(rt!.received[0], { agent: 'carol', chat_id: 0, new_session: false });

  r = await svcAsk(['--new', '--chat', '5', '-'], { stdin: 'from stdin' });
  t.equal(r.code, 0, r.stderr);
  t.equal(r.stdout, 'main heard: from stdin\n');
  t.match(rt!.received[1], { agent: 'main', chat_id: 5, new_session: true });

  r = await svcAsk(['please FAIL']);
  t.equal(r.code, 1);
  t.match(r.stderr, /svc ask: turn failed \(exit-code\)/);

  // Deltas are printed as they arrive, while the turn is still running.
  let sawPartial = false;
  const held = svcAsk(['HOLD on'], { onStdout: (s) => (sawPartial ||= s.includes('waiting... ')) });
  await until('the first delta on stdout', () => sawPartial);
  await until('the held turn', () => rt!.held.length === 1);
  rt!.held[0]!();
  r = await held;
  t.same([r.code, r.stdout], [0, 'waiting... main heard: HOLD on\n']);

  const before = rt!.received.length;
  r = await svcAsk(['--agent', 'nobody', 'x']);
  t.equal(r.code, 1);
  t.match(r.stderr, /no agent named "nobody" \(known: main, bob, carol, dave\) \(HTTP 404\)/);
  r = await svcAsk(['--chat', 'abc', 'x']);
  t.equal(r.code, 2);
  t.match(r.stderr, /--chat abc: expected a whole number/);
  r = await svcAsk([]);
  t.equal(r.code, 2);
  t.match(r.stderr, /no message given/);

  fs.writeFileSync(paths.mainAgentTokenFile, JSON.stringify({ token: 'z'.repeat(40) }));
  r = await svcAsk(['x']);
  t.equal(r.code, 1);
  t.match(r.stderr, /wrong token for the main agent \(HTTP 401\)/);
  fs.rmSync(paths.mainAgentTokenFile);
  r = await svcAsk(['x']);
  t.equal(r.code, 1);
  t.match(r.stderr, /no main agent token/);
  t.equal(rt!.received.length, before, 'refused asks sent nothing');

  ensureMainAgentToken(paths, () => MAIN_TOKEN);
  const down = await closedPort();
  writePort(down);
  r = await svcAsk(['x']);
  t.same([r.code, r.stdout], [1, '']);
  t.equal(r.stderr, `svc ask: svc is not running (nothing listens on 127.0.0.1:${down})\n`);
});
