// The admin API's task delete and answer and its workflow routes against the real daemon: a temp
// home, the fake CLIs (a `[[hold]]` prompt keeps a task running until it is cancelled), the admin
// API and the internal API on real sockets, users logged in for real. A task is made to wait the
// way a task's CLI does it: its parent's token asks through `/tasks/ask_parent`.
import t from 'tap';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startDaemon } from '../../bin/daemon.js';
import { homePaths, readMainAgentToken } from '../../store/index.js';
import { parseUsers, userRow } from '../fixtures/admin-auth-stand.js';
import { tempHome } from '../fixtures/temp-home.js';
import { until } from './cli-helpers.js';

const BIN = fileURLToPath(new URL('../fixtures/bin', import.meta.url));
const TOKEN = 'admin-static-token-0123456789abcdef';

await t.test('tasks delete/answer and workflows list/run/status/cancel: roles, agent scope, bad input, out-of-order', async (t) => {
  const scratch = tempHome(t);
  const root = join(scratch.dir, 'home');
  const paths = homePaths(root);
  mkdirSync(paths.configDir, { recursive: true });
  mkdirSync(paths.secretsDir, { recursive: true, mode: 0o700 });
  mkdirSync(paths.workflowsDir, { recursive: true });
  writeFileSync(paths.configFile, JSON.stringify({ api: { enabled: true, host: '127.0.0.1', port: 0, token: TOKEN, trusted_proxies: ['127.0.0.1'] }, tasks: { max_parallel: 2 } }));
  writeFileSync(paths.agentsRegistry, JSON.stringify([{ name: 'coder', telegram_token: '1:x' }, { name: 'writer', telegram_token: '2:x' }]));
  writeFileSync(join(paths.workflowsDir, 'hello.yaml'), 'name: Hello\nvariables: { who: "world" }\nsteps:\n  - { id: ask, type: ask_agent, agent: main, prompt: "greet $who" }\n  - { id: tell, type: notify, message: "said $steps.ask.output" }\n');
  writeFileSync(join(paths.workflowsDir, 'waiter.yaml'), 'name: Waiter\nsteps:\n  - { id: q, type: wait_for_reply, message: "Go on?" }\n');
  writeFileSync(join(paths.workflowsDir, 'coderflow.yaml'), 'name: Coder flow\nsteps:\n  - { id: q, type: wait_for_reply, message: "Ready?" }\n  - { id: ask, type: ask_agent, agent: coder, prompt: "go" }\n');
  writeFileSync(join(paths.workflowsDir, 'broken.yaml'), 'name: Broken\nsteps: [ {id: x, type: nonsense} ]\n');
  const rows = [await userRow('vera', 'viewer', 'password-123'), await userRow('otto', 'operator', 'password-123'), await userRow('wanda', 'admin', 'password-123', { allowed_agents: ['writer'] })];
  writeFileSync(paths.usersFile, JSON.stringify({ users: parseUsers(rows) }));

  const d = await startDaemon({ paths, logToStderr: false, internalPort: 0, apiPort: 0, killGraceMs: 200, env: { PATH: `${BIN}:${process.env.PATH}`, HOME: root } });
  scratch.beforeRemove(() => d.stop('test'));
  let client = 0;
  const call = async (method: string, path: string, body?: unknown, token = TOKEN) => {
    const r = await fetch(`http://127.0.0.1:${d.apiPort}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, connection: 'close', 'content-type': 'application/json', 'accept-language': 'en', 'x-forwarded-for': `192.0.2.${++client}` },
      ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
    return { status: r.status, body: (await r.json()) as any };
  };
  const login = async (username: string) => {
    const r = await call('POST', '/api/auth/login', { username, password: 'password-123' }, '');
    t.equal(r.status, 200, `${username} logs in`);
    return r.body.access_token as string;
  };
  const viewer = await login('vera');
  const operator = await login('otto');
  const restricted = await login('wanda');
  const internal = (path: string, body: unknown) =>
    fetch(`http://127.0.0.1:${d.internalPort}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${readMainAgentToken(paths)}`, 'content-type': 'application/json', connection: 'close' },
      body: JSON.stringify(body),
    }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));

  await t.test('tasks', async (t) => {
    const a = (await call('POST', '/api/tasks', { name: 'held', agent: 'main', prompt: 'work [[hold]]' })).body.task_id as string;
    t.ok(a, 'created');
    t.match(await call('DELETE', `/api/tasks/${a}`), { status: 409, body: { code: 'task-state' } }, 'a running task is not deleted');
    t.match(await call('POST', `/api/tasks/${a}/answer`, { answer: 'x' }), { status: 409, body: { code: 'task-state', error: /only a waiting task/ } }, 'a task that asked nothing is not answered');
    for (const bad of ['{nope', {}, { answer: '' }, { answer: '   ' }, { answer: 5 }, { answer: 'x', extra: 1 }]) {
      t.match(await call('POST', `/api/tasks/${a}/answer`, bad), { status: 400 }, `malformed answer ${JSON.stringify(bad)}`);
    }
    t.match(await call('POST', '/api/tasks/..%2Fx/answer', { answer: 'x' }), { status: 400 }, 'a hostile id');
    t.match(await call('DELETE', '/api/tasks/nope'), { status: 404, body: { code: 'not-found' } });
    t.match(await call('POST', '/api/tasks/nope/answer', { answer: 'x' }), { status: 404, body: { code: 'not-found' } });
    t.match(await call('DELETE', `/api/tasks/${a}`, undefined, viewer), { status: 403, body: { code: 'forbidden' } });
    t.match(await call('DELETE', `/api/tasks/${a}`, undefined, operator), { status: 403, body: { code: 'forbidden' } }, 'delete is the admin\'s');
    t.match(await call('POST', `/api/tasks/${a}/answer`, { answer: 'x' }, viewer), { status: 403, body: { code: 'forbidden' } });

    // The task's CLI asks its parent, as ask_parent.py does with the parent's token.
    await until('the task runs its CLI', () => d.log.read({ streamPrefix: 'turn:', types: ['turn.started'] }).some((e) => e.correlation === `task:${a}`));
    const asking = internal('/tasks/ask_parent', { task_id: a, question: 'Which year?' });
    await until('the task waits', async () => (await call('GET', `/api/tasks/${a}`)).body.status === 'waiting');
    t.match((await call('GET', `/api/tasks/${a}`, undefined, viewer)).body, { status: 'waiting', description: 'Which year?' }, 'the question is the description');
    t.match(await call('POST', `/api/tasks/${a}/answer`, { answer: '2025' }, restricted), { status: 403, body: { code: 'agent-not-allowed' } }, "a user restricted to writer may not answer main's task");
    t.notOk((await call('GET', '/api/tasks', undefined, restricted)).body.some((x: { task_id: string }) => x.task_id === a), "and does not see it");
    t.match(await call('DELETE', `/api/tasks/${a}`), { status: 409, body: { code: 'task-state' } }, 'a waiting task is not deleted');
    t.match(await call('POST', `/api/tasks/${a}/answer`, { answer: '2025' }, operator), { status: 200, body: { task_id: a, status: 'running' } }, 'the operator answers');
    t.same((await asking).body, { success: true, answer: '2025', status: 'running' }, "the task's ask_parent call gets the answer");
    t.match(await call('POST', `/api/tasks/${a}/answer`, { answer: 'again' }), { status: 409, body: { code: 'task-state' } }, 'answered once');

    t.match(await call('POST', `/api/tasks/${a}/cancel`, undefined, operator), { status: 200, body: { status: 'cancelled' } });
    t.match(await call('DELETE', `/api/tasks/${a}`), { status: 200, body: { task_id: a, deleted: true } }, 'a finished task is deleted');
    t.match(await call('GET', `/api/tasks/${a}`), { status: 404 });
    const audit = (await call('GET', '/api/audit?limit=100')).body as { action: string; status: number }[];
    t.ok(audit.some((e) => e.action === 'DELETE /api/tasks/:id' && e.status === 200), 'the delete is audited');
    t.ok(audit.some((e) => e.action === 'POST /api/tasks/:id/answer' && e.status === 200), 'the answer is audited');
  });

  await t.test('workflows', async (t) => {
    let r = await call('GET', '/api/workflows', undefined, viewer);
    t.equal(r.status, 200);
    t.equal(r.body.enabled, true);
    const byId = (defs: { id: string | null }[]) => Object.fromEntries(defs.map((x) => [x.id, x]));
    t.match(byId(r.body.definitions), {
      hello: { name: 'Hello', step_count: 2, variables: { who: 'world' }, error: null },
      waiter: { step_count: 1 },
      coderflow: { step_count: 2 },
      broken: { file: 'broken.yaml', error: /broken\.yaml/ },
    });
    r = await call('GET', '/api/workflows', undefined, restricted);
    t.same(r.body.definitions.map((x: { id: string }) => x.id).sort(), ['waiter'], 'a user restricted to writer sees no workflow asking main or coder, nor a broken file; one asking nobody is everyone\'s');

    t.match(await call('POST', '/api/workflows/hello/run', {}, viewer), { status: 403, body: { code: 'forbidden' } });
    t.match(await call('POST', '/api/workflows/hello/run', { variables: 'x' }), { status: 400 });
    t.match(await call('POST', '/api/workflows/hello/run', { variables: { nope: 'x' } }), { status: 400, body: { error: /declares no variable "nope"/ } });
    t.match(await call('POST', '/api/workflows/hello/run', { vars: {} }), { status: 400 });
    t.match(await call('POST', '/api/workflows/ghost/run', {}), { status: 404, body: { code: 'unknown-workflow' } });
    t.match(await call('POST', '/api/workflows/broken/run', {}), { status: 404, body: { code: 'unknown-workflow', error: /not loaded/ } });
    t.match(await call('POST', '/api/workflows/coderflow/run', {}, restricted), { status: 403, body: { code: 'agent-not-allowed' } });

    r = await call('POST', '/api/workflows/hello/run', { variables: { who: 'Ann' } }, operator);
    t.equal(r.status, 202, 'the operator starts a run');
    const hello = r.body.run_id as string;
    const done = await until('the run completes', async () => {
      const s = await call('GET', `/api/workflows/runs/${hello}`, undefined, viewer);
      return s.body.status === 'completed' ? s.body : null;
    });
    t.match(done, { workflow_id: 'hello', transport: 'admin', chat_id: 0, steps: [{ id: 'ask', status: 'completed', output: /greet Ann/ }, { id: 'tell', status: 'completed' }] });
    t.match(await call('POST', `/api/workflows/runs/${hello}/cancel`, undefined, operator), { status: 409, body: { code: 'run-finished' } }, 'an ended run is not cancelled');

    r = await call('POST', '/api/workflows/coderflow/run', {});
    const coder = r.body.run_id as string;
    await until('the coder run waits', async () => (await call('GET', `/api/workflows/runs/${coder}`)).body.status === 'waiting');
    t.match(await call('GET', `/api/workflows/runs/${coder}`, undefined, restricted), { status: 403, body: { code: 'agent-not-allowed' } });
    t.notOk((await call('GET', '/api/workflows', undefined, restricted)).body.runs.some((x: { run_id: string }) => x.run_id === coder), 'nor listed to them');
    t.match(await call('POST', `/api/workflows/runs/${coder}/cancel`, undefined, restricted), { status: 403, body: { code: 'agent-not-allowed' } });
    t.match(await call('POST', `/api/workflows/runs/${coder}/cancel`, undefined, viewer), { status: 403, body: { code: 'forbidden' } });
    t.match(await call('POST', '/api/workflows/runs/no-such-run/cancel', undefined, operator), { status: 404 });
    t.match(await call('GET', '/api/workflows/runs/no-such-run'), { status: 404 });
    t.match(await call('GET', '/api/workflows/runs/..%2F..'), { status: 400 });
    t.match(await call('POST', `/api/workflows/runs/${coder}/cancel`, undefined, operator), { status: 200, body: { run_id: coder, status: 'cancelled' } });
    t.match((await call('GET', '/api/workflows')).body.runs, [{ run_id: coder, status: 'cancelled' }, { run_id: hello, status: 'completed' }]);
  });
});
