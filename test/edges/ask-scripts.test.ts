// The clients of the internal API, run as real processes against a real server: the agent tool
// scripts (python3, stdlib only) and `svc ask`.
import t, { type Test } from 'tap';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureMainAgentToken, homePaths } from '../../store/index.js';
import { BOB_TOKEN, MAIN_TOKEN, serveInternal } from '../fixtures/internal-api.js';
import { until } from '../fixtures/until.js';

const TOOLS = fileURLToPath(new URL('../../home-defaults/workspace/tools/', import.meta.url));
const RUNNER = fileURLToPath(new URL('../fixtures/ask-command-runner.ts', import.meta.url));
const tsLoader = import.meta.resolve('@tapjs/typescript/import');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(cmd: string, args: string[], opts: { env?: NodeJS.ProcessEnv; stdin?: string; onStdout?: (all: string) => void } = {}): Promise<Run> {
  return runIn(undefined, cmd, args, opts);
}

function runIn(cwd: string | undefined, cmd: string, args: string[], opts: { env?: NodeJS.ProcessEnv; stdin?: string; onStdout?: (all: string) => void } = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env: opts.env ?? {}, stdio: ['pipe', 'pipe', 'pipe'], ...(cwd ? { cwd } : {}) });
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

/** A port nothing listens on: bound, noted, released. */
async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as { port: number }).port;
  await new Promise((r) => srv.close(r));
  return port;
}

await t.test('ask_agent.py and ask_agent_async.py', async (t) => {
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

  r = await ask(['bob', 'x'], env('main', MAIN_TOKEN, { SVC_CALLER_USER_ID: 'mallory' }));
  t.equal(r.code, 1);
  t.match(r.stderr, /ask_agent\.py: .*"mallory".*no user record.*\(HTTP 403\)/);
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
  const requested = (id: string) => bus.log.read({ stream: `interagent:${id}`, types: ['interagent.requested'] })[0]!.data;
  t.match(requested(taskId), { reply_to: null, silent: false }, 'no chat in the environment: svc picks the chat');

  // The result goes back to this chat (from svc's environment), to the chat --reply-to names, or nowhere (--silent).
  const asyncRun = (args: string[], extra: NodeJS.ProcessEnv = {}) => run('/usr/bin/python3', [join(TOOLS, 'ask_agent_async.py'), ...args], { env: env('bob', BOB_TOKEN, extra) });
  let b = await asyncRun(['dave', 'here'], { SVC_TRANSPORT: 'telegram', SVC_CHAT_ID: '77', SVC_TOPIC_ID: '5' });
  t.equal(b.code, 0, b.stderr);
  t.match(requested(b.stdout.trim()), { reply_to: { transport: 'telegram', chat_id: 77, topic_id: 5 }, silent: false });
  b = await asyncRun(['--reply-to', 'matrix:-1001:9', 'dave', 'there'], { SVC_TRANSPORT: 'telegram', SVC_CHAT_ID: '77' });
  t.equal(b.code, 0, b.stderr);
  t.match(requested(b.stdout.trim()), { reply_to: { transport: 'matrix', chat_id: -1001, topic_id: 9 } });
  b = await asyncRun(['--reply-to=12', '--new-session', 'dave', 'x']);
  t.match(requested(b.stdout.trim()), { reply_to: { transport: null, chat_id: 12, topic_id: null } });
  b = await asyncRun(['--silent', 'dave', 'quiet'], { SVC_CHAT_ID: '77' });
  t.equal(b.code, 0, b.stderr);
  t.match(requested(b.stdout.trim()), { reply_to: null, silent: true });
  const before = bus.log.read({ types: ['interagent.requested'] }).length;
  for (const bad of [['--reply-to', 'x', 'dave', 'm'], ['--reply-to', 'Tele:1', 'dave', 'm'], ['--reply-to', 'a:1:2:3', 'dave', 'm'], ['--reply-to', '1.5', 'dave', 'm'], ['--silent', '--reply-to', '1', 'dave', 'm'], ['--reply-to'], ['--loud', 'dave', 'm'], ['dave']]) {
    b = await asyncRun(bad);
    t.equal(b.code, 2, `usage error: ${bad.join(' ')}`);
  }
  t.equal(bus.log.read({ types: ['interagent.requested'] }).length, before, 'usage errors send nothing');
});

await t.test('svc ask streams the answer and reports the outcome in its exit code', async (t) => {
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

/** A loopback server that records each request and answers from `reply`: the internal API's side of the task tools' contract (WIRE.md §3). */
async function recordingServer(t: Test, reply: (method: string, url: string, body: unknown) => [number, unknown]) {
  const seen: { method: string; url: string; body: unknown; headers: Record<string, unknown> }[] = [];
  const server = createHttpServer((req, res) => {
    let raw = '';
    req.on('data', (d: Buffer) => (raw += d));
    req.on('end', () => {
      const body: unknown = raw ? JSON.parse(raw) : null;
      seen.push({ method: req.method!, url: req.url!, body, headers: req.headers });
      const [status, answer] = reply(req.method!, req.url!, body);
      res.writeHead(status, { 'content-type': 'application/json', connection: 'close' }).end(JSON.stringify(answer));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  return { port: (server.address() as { port: number }).port, seen };
}

await t.test('task tools: create, resume, ask_parent, list, cancel, delete send what WIRE.md §3 names and print the answer', async (t) => {
  const srv = await recordingServer(t, (_method, url, body) => {
    const b = body as Record<string, unknown> | null;
    if (url === '/tasks/create') return [200, { success: true, task_id: 't-42' }];
    if (url === '/tasks/ask_parent') return [200, { success: true, answer: `yes to ${String(b!.question).trim()}` }];
    if (url.startsWith('/tasks/list')) return [200, [{ task_id: 't-1', status: 'running', name: 'crawl' }, { task_id: 't-2', status: 'done', name: null }]];
    if (url === '/tasks/delete' && b!.task_id === 't-busy') return [400, { success: false, error: 'only finished tasks can be deleted' }];
    return [200, { success: true, task_id: b?.task_id }];
  });
  const env = (extra: NodeJS.ProcessEnv = {}) => ({ PATH: process.env.PATH, SVC_INTERAGENT_PORT: String(srv.port), SVC_AGENT_NAME: 'main', SVC_INTERAGENT_TOKEN: MAIN_TOKEN, ...extra });
  const tool = (name: string, args: string[], e: NodeJS.ProcessEnv = env(), stdin?: string, cwd?: string) =>
    runIn(cwd, '/usr/bin/python3', [join(TOOLS, `${name}.py`), ...args], { env: e, ...(stdin ? { stdin } : {}) });

  let r = await tool('create_task', ['--name', 'crawl', '--provider=codex', '--model', 'o3', 'fetch', 'the', 'site'], env({ SVC_CHAT_ID: '5', SVC_TOPIC_ID: '7' }));
  t.same(r, { code: 0, stdout: 't-42\n', stderr: '' });
  t.same(srv.seen.at(-1)!.body, { from: 'main', prompt: 'fetch the site', name: 'crawl', provider: 'codex', model: 'o3', chat_id: 5, topic_id: 7 });
  t.equal(srv.seen.at(-1)!.headers.authorization, `Bearer ${MAIN_TOKEN}`);
  r = await tool('create_task', ['-'], env({ SVC_CHAT_ID: 'abc', SVC_TOPIC_ID: '-3' }), 'a long\nprompt\n');
  t.equal(r.code, 0);
  t.same(srv.seen.at(-1)!.body, { from: 'main', prompt: 'a long\nprompt\n' }, 'stdin prompt; chat and topic that are not positive integers are left out');

  r = await tool('resume_task', ['t-42', 'go', 'on']);
  t.same([r.code, r.stdout], [0, 't-42\n']);
  t.same(srv.seen.at(-1)!.body, { task_id: 't-42', prompt: 'go on', from: 'main' });

  r = await tool('ask_parent', ['which', 'branch?'], env({ SVC_TASK_ID: 't-42' }));
  t.same([r.code, r.stdout], [0, 'yes to which branch?\n']);
  t.same(srv.seen.at(-1)!.body, { task_id: 't-42', question: 'which branch?' });
  r = await tool('ask_parent', ['--task', 't-9', 'ok?']);
  t.same(srv.seen.at(-1)!.body, { task_id: 't-9', question: 'ok?' }, '--task names the task');
  const folder = join(t.testdir({ workspace: { tasks: { 't-77': {} } } }), 'workspace', 'tasks', 't-77');
  r = await tool('ask_parent', ['from', 'my', 'folder'], env(), undefined, folder);
  t.equal(r.code, 0);
  t.same(srv.seen.at(-1)!.body, { task_id: 't-77', question: 'from my folder' }, "a task's own folder names it");

  r = await tool('list_tasks', []);
  t.same([r.code, r.stdout], [0, 't-1\trunning\tcrawl\nt-2\tdone\t\n']);
  t.same([srv.seen.at(-1)!.method, srv.seen.at(-1)!.url], ['GET', '/tasks/list?from=main']);
  r = await tool('list_tasks', ['--all', '--json']);
  t.equal(srv.seen.at(-1)!.url, '/tasks/list', '--all: no owner filter');
  t.same(JSON.parse(r.stdout), [{ task_id: 't-1', status: 'running', name: 'crawl' }, { task_id: 't-2', status: 'done', name: null }]);

  r = await tool('cancel_task', ['t-1']);
  t.same([r.code, r.stdout], [0, 'cancelled t-1\n']);
  t.same(srv.seen.at(-1)!.body, { task_id: 't-1', from: 'main' });
  r = await tool('delete_task', ['t-2']);
  t.same([r.code, r.stdout], [0, 'deleted t-2\n']);
  r = await tool('delete_task', ['t-busy']);
  t.same([r.code, r.stdout, r.stderr], [1, '', 'delete_task.py: only finished tasks can be deleted (HTTP 400)\n'], "svc's refusal, said plainly");

  const sent = srv.seen.length;
  const usage: [string, string[], RegExp, NodeJS.ProcessEnv?][] = [
    ['create_task', [], /usage: create_task\.py/],
    ['create_task', ['--name'], /--name needs a value/],
    ['create_task', ['--name', ' ', 'x'], /--name must not be empty/],
    ['create_task', ['--bogus', 'x'], /unknown option --bogus/],
    ['create_task', ['--user-id=alice', 'x'], /--user-id was removed/],
    ['create_task', ['  '], /the prompt is empty/],
    ['resume_task', ['t-1'], /usage: resume_task\.py/],
    ['ask_parent', ['why?'], /no task: run this inside a task/],
    ['ask_parent', [], /usage: ask_parent\.py/, env({ SVC_TASK_ID: 't-1' })],
    ['list_tasks', ['extra'], /usage: list_tasks\.py/],
    ['cancel_task', [], /usage: cancel_task\.py/],
    ['delete_task', ['a', 'b'], /usage: delete_task\.py/],
  ];
  for (const [name, args, why, e] of usage) {
    r = await tool(name, args, e);
    t.equal(r.code, 2, `${name} ${args.join(' ')}: exit 2`);
    t.match(r.stderr, why);
  }
  t.equal(srv.seen.length, sent, 'usage errors send nothing');
  r = await tool('create_task', ['--help']);
  t.same([r.code, r.stderr], [0, '']);
  t.match(r.stdout, /^Start a background task/);
});

await t.test('task tools against the internal API with no task hub: the refusal reaches the agent', async (t) => {
  const { port } = await serveInternal(t);
  const e = { PATH: process.env.PATH, SVC_INTERAGENT_PORT: String(port), SVC_AGENT_NAME: 'main', SVC_INTERAGENT_TOKEN: MAIN_TOKEN };
  const r = await run('/usr/bin/python3', [join(TOOLS, 'create_task.py'), 'x'], { env: e });
  t.equal(r.code, 1);
  t.match(r.stderr, /^create_task\.py: .*\(HTTP 503\)\n$/);
  const down = await closedPort();
  const d = await run('/usr/bin/python3', [join(TOOLS, 'list_tasks.py')], { env: { ...e, SVC_INTERAGENT_PORT: String(down) } });
  t.same([d.code, d.stderr], [1, `list_tasks.py: svc is not running (nothing listens on 127.0.0.1:${down})\n`]);
});
