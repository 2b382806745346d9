// `/tasks` and its `tsc:` callbacks end to end, and the admin API's tasks through the hub: the real
// daemon, a real SQLite log, the internal API and the admin API on real sockets, fake CLIs (a prompt
// with `[[hold]]` runs until killed, `[[fail]]` exits 1), an injected clock for timeouts. Every
// wait is on a fact of the log.
import t from 'tap';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SimulatedClock } from 'xstate';
import { startDaemon, type RunningDaemon } from '../../bin/daemon.js';
import { homePaths } from '../../store/index.js';
import type { AnyEnvelope } from '../../schemas/index.js';
import { tempHome } from '../fixtures/temp-home.js';
import { until } from './cli-helpers.js';

const BIN = fileURLToPath(new URL('../fixtures/bin', import.meta.url));
const API_TOKEN = 'tasks-test-token-0123456789abcdef';

await t.test('/tasks: disabled, the selector, refusals, cancel, cancel_all, delete_finished; admin create and cancel; a waiting task times out; the parent reply kept', async (t) => {
  const scratch = tempHome(t);
  const root = join(scratch.dir, 'home');
  const paths = homePaths(root);
  mkdirSync(paths.configDir, { recursive: true });
  const config = (enabled: boolean) =>
    writeFileSync(paths.configFile, JSON.stringify({ tasks: { enabled, max_parallel: 5, timeout_seconds: 100 }, api: { enabled: true, host: '127.0.0.1', port: 0, token: API_TOKEN } }));
  const clock = new SimulatedClock();
  const boot = () =>
    startDaemon({ paths, logToStderr: false, internalPort: 0, apiPort: 0, killGraceMs: 200, turnClock: clock, env: { PATH: `${BIN}:${process.env.PATH}`, HOME: root } });
  config(false);
  mkdirSync(paths.secretsDir, { recursive: true, mode: 0o700 });
  writeFileSync(paths.agentsRegistry, JSON.stringify([{ name: 'helper', telegram_token: '1:fake', interagent_token: 'h'.repeat(40) }]));
  let d: RunningDaemon = await boot();
  let running = true;
  scratch.beforeRemove(() => (running ? d.stop('test') : undefined));

  const mainToken = () => (JSON.parse(readFileSync(paths.mainAgentTokenFile, 'utf8')) as { token: string }).token;
  const call = async (path: string, body?: unknown) => {
    const r = await fetch(`http://127.0.0.1:${d.internalPort}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { connection: 'close', 'content-type': 'application/json', authorization: `Bearer ${mainToken()}` },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: r.status, body: (await r.json()) as any };
  };
  const admin = async (path: string, body?: unknown) => {
    const r = await fetch(`http://127.0.0.1:${d.apiPort}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { connection: 'close', 'content-type': 'application/json', 'accept-language': 'en', authorization: `Bearer ${API_TOKEN}` },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: r.status, body: (await r.json()) as any };
  };
  // A chat message to the main agent (`svc ask`'s route), answered like any transport's: the outcome.
  const say = async (text: string, chat_id: number) => {
    const r = await fetch(`http://127.0.0.1:${d.internalPort}/ask`, {
      method: 'POST',
      headers: { connection: 'close', 'content-type': 'application/json', authorization: `Bearer ${mainToken()}` },
      body: JSON.stringify({ text, chat_id }),
    });
    const lines = (await r.text()).trim().split('\n').map((l) => JSON.parse(l) as { type: string; text: string; status: string; buttons?: { label: string; data: string }[] });
    return lines.find((l) => l.type === 'result')!;
  };
  const facts = (id: string): AnyEnvelope[] => d.log.read({ stream: `task:${id}` });
  const has = (id: string, type: string) => facts(id).some((e) => e.type === type);
  const spawned = (id: string) => d.log.read({ types: ['turn.spawned'] }).some((e) => d.log.read({ stream: e.stream, types: ['turn.started'] })[0]?.correlation === `task:${id}`);
  const create = async (prompt: string, name: string, chat_id: number) => {
    const r = await call('/tasks/create', { from: 'main', prompt, name, chat_id });
    t.equal(r.status, 200, `created ${name}`);
    return r.body.task_id as string;
  };

  // Disabled: exactly the line SPEC gives, for the command and for a callback alike.
  t.match(await say('/tasks', 42), { text: 'Task system is not enabled.', status: 'completed' });
  t.match(await say('tsc:cancel_all', 42), { text: 'Task system is not enabled.' });
  await d.stop('test');
  running = false;
  config(true);
  d = await boot();
  running = true;

  // Chat 42: A runs until killed, B fails at once. Chat 43: C runs until killed.
  const a = await create('[[hold]] A', 'alpha', 42);
  const b = await create('[[fail]] B', 'beta', 42);
  const c = await create('[[hold]] C', 'gamma', 43);
  await until('B failed', () => has(b, 'task.failed'));
  await until('A and C spawned', () => spawned(a) && spawned(c));

  let r = await say('/tasks', 42);
  t.equal(r.status, 'completed');
  t.match(r.text, new RegExp(`Running \\(1\\)\\n  ${a}  alpha  running  \\d+s`));
  t.match(r.text, /Waiting for answer \(0\)\n  none/);
  t.match(r.text, new RegExp(`Finished \\(1\\)\\n  ${b}  beta  failed  \\d+s`));
  t.notOk(r.text.includes(c), "another chat's task is not listed");
  t.same(r.buttons!.map((x) => x.data), [`tsc:cancel:${a}`, 'tsc:delete_finished', 'tsc:refresh']);

  // Refusals: nothing changes.
  const before = d.log.read({ streamPrefix: 'task:' }).length;
  r = await say(`tsc:cancel:${c}`, 42);
  t.match(r, { status: 'failed', text: new RegExp(`^No task ${c} in this chat; nothing changed\\.`) }, "another chat's task");
  r = await say('tsc:cancel:nope', 42);
  t.match(r, { status: 'failed', text: /^No task nope in this chat; nothing changed\./ }, 'unknown id');
  r = await say(`tsc:cancel:${b}`, 42);
  t.match(r, { status: 'failed', text: new RegExp(`^Task ${b} \\(beta\\) is already failed; nothing changed\\.`) }, 'wrong state');
  for (const hostile of ['tsc:cancel:../../etc/passwd', `tsc:cancel:${'x'.repeat(5000)}`, 'tsc:cancel:a b', 'tsc:explode', `tsc:${'\u0000'.repeat(10)}`]) {
    r = await say(hostile, 42);
    t.equal(r.status, 'failed', `refused: ${JSON.stringify(hostile.slice(0, 30))}`);
    t.ok(r.text.length < 300, 'a short line');
  }
  t.equal(d.log.read({ streamPrefix: 'task:' }).length, before, 'no task fact from any refusal');
  t.notOk(d.log.read({ streamPrefix: 'turn:', types: ['turn.started'] }).some((e) => String((e.data as { prompt?: string }).prompt).includes('tsc:')), 'no callback reached the agent as a turn');

  // Cancel one, then delete the finished ones of this chat only.
  r = await say(`tsc:cancel:${a}`, 42);
  t.match(r, { status: 'completed', text: new RegExp(`^Cancelled task ${a} \\(alpha\\)\\.`) });
  t.ok(has(a, 'task.cancelled'));
  t.match(r.text, new RegExp(`Finished \\(2\\)`));
  r = await say('tsc:delete_finished', 42);
  t.match(r, { status: 'completed', text: /^Deleted 2 finished task\(s\)\./ });
  t.ok(has(a, 'task.deleted') && has(b, 'task.deleted'));
  t.notOk(existsSync(join(paths.workspace, 'tasks', a)), "A's folder is gone");
  t.notOk(has(c, 'task.cancelled'), "chat 43's task untouched");
  r = await say('tsc:cancel_all', 43);
  t.match(r, { text: /^Cancelled 1 of 1 running or waiting task\(s\)\./ });
  t.ok(has(c, 'task.cancelled'));
  r = await say('tsc:refresh', 42);
  t.match(r.text, /Tasks in this chat \(0\)/);
  t.same(r.buttons, [{ label: 'Refresh', data: 'tsc:refresh' }]);

  // The admin API: create and cancel go through the hub, the run's CLI is killed.
  const created = await admin('/api/tasks', { name: 'from the panel', agent: 'main', prompt: '[[hold]] panel job' });
  t.equal(created.status, 201);
  const p = created.body.task_id as string;
  t.match(facts(p)[0], { type: 'task.created', data: { name: 'from the panel', parent_agent: 'main' } });
  await until('the panel task spawned its CLI', () => spawned(p));
  t.match((await admin(`/api/tasks/${p}`)).body, { task_id: p, status: 'running' });
  t.match(await admin(`/api/tasks/${p}/cancel`, {}), { status: 200, body: { task_id: p, status: 'cancelled' } });
  t.ok(has(p, 'task.cancelled'));
  await until('its turn aborted', () => d.log.read({ streamPrefix: 'turn:', types: ['turn.aborted'] }).some((e) => e.correlation === `task:${p}`));
  t.match((await admin(`/api/tasks/${p}`)).body, { status: 'cancelled' });
  t.equal((await admin(`/api/tasks/${p}/cancel`, {})).status, 409, 'cancelled twice: refused');
  t.equal((await admin('/api/tasks/nope/cancel', {})).status, 404);

  // A waiting task's run keeps its deadline: unanswered, it times out like any stuck run.
  const w = await create('[[hold]] W', 'waiter', 44);
  await until('W spawned', () => spawned(w));
  const asking = call('/tasks/ask_parent', { task_id: w, question: 'Which colour?' });
  await until('W waits', () => has(w, 'task.question_asked'));
  clock.increment(101_000);
  await until('W timed out', () => has(w, 'task.failed'));
  t.match(facts(w).find((e) => e.type === 'task.failed')!.data, { reason: 'timeout' });
  t.match((await asking).body, { success: false, status: 'failed' }, 'the question is answered with no answer');

  // A result's parent turn: its reply is kept beside the task_result as a `text` envelope.
  const q = await create('quick job', 'quick', 45);
  await until('Q done', () => has(q, 'task.completed'));
  const reply = await until('the parent reply kept', () =>
    d.log.read({ types: ['chat.messages_merged'] }).find((e) => JSON.stringify(e.data).includes(`task-${q}-1-result-reply`)),
  );
  t.match(JSON.stringify(reply.data), /"kind":"text"/);
  t.match(JSON.stringify(reply.data), /echo: \[Task \\"quick\\"/);

  // Async inter-agent results reach the caller through the same delivery: reply_to's chat, the
  // `interagent` envelope, the caller's reply kept as `text`; silent ones stay in the log only.
  const started = (prefix: string) => d.log.read({ streamPrefix: 'turn:', types: ['turn.started'] }).find((e) => String((e.data as { prompt: string }).prompt).startsWith(prefix));
  const envelopeOf = (id: string) => d.log.read({ types: ['chat.messages_merged'] }).find((e) => JSON.stringify(e.data).includes(`"id":"${id}"`));
  const quiet = await call('/interagent/send_async', { from: 'main', to: 'helper', message: 'keep it quiet', silent: true });
  t.match(quiet, { status: 200, body: { success: true } });
  const silentId = quiet.body.task_id as string;
  await until('the silent result recorded', () => d.log.read({ stream: `interagent:${silentId}`, types: ['interagent.completed'] })[0]);
  const loud = await call('/interagent/send_async', { from: 'main', to: 'helper', message: 'look it up', reply_to: { transport: 'cli', chat_id: 46, topic_id: null } });
  t.match(loud, { status: 200, body: { success: true } });
  const loudId = loud.body.task_id as string;
  t.match(d.log.read({ stream: `interagent:${loudId}` })[0]!.data, { reply_to: { transport: 'cli', chat_id: 46, topic_id: null }, silent: false });
  const told = await until('the caller told in its chat', () => started(`[Reply from agent "helper" to your async request ${loudId}]`));
  t.match(told.data, { agent: 'main', session_key: 'cli:46', kind: 'background' });
  t.match((told.data as { prompt: string }).prompt, /echo: \[Message from agent "main"[\s\S]*look it up/);
  t.match(JSON.stringify((await until('the interagent envelope', () => envelopeOf(`interagent-${loudId}`))).data), /"kind":"interagent"/);
  t.match(JSON.stringify((await until("the caller's reply kept", () => envelopeOf(`interagent-${loudId}-reply`))).data), /"kind":"text"/);
  t.notOk(envelopeOf(`interagent-${silentId}`), 'silent: no envelope');
  t.notOk(started(`[Reply from agent "helper" to your async request ${silentId}]`), 'silent: no turn');
  for (const bad of [
    { reply_to: { chat_id: 'x' } },
    { reply_to: { chat_id: 1, transport: '../evil' } },
    { reply_to: { chat_id: 1, extra: true } },
    { reply_to: { chat_id: 1.5 } },
    { reply_to: 'telegram:1' },
    { silent: 'yes' },
  ]) {
    const r = await call('/interagent/send_async', { from: 'main', to: 'helper', message: 'x', ...bad });
    t.equal(r.status, 400, JSON.stringify(bad));
    t.match(r.body.error, /reply_to|silent/);
  }
  t.equal(d.log.read({ types: ['interagent.requested'] }).length, 2, 'refused requests record nothing');
});
