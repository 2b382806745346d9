// Workflows end to end against the real daemon: a real SQLite log in a temp home, the fake claude,
// the internal API and the encrypted direct API on real sockets. A run's questions reach the chat's
// connection; the chat's next plain message is the reply while slash commands keep working; a
// restart keeps a waiting run waiting; the /workflows/* endpoints refuse bad input and change nothing.
import t, { type Test } from 'tap';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { redriveMachines } from '../../actors/index.js';
import { startDaemon, type RunningDaemon } from '../../bin/daemon.js';
import { WORKFLOW_DEFINITION_EVENTS } from '../../schemas/index.js';
import { homePaths, readMainAgentToken } from '../../store/index.js';
import { connectDirect } from '../fixtures/direct-socket-client.js';
import { tempHome } from '../fixtures/temp-home.js';

const BIN = fileURLToPath(new URL('../fixtures/bin', import.meta.url));

const REVIEW = `
name: Review
variables: { topic: "nothing" }
steps:
  - { id: ask, type: ask_agent, agent: main, prompt: "summarise $topic" }
  - { id: q, type: wait_for_reply, message: "Agent said: $steps.ask.output. Ship it?" }
  - { id: done, type: notify, message: "You said $steps.q.output" }
`;

// Issue 13's "done when": parallel steps, a condition and a wait_for_reply, across a restart.
const RELEASE = `
name: Release
steps:
  - id: checks
    type: parallel
    steps:
      - { id: lint, type: ask_agent, agent: main, prompt: "lint the release" }
      - { id: tests, type: ask_agent, agent: main, prompt: "test the release" }
  - { id: gate, type: condition, if: "'lint' in $steps.lint.output and $steps.tests.output.startswith('echo')", then: q, else: failed }
  - { id: q, type: wait_for_reply, message: "Checks: $steps.lint.output / $steps.tests.output. Release?" }
  - { id: decide, type: condition, if: "$steps.q.output.strip().lower() == 'yes'", then: shipped, else: held }
  - { id: shipped, type: notify, message: "Released", goto: bye }
  - { id: held, type: notify, message: "Held back", goto: bye }
  - { id: failed, type: notify, message: "Checks failed", goto: bye }
  - { id: bye, type: notify, message: "Done: $steps.decide.output" }
`;

async function boot(root: string): Promise<{ d: RunningDaemon; token: string; main: string }> {
  const d = await startDaemon({
    paths: homePaths(root),
    logToStderr: false,
    internalPort: 0,
    apiPort: 0,
    killGraceMs: 300,
    env: { PATH: `${BIN}:${process.env.PATH}`, HOME: root },
  });
  const token = JSON.parse(readFileSync(join(root, 'config', 'config.json'), 'utf8')).api.token as string;
  return { d, token, main: readMainAgentToken(homePaths(root))! };
}

function home(t: Test, name: string) {
  const scratch = tempHome(t);
  const root = join(scratch.dir, name);
  mkdirSync(join(root, 'config'), { recursive: true });
  mkdirSync(join(root, 'workflows'), { recursive: true });
  writeFileSync(join(root, 'config', 'config.json'), JSON.stringify({ api: { enabled: true, host: '127.0.0.1', port: 0 } }));
  writeFileSync(join(root, 'workflows', 'review.yaml'), REVIEW);
  return { root, scratch };
}

/** A direct API client in `chat`; `send` says a text there. */
async function connect(t: Test, port: number, token: string, chat = 7) {
  const c = await connectDirect(port, token, chat);
  t.teardown(() => c.ws.close());
  return { ...c, send: (text: string) => c.send({ type: 'message', text }) };
}

function api(port: number, token: string) {
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json', connection: 'close' };
  return {
    async post(path: string, body: unknown, opts: { raw?: string; headers?: Record<string, string> } = {}) {
      const r = await fetch(`http://127.0.0.1:${port}${path}`, { method: 'POST', headers: opts.headers ?? headers, body: opts.raw ?? JSON.stringify(body) });
      return { status: r.status, body: (await r.json()) as Record<string, unknown> };
    },
    async get(path: string) {
      const r = await fetch(`http://127.0.0.1:${port}${path}`, { headers });
      return { status: r.status, body: (await r.json()) as Record<string, unknown> };
    },
  };
}

await t.test('a run asks the agent, asks the chat, takes its next plain message as the reply while /stop still works, and survives a restart while waiting', async (t) => {
  const { root, scratch } = home(t, 'a');
  let { d, token, main } = await boot(root);
  scratch.beforeRemove(() => d.stop('test'));
  let internal = api(d.internalPort, main);
  const chat = await connect(t, d.apiPort!, token);

  const started = await internal.post('/workflows/run', { workflow_id: 'review', chat_id: 7, transport: 'api', variables: { topic: 'cats' } });
  t.equal(started.status, 200, JSON.stringify(started.body));
  const runId = started.body.run_id as string;
  t.equal(started.body.success, true);
  await chat.next('result', /^Agent said: echo: summarise cats\. Ship it\?$/);
  t.equal((await internal.get(`/workflows/status?run_id=${runId}`)).body.status, 'waiting');

  chat.send('/stop');
  await chat.next('abort_ok');
  chat.send('/workflow runs');
  await chat.next('result', new RegExp(`${runId} — review: waiting at q`));
  t.equal((await internal.get(`/workflows/status?run_id=${runId}`)).body.status, 'waiting', 'commands are not the reply');

  chat.send('yes please');
  await chat.next('result', /^Reply received: workflow "Review"/);
  await chat.next('result', /^You said yes please$/);
  const done = (await internal.get(`/workflows/status?run_id=${runId}`)).body;
  t.equal(done.status, 'completed');
  t.same((done.steps as { id: string; status: string }[]).map((s) => [s.id, s.status]), [['ask', 'completed'], ['q', 'completed'], ['done', 'completed']]);

  chat.send('hello again');
  await chat.next('result', /^echo: hello again$/);

  // A second run, left waiting across a restart of the daemon on the same home.
  const second = (await internal.post('/workflows/run', { workflow_id: 'review', chat_id: 7, transport: 'api' })).body.run_id as string;
  await chat.next('result', /^Agent said: echo: summarise nothing\. Ship it\?$/);
  await d.stop('test restart');
  ({ d, token, main } = await boot(root));
  internal = api(d.internalPort, main);
  t.equal((await internal.get(`/workflows/status?run_id=${second}`)).body.status, 'waiting', 'still waiting after the restart');
  t.equal((await internal.get(`/workflows/status?run_id=${runId}`)).body.status, 'completed', 'finished runs are read back from the log');
  const again = await connect(t, d.apiPort!, token);
  again.send('ship');
  await again.next('result', /^Reply received/);
  await again.next('result', /^You said ship$/);
  t.equal((await internal.get(`/workflows/status?run_id=${second}`)).body.status, 'completed');
  t.notOk(again.frames.some((f) => /Ship it\?/.test(String(f.text))), 'the question was not asked again');
  const replay = redriveMachines(d.log.read({ streamPrefix: 'run:' }));
  t.same([replay.streams, replay.diffs], [2, []], 'both runs, restart included, re-drive to exactly their facts');
});

await t.test('parallel checks, a condition and a reply awaited across a daemon restart run to completion', async (t) => {
  const { root, scratch } = home(t, 'r');
  writeFileSync(join(root, 'workflows', 'release.yaml'), RELEASE);
  let { d, token, main } = await boot(root);
  scratch.beforeRemove(() => d.stop('test'));
  let internal = api(d.internalPort, main);
  const chat = await connect(t, d.apiPort!, token);
  const runId = (await internal.post('/workflows/run', { workflow_id: 'release', chat_id: 7, transport: 'api' })).body.run_id as string;
  await chat.next('result', /^Checks: echo: lint the release\b.* \/ echo: test the release\b.*Release\?$/s);
  await d.stop('test restart');
  ({ d, token, main } = await boot(root));
  internal = api(d.internalPort, main);
  t.equal((await internal.get(`/workflows/status?run_id=${runId}`)).body.status, 'waiting', 'still waiting after the restart');
  const again = await connect(t, d.apiPort!, token);
  again.send(' Yes ');
  await again.next('result', /^Released$/);
  await again.next('result', /^Done: true$/);
  const done = (await internal.get(`/workflows/status?run_id=${runId}`)).body;
  t.equal(done.status, 'completed');
  const status = Object.fromEntries((done.steps as { id: string; status: string }[]).map((s) => [s.id, s.status]));
  t.match(status, { lint: 'completed', tests: 'completed', gate: 'completed', q: 'completed', decide: 'completed', shipped: 'completed', bye: 'completed' });
  t.notOk(['held', 'failed'].some((id) => status[id] === 'completed'), 'the branches not taken did not run');
  const replay = redriveMachines(d.log.read({ streamPrefix: 'run:' }));
  t.same([replay.streams, replay.diffs], [1, []], 'the run, restart included, re-drives to exactly its facts');
});

await t.test('the workflows folder is watched: a new file is runnable and a broken one is listed with its error, within 5 s', async (t) => {
  const { root, scratch } = home(t, 'b');
  const { d, main } = await boot(root);
  scratch.beforeRemove(() => d.stop('test'));
  const internal = api(d.internalPort, main);
  const reloaded = new Promise<void>((resolve) => {
    const sub = d.bus.events$.subscribe((e) => {
      if (e.type === WORKFLOW_DEFINITION_EVENTS.definitions_loaded && e.data.ids.includes('later') && e.data.errors.length === 1) {
        sub.unsubscribe();
        resolve();
      }
    });
  });
  writeFileSync(join(root, 'workflows', 'later.yaml'), 'steps: [ { id: n, type: notify, message: hi } ]');
  writeFileSync(join(root, 'workflows', 'bad.yaml'), 'steps: [ { id: n, type: notify, mesage: hi } ]');
  const timer = setTimeout(() => t.fail('no reload within 5 s'), 5000);
  await reloaded;
  clearTimeout(timer);
  const list = (await internal.get('/workflows/list')).body as { definitions: { id: string; error: string | null }[]; runs: unknown[] };
  t.same(list.definitions.map((x) => [x.id, x.error === null]).sort(), [['bad', false], ['later', true], ['review', true]]);
  t.match(list.definitions.find((x) => x.id === 'bad')!.error, /^bad\.yaml:1:\d+: steps\[0\]/);
});

await t.test('/workflows/* refuse hostile, malformed and oversized input with a clear 4xx and change nothing', async (t) => {
  const { root, scratch } = home(t, 'c');
  const { d, main } = await boot(root);
  scratch.beforeRemove(() => d.stop('test'));
  const internal = api(d.internalPort, main);
  const ok = { workflow_id: 'review', chat_id: 7, transport: 'api' };
  const cases: [string, () => Promise<{ status: number; body: Record<string, unknown> }>, number, RegExp][] = [
    ['no token', () => internal.post('/workflows/run', ok, { headers: { 'content-type': 'application/json', connection: 'close' } }), 401, /Bearer/],
    ['wrong token', () => internal.post('/workflows/run', ok, { headers: { authorization: 'Bearer nope', 'content-type': 'application/json', connection: 'close' } }), 401, /wrong token|no agent's interagent_token/],
    ['not JSON', () => internal.post('/workflows/run', null, { raw: '{"workflow_id": ' }), 400, /JSON/],
    ['a list', () => internal.post('/workflows/run', [ok]), 400, /body/],
    ['unknown field', () => internal.post('/workflows/run', { ...ok, variabels: {} }), 400, /variabels/],
    ['path in the id', () => internal.post('/workflows/run', { ...ok, workflow_id: '../secrets' }), 400, /workflow_id/],
    ['chat id as text', () => internal.post('/workflows/run', { ...ok, chat_id: '7' }), 400, /chat_id/],
    ['fractional chat id', () => internal.post('/workflows/run', { ...ok, chat_id: 7.5 }), 400, /chat_id/],
    ['no transport', () => internal.post('/workflows/run', { workflow_id: 'review', chat_id: 7 }), 400, /transport/],
    ['bad variable name', () => internal.post('/workflows/run', { ...ok, variables: { 'a b': 'x' } }), 400, /variables/],
    ['__proto__ variable', () => internal.post('/workflows/run', null, { raw: '{"workflow_id":"review","chat_id":7,"transport":"api","variables":{"__proto__":"x"}}' }), 400, /variables/],
    ['variable not declared', () => internal.post('/workflows/run', { ...ok, variables: { subject: 'x' } }), 400, /declares no variable "subject"/],
    ['variable not text', () => internal.post('/workflows/run', { ...ok, variables: { topic: 3 } }), 400, /variables/],
    ['oversized body', () => internal.post('/workflows/run', { ...ok, variables: { topic: 'x'.repeat(1100 * 1024) } }), 413, /./],
    ['unknown workflow', () => internal.post('/workflows/run', { ...ok, workflow_id: 'nope' }), 404, /no workflow named nope/],
    ['status without run id', () => internal.get('/workflows/status'), 400, /run_id/],
    ['status of a hostile id', () => internal.get('/workflows/status?run_id=..%2F..%2Fetc'), 400, /run_id/],
    ['status of an unknown run', () => internal.get('/workflows/status?run_id=nope'), 404, /no workflow run nope/],
    ['cancel of an unknown run', () => internal.post('/workflows/cancel', { run_id: 'nope' }), 404, /no workflow run/],
    ['cancel without run id', () => internal.post('/workflows/cancel', {}), 400, /run_id/],
  ];
  for (const [what, call, status, message] of cases) {
    const r = await call();
    t.equal(r.status, status, `${what}: ${JSON.stringify(r.body)}`);
    t.match(String(r.body.error), message, what);
  }
  const list = (await internal.get('/workflows/list')).body as { runs: unknown[] };
  t.same(list.runs, [], 'no run was started by any of them');

  const run = (await internal.post('/workflows/run', ok)).body.run_id as string;
  const cancelled = await internal.post('/workflows/cancel', { run_id: run });
  t.same([cancelled.status, cancelled.body.status], [200, 'cancelled']);
  const twice = await internal.post('/workflows/cancel', { run_id: run });
  t.same([twice.status, twice.body.error], [409, `run ${run} has already ended (cancelled)`]);
});
