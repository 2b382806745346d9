// Issue 24's "done when" against a real daemon: `svc events replay --check` re-drives every machine
// from a log the daemon recorded under the conformance traffic — three tasks in one chat past
// `tasks.max_parallel: 1`, two cron jobs sharing a `dependency` run now while the first still runs,
// a workflow whose step fails once and is retried, a SIGKILL while a task and a cron run hold their
// CLIs, and a SIGTERM while a task's turn runs — and finds no difference; one altered fact in a copy
// of that log is named exactly. A cancelled task's turn and the stop's abort are journaled inputs:
// without them replay read the killed CLI as a failure where the log holds `turn.aborted`.
// The daemon is a child process on a temp home with the fake CLIs, driven through its public APIs
// (the internal API with the main agent's token, the admin API with its static token); every wait is
// on a fact of the log.
import t from 'tap';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AnyEnvelope } from '../../schemas/index.js';
import { homePaths, readMainAgentToken } from '../../store/index.js';
import { copyLog, exited, freePortHome, readEvents, startSvc, svc, until } from './cli-helpers.js';

const BIN = fileURLToPath(new URL('../fixtures/bin', import.meta.url));
const ADMIN_TOKEN = 'conformance-admin-token-0123456789abcdef';
const LONG = 60_000;

/** The flaky step fails its first attempt (the fake CLI's `[[fail-once:…]]`) and its retry answers. */
const FLAKY = `name: Flaky
steps:
  - id: draft
    type: ask_agent
    agent: main
    prompt: "[[fail-once:draft]] draft the notes"
    on_error: retry
    retry: { max_attempts: 2, delay_seconds: 1 }
  - { id: tell, type: notify, message: "drafted $steps.draft.output" }
`;

type Call = (path: string, body?: unknown) => Promise<{ status: number; body: any }>;

function caller(port: number, token: string): Call {
  return async (path, body) => {
    const r = await fetch(`http://127.0.0.1:${port}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, connection: 'close', 'content-type': 'application/json', 'accept-language': 'en' },
      body: JSON.stringify(body ?? {}),
    });
    const text = await r.text();
    return { status: r.status, body: text ? JSON.parse(text) : null };
  };
}

await t.test('a daemon’s log under queued tasks, a cron dependency queue, a workflow retry and a kill -9 re-drives with no difference', async (t) => {
  const scratch = t.testdir();
  const home = freePortHome(join(scratch, 'home'), { tasks: { max_parallel: 1 }, api: { enabled: true, host: '127.0.0.1', port: 0, token: ADMIN_TOKEN } });
  const once = join(scratch, 'once');
  mkdirSync(once);
  const paths = homePaths(home);
  mkdirSync(paths.workflowsDir, { recursive: true });
  writeFileSync(join(paths.workflowsDir, 'flaky.yaml'), FLAKY);
  const db = join(home, 'events.db');
  const env = { PATH: `${BIN}:${process.env.PATH}`, FAKE_CLI_ONCE_DIR: once };
  const facts = (pred: (e: AnyEnvelope) => boolean) => readEvents(db).filter(pred);
  const has = (stream: string, type: string) => facts((e) => e.stream === stream && e.type === type).length > 0;
  const ready = (n: number, daemon: ReturnType<typeof startSvc>) =>
    until(() => `daemon.ready #${n}: ${daemon.output()}`, () => facts((e) => e.type === 'daemon.ready')[n - 1], LONG);
  const port = (ready: AnyEnvelope, surface: string) => (ready.data.listeners as { surface: string; port: number }[]).find((l) => l.surface === surface)!.port;

  // First life.
  const first = startSvc(home, ['start'], env);
  t.teardown(() => void first.kill('SIGKILL'));
  const up = await ready(1, first);
  const internal = caller(port(up, 'internal API'), readMainAgentToken(paths)!);
  const admin = caller(port(up, 'direct API'), ADMIN_TOKEN);

  // 1. Three tasks in one chat with max_parallel 1: the first holds its CLI, the others queue until
  // it is cancelled, then run one at a time.
  const create = async (prompt: string) => {
    const r = await internal('/tasks/create', { from: 'main', prompt, name: prompt.replace('[[hold]] ', '') });
    t.equal(r.status, 200, JSON.stringify(r.body));
    return r.body.task_id as string;
  };
  const tasks: string[] = [];
  for (const prompt of ['[[hold]] the long task', 'the second task', 'the third task']) tasks.push(await create(prompt));
  const runFacts = (type: string) => facts((e) => e.stream === 'task-runs' && e.type === type);
  const turnOf = (id: string) => facts((e) => e.type === 'turn.started' && e.correlation === `task:${id}`).length > 0;
  await until('the held task runs its CLI', () => turnOf(tasks[0]!), LONG);
  await until('two tasks queue behind it', () => runFacts('task_run.queued').length === 3, LONG);
  t.equal(runFacts('task_run.started').length, 1, 'one place in the chat');
  t.match((await internal('/tasks/cancel', { task_id: tasks[0] })).body, { success: true });
  const ended = (id: string) => facts((e) => e.stream === `task:${id}` && /^task\.(completed|failed|cancelled)$/.test(e.type))[0];
  for (const id of tasks.slice(1)) t.match(await until(`task ${id} to run after the cancel`, () => ended(id), LONG), { type: 'task.completed' });
  t.same(runFacts('task_run.started').map((e) => e.data.task_id), tasks, 'the queue ran them in order');
  // Running and waiting when the daemon is killed below.
  const cut = await create('[[hold]] the cut task');
  const stale = await create('the stale task');
  await until('the cut task runs its CLI', () => turnOf(cut), LONG);
  await until('the stale task queues behind it', () => runFacts('task_run.queued').length === 5, LONG);

  // 2. Two cron jobs sharing a dependency, both run now: the second waits behind the first.
  for (const [id, description] of [
    ['first', '[[hold]] hold the nightly queue'],
    ['report', 'write the nightly report'],
  ] as const) {
    const r = await admin('/api/cron', { id, title: `Job ${id}`, schedule: '0 0 1 1 *', agent: 'main', description, dependency: 'nightly', enabled: true });
    t.equal(r.status, 201, JSON.stringify(r.body));
  }
  t.equal((await admin('/api/cron/first/run')).status, 202);
  const oneshot = (type: string, source: string) => facts((e) => e.stream.startsWith('oneshot:') && e.type === type && (e.type !== 'oneshot.queued' || e.data.source === source));
  await until('the first job runs its CLI', () => facts((e) => e.type === 'turn.started' && JSON.stringify(e.data).includes('hold the nightly queue')).length > 0 || oneshot('oneshot.started', 'cron:first').length > 0, LONG);
  t.equal((await admin('/api/cron/report/run')).status, 202);
  await until('the report queues behind it', () => oneshot('oneshot.queued', 'cron:report').length > 0, LONG);

  // 3. A workflow whose step fails once and is retried.
  const started = await admin('/api/workflows/flaky/run', {});
  t.equal(started.status, 202, JSON.stringify(started.body));
  const run = `run:${started.body.run_id as string}`;
  await until('the workflow retries and completes', () => has(run, 'workflow.run_completed'), LONG);
  t.ok(has(run, 'workflow.step_retry_scheduled'), 'the failed attempt was retried after its delay');

  // 4. A kill -9 while the held task and the held cron run are running.
  t.notOk(has('cron:report', 'cron.run_finished'), 'the report still waits behind the held job');
  first.kill('SIGKILL');
  await exited(first);
  const second = startSvc(home, ['start'], env);
  t.teardown(() => void second.kill('SIGKILL'));
  await ready(2, second);
  const finished = (id: string) => facts((e) => e.stream === `cron:${id}` && e.type === 'cron.run_finished')[0];
  t.match(await until('the waiting report runs', () => finished('report'), LONG), { data: { status: 'success' } });
  t.match(await until('the cut cron run is recorded', () => finished('first'), LONG), { data: { status: 'error:interrupted' } });
  for (const id of [cut, stale]) t.match(await until(`task ${id} to be recovered`, () => ended(id), LONG), { type: 'task.failed', data: { reason: 'stale' } });
  // A stop with a turn still running: its abort (cause `shutdown`) is an input the turn's journal holds.
  const again = caller(port(facts((e) => e.type === 'daemon.ready')[1]!, 'internal API'), readMainAgentToken(paths)!);
  const r = await again('/tasks/create', { from: 'main', prompt: '[[hold]] the task at shutdown', name: 'at shutdown' });
  t.equal(r.status, 200, JSON.stringify(r.body));
  await until('the last task runs its CLI', () => turnOf(r.body.task_id as string), LONG);
  second.kill('SIGTERM');
  t.equal(await exited(second), 0, second.output());
  const lastTurn = facts((e) => e.type === 'turn.started' && e.correlation === `task:${r.body.task_id}`)[0]!.stream;
  t.ok(has(lastTurn, 'turn.aborted'), 'the stop aborted its turn');

  const honest = svc(home, ['events', 'replay', '--check']);
  t.equal(honest.code, 0, honest.stdout + honest.stderr);
  t.match(honest.stdout, /ok: \d+ machines re-driven over [1-9]\d* streams emit exactly the facts the log holds/);

  // One altered fact in a copy of the log is named exactly.
  const events = readEvents(db);
  const secondStart = events.find((e) => e.stream === 'task-runs' && e.type === 'task_run.started' && e.data.task_id === tasks[1])!;
  const retry = events.find((e) => e.stream === run && e.type === 'workflow.step_retry_scheduled')!;
  // Where the diff meets the run next: its following fact, renumbered one lower once the retry is gone
  // (other streams' facts may come between the two).
  const afterRetry = events.find((e) => e.stream === run && e.seq > retry.seq)!;
  const cases: [string, (es: AnyEnvelope[]) => AnyEnvelope[], RegExp][] = [
    [
      'a queued task started out of its turn',
      (es) => es.map((e) => (e.seq === secondStart.seq ? { ...e, data: { ...e.data, task_id: tasks[2]! } } : e)),
      new RegExp(`task-runs on task-runs: seq ${secondStart.seq}: the log has task_run\\.started \\{"run":1,"task_id":"${tasks[2]}"\\}, the machine emitted task_run\\.started \\{"run":1,"task_id":"${tasks[1]}"\\}`),
    ],
    [
      'a retry the run never scheduled',
      (es) => es.filter((e) => e.seq !== retry.seq).map((e, i) => ({ ...e, seq: i + 1 })),
      new RegExp(`workflow-run on ${run}: seq ${afterRetry.seq - 1}: the log has workflow\\.step_started [^\\n]*, the machine emitted workflow\\.step_retry_scheduled`),
    ],
  ];
  for (const [what, alter, expected] of cases) {
    const altered = join(scratch, `altered-${cases.findIndex((c) => c[0] === what)}`);
    copyLog(alter(events), join(altered, 'events.db'));
    const a = svc(altered, ['events', 'replay', '--check']);
    t.equal(a.code, 1, `${what}: exit 1: ${a.stdout}${a.stderr}`);
    t.match(a.stdout, /divergence: re-driven from their recorded inputs, machines emit other facts than the log holds/, what);
    t.match(a.stdout, expected, `${what}: the diff names the fact`);
  }
});
