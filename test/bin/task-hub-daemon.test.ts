// The task hub end to end: the real daemon, a real SQLite log in a temp home, the internal API on a
// real socket and the fake claude held at a gate (FAKE_CLI_GATE_DIR) so runs stay running until
// the test opens it. Every wait is on a fact of the log (or a file the hub writes from them).
import t from 'tap';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SimulatedClock } from 'xstate';
import { startDaemon, type RunningDaemon } from '../../bin/daemon.js';
import { homePaths } from '../../store/index.js';
import type { AnyEnvelope } from '../../schemas/index.js';
import { tempHome } from '../fixtures/temp-home.js';
import { until } from './cli-helpers.js';

const BIN = fileURLToPath(new URL('../fixtures/bin', import.meta.url));

await t.test('tasks: create, ask_parent round trip, queueing, cancel, ownership, delete, timeout, hostile bodies, restart', async (t) => {
  const scratch = tempHome(t);
  const root = join(scratch.dir, 'home');
  const gate = join(scratch.dir, 'gate');
  mkdirSync(gate);
  mkdirSync(join(root, 'config'), { recursive: true });
  writeFileSync(join(root, 'config', 'config.json'), JSON.stringify({ tasks: { max_parallel: 1, timeout_seconds: 100 } }));
  const paths = homePaths(root);
  const clock = new SimulatedClock();
  const boot = () =>
    startDaemon({ paths, logToStderr: false, internalPort: 0, killGraceMs: 200, turnClock: clock, env: { PATH: `${BIN}:${process.env.PATH}`, HOME: root, FAKE_CLI_GATE_DIR: gate } });
  let d: RunningDaemon = await boot();
  let running = true;
  scratch.beforeRemove(() => (running ? d.stop('test') : undefined));

  // The main agent's tools carry its token (SVC_INTERAGENT_TOKEN); '' sends none.
  const mainToken = () => (JSON.parse(readFileSync(paths.mainAgentTokenFile, 'utf8')) as { token: string }).token;
  const call = async (path: string, body?: unknown, token = mainToken()) => {
    const r = await fetch(`http://127.0.0.1:${d.internalPort}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { connection: 'close', 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
    return { status: r.status, body: (await r.json()) as any };
  };
  const facts = (id: string): AnyEnvelope[] => d.log.read({ stream: `task:${id}` });
  const has = (id: string, type: string) => facts(id).some((e) => e.type === type);
  const tasksFile = () => JSON.parse(readFileSync(paths.tasksFile, 'utf8')) as { task_id: string; status: string; session_id: string | null }[];
  const entry = (id: string) => tasksFile().find((x) => x.task_id === id);
  const open = () => writeFileSync(join(gate, 'open'), '');
  const close = () => rmSync(join(gate, 'open'), { force: true });

  // Hostile bodies first: every one is a 4xx and nothing is created.
  const hostile: [string, unknown][] = [
    ['/tasks/create', '{not json'],
    ['/tasks/create', { from: 'main' }],
    ['/tasks/create', { from: '../main', prompt: 'x' }],
    ['/tasks/create', { from: 'main', prompt: 5 }],
    ['/tasks/create', { from: 'main', prompt: 'x'.repeat(300 * 1024) }],
    ['/tasks/create', { from: 'main', prompt: 'x', provider: 'evil' }],
    ['/tasks/resume', { task_id: '../x', prompt: 'p' }],
    ['/tasks/ask_parent', { task_id: 'a/b', question: 'q' }],
    ['/tasks/cancel', { task_id: ['x'] }],
    ['/tasks/delete', { task_id: '..' }],
    ['/tasks/delete', 'null'],
  ];
  for (const [path, body] of hostile) {
    const r = await call(path, body);
    t.equal(r.status, 400, `${path} ${JSON.stringify(body).slice(0, 60)}`);
    t.type(r.body.error, 'string');
  }
  t.equal((await call('/tasks/create', { from: 'main', prompt: 'x'.repeat(2 * 1024 * 1024) })).status, 413, 'oversized body');
  for (const [path, body] of [['/tasks/create', { from: 'main', prompt: 'x' }], ['/tasks/list', undefined], ['/tasks/cancel', { task_id: 'nope' }]] as const) {
    t.equal((await call(path, body, '')).status, 401, `${path} without the agent's token`);
    t.equal((await call(path, body, 'z'.repeat(43))).status, 401, `${path} with a token that is no agent's`);
  }
  t.same((await call('/tasks/list')).body, [], 'nothing was created');
  t.equal((await call('/tasks/cancel', { task_id: 'nope' })).status, 404, 'unknown task');

  // A: created, running at the gate; B queued behind it (max_parallel 1 in the same chat).
  const a = (await call('/tasks/create', { from: 'main', prompt: 'Research X', name: 'research' })).body.task_id as string;
  const b = (await call('/tasks/create', { from: 'main', prompt: 'Second job' })).body.task_id as string;
  t.ok(a && b && a !== b);
  const folder = join(paths.workspace, 'tasks', a);
  for (const f of ['TASKMEMORY.md', 'CLAUDE.md', 'AGENTS.md', 'GEMINI.md']) t.ok(existsSync(join(folder, f)), `${f} seeded`);
  t.match(entry(a), { status: 'running', name: 'research', parent_agent: 'main' });

  // Ownership.
  t.equal((await call('/tasks/cancel', { task_id: a, from: 'bob' })).status, 401, "main's token does not speak for bob");
  t.equal((await call('/tasks/delete', { task_id: a, from: 'bob' })).status, 401);
  t.equal((await call('/tasks/delete', { task_id: a })).status, 409, 'a running task is not deleted');
  t.equal((await call('/tasks/list?from=bob')).status, 401);
  t.equal((await call('/tasks/list?from=main')).body.length, 2);

  // ask_parent: blocks until the parent answers through /tasks/resume.
  await until('A spawned its CLI', () => d.log.read({ streamPrefix: 'turn:', types: ['turn.started'] }).some((e) => e.correlation === `task:${a}`));
  const asking = call('/tasks/ask_parent', { task_id: a, question: 'Which year?' });
  await until('A waits', () => has(a, 'task.question_asked'));
  t.equal(entry(a)!.status, 'waiting');
  t.equal((await call('/tasks/resume', { task_id: a, prompt: '2025', from: 'main' })).status, 200);
  t.same((await asking).body, { success: true, answer: '2025', status: 'running' });
  t.ok(has(a, 'task.answered'));
  const question = await until('the question reached the admin chat', () =>
    d.log.read({ types: ['chat.messages_merged'] }).find((e) => JSON.stringify(e.data).includes('"kind":"task_question"')),
  );
  t.match(JSON.stringify(question.data), /Which year\?/);

  // B never started while A ran: its turn begins after A's result.
  t.notOk(d.log.read({ streamPrefix: 'turn:', types: ['turn.started'] }).some((e) => e.correlation === `task:${b}`), 'B is queued');
  // Cancel B while queued; then A finishes once the gate opens.
  t.match((await call('/tasks/cancel', { task_id: b, from: 'main' })).body, { success: true, status: 'cancelled' });
  open();
  await until('A done', () => has(a, 'task.completed'));
  // tasks.json is the projection's copy, written in the loop turn after the fact: wait for it there too.
  await until('A done in tasks.json', () => entry(a)?.status === 'done');
  t.match(entry(a), { status: 'done', session_id: 'fake-claude-session', provider: 'claude' });
  await until('the result reached the parent session', () =>
    d.log.read({ streamPrefix: 'turn:', types: ['turn.started'] }).some((e) => (e.data as { prompt?: string }).prompt?.startsWith(`[Task "research" (${a}) finished]`)),
  );
  await until('the result reached the admin chat', () => d.log.read({ types: ['chat.messages_merged'] }).some((e) => JSON.stringify(e.data).includes('"kind":"task_result"')));
  t.notOk(d.log.read({ streamPrefix: 'turn:', types: ['turn.started'] }).some((e) => e.correlation === `task:${b}`), 'a cancelled queued task never ran');

  // Delete: only finished; entry and folder go.
  t.match((await call('/tasks/delete', { task_id: b, from: 'main' })).body, { success: true, deleted: true });
  t.notOk(entry(b));
  t.notOk(existsSync(join(paths.workspace, 'tasks', b)));

  // Timeout: a run held at the gate past tasks.timeout_seconds fails as timeout.
  close();
  const c = (await call('/tasks/create', { from: 'main', prompt: 'Slow' })).body.task_id as string;
  await until('C at the gate', () => d.log.read({ types: ['turn.spawned'] }).some((e) => d.log.read({ stream: e.stream, types: ['turn.started'] })[0]?.correlation === `task:${c}`));
  clock.increment(101_000);
  await until('C timed out', () => facts(c).find((e) => e.type === 'task.failed'));
  await until('C failed in tasks.json', () => entry(c)?.status === 'failed');
  t.match(entry(c), { status: 'failed' });
  t.equal((facts(c).find((e) => e.type === 'task.failed')!.data as { reason: string }).reason, 'timeout');

  // Restart with a running task (D) and a waiting one (A resumed, then asking).
  t.equal((await call('/tasks/resume', { task_id: a, prompt: 'Add a summary' })).status, 200);
  await until('A runs again', () => d.log.read({ types: ['turn.spawned'] }).some((e) => d.log.read({ stream: e.stream, types: ['turn.started'] })[0]?.correlation === `task:${a}` && d.log.read({ stream: e.stream, types: ['turn.completed'] }).length === 0 && e.seq > facts(a).find((x) => x.type === 'task.resumed')!.seq));
  const orphanedAsk = call('/tasks/ask_parent', { task_id: a, question: 'Proceed?' });
  await until('A waits again', () => facts(a).filter((e) => e.type === 'task.question_asked').length === 2);
  const dd = (await call('/tasks/create', { from: 'main', prompt: 'Left running' })).body.task_id as string;
  mkdirSync(join(paths.workspace, 'tasks', 'orphan1'));
  await d.stop('test');
  running = false;
  // The internal API closed under the asking call: it ends without an answer.
  await orphanedAsk.catch(() => undefined);

  d = await boot();
  running = true;
  await until('D failed as stale', () => facts(dd).find((e) => e.type === 'task.failed'));
  t.equal((facts(dd).find((e) => e.type === 'task.failed')!.data as { reason: string }).reason, 'stale');
  t.equal(entry(a)!.status, 'waiting', 'a waiting task stays waiting');
  t.notOk(existsSync(join(paths.workspace, 'tasks', 'orphan1')), 'orphan folder removed');
  open();
  t.match((await call('/tasks/resume', { task_id: a, prompt: 'yes', from: 'main' })).body, { success: true, status: 'running' });
  await until('A answered by a new run', () => facts(a).filter((e) => e.type === 'task.completed').length === 2);
  await until('A done again in tasks.json', () => entry(a)?.status === 'done');
  t.match(entry(a), { status: 'done' });

  // Orphan cleanup every 5 h on the injected clock.
  mkdirSync(join(paths.workspace, 'tasks', 'orphan2'));
  clock.increment(5 * 60 * 60 * 1000);
  t.notOk(existsSync(join(paths.workspace, 'tasks', 'orphan2')), 'removed by the 5-hourly cleanup');
});
