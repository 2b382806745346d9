// The workflow engine over a real Bus, ActorHost and event log, with an in-memory stand-in for the
// agent runtime served through the real agent contract, the real chat-delivery handler, and a
// SimulatedClock for step timeouts and retry delays: no sleeps stand in for synchronisation.
import t, { type Test } from 'tap';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SimulatedClock } from 'xstate';
import { ActorHost, WorkflowEngine, answerWorkflowCommand, redriveMachines, startChatDelivery } from '../../actors/index.js';
import { recordingTransport, registryOf } from '../fixtures/recording-transport.js';
import { Bus, serveAgents } from '../../bus/index.js';
import { checkWorkflowExpression } from '../../machines/index.js';
import {
  CHAT_DELIVERY_CHUNKS,
  CHAT_DELIVERY_COMMANDS,
  CHAT_DELIVERY_EVENTS,
  CHAT_SESSION_COMMANDS,
  SvcError,
  WORKFLOW_COMMANDS,
  type AgentMessage,
  type Principal,
  type TurnOutcome,
  type WorkflowConfig,
} from '../../schemas/index.js';
import { MemoryEventLog, loadWorkflowDefinitions, type EventLog } from '../../store/index.js';

/** When every rig's clock starts, unless a restart says later. */
const T0 = Date.parse('2026-11-20T08:00:00Z');
const ALICE: Principal = { kind: 'user', id: 'alice', acting_for: null, role: 'admin', allowed_agents: [], origin: { transport: 'api', chat_id: 7, topic_id: null } };

interface Rig {
  bus: Bus;
  engine: WorkflowEngine;
  clock: SimulatedClock;
  log: EventLog;
  dir: string;
  /** Asks the fake agents received, in order. */
  asked: AgentMessage[];
  /** Messages delivered to chats. */
  said: { chat_id: number; text: string }[];
  aborts: number[];
  config: WorkflowConfig;
  /** Holds asks whose text contains HOLD; release one with its answer. */
  held: Map<string, (text: string) => void>;
  run(id: string, variables?: Record<string, string>): Promise<string>;
  status(runId: string): ReturnType<typeof statusOf>;
  /** Resolves once every promise queued so far has settled (the bus hops through microtasks and timers). */
  settle(): Promise<void>;
  stop(): Promise<void>;
}

async function statusOf(bus: Bus, runId: string) {
  return bus.send(WORKFLOW_COMMANDS.status, { principal: ALICE, run_id: runId });
}

function outcome(m: AgentMessage, status: TurnOutcome['status'], text: string): TurnOutcome {
  return {
    request_id: m.request_id, turn_id: 't', agent: m.agent, session_key: `${m.transport}:${m.chat_id}`, status, text, is_error: status !== 'completed',
    stream_fallback: false, files: [], provider: 'claude', model: 'm', session_id: null, usage: null, cost_usd: null, duration_ms: 1, reason: status === 'completed' ? null : status,
  };
}

async function rig(t: Test, files: Record<string, string>, opts: { log?: EventLog; dir?: string; config?: Partial<WorkflowConfig>; at?: number } = {}): Promise<Rig> {
  const clock = new SimulatedClock();
  clock.set(opts.at ?? T0);
  const log = opts.log ?? new MemoryEventLog();
  const bus = new Bus({ log, clock: () => clock.now() });
  const host = new ActorHost(bus);
  const dir = opts.dir ?? join(t.testdir(), 'workflows');
  mkdirSync(dir, { recursive: true });
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  const asked: AgentMessage[] = [];
  const aborts: number[] = [];
  const held = new Map<string, (text: string) => void>();
  const pending = new Map<number, Array<() => void>>();
  const agents = serveAgents(bus, 'agents', {
    accept(m) {
      asked.push(m);
      if (m.text.includes('REFUSE')) throw new SvcError('agent-not-allowed', `may not use ${m.agent}`);
      if (m.text.includes('HOLD')) {
        return {
          outcome: new Promise<TurnOutcome>((resolve) => {
            held.set(m.text, (text) => resolve(outcome(m, 'completed', text)));
            const list = pending.get(m.chat_id) ?? [];
            list.push(() => resolve(outcome(m, 'aborted', '')));
            pending.set(m.chat_id, list);
          }),
        };
      }
      if (m.text.includes('FAIL')) return { outcome: Promise.resolve(outcome(m, 'failed', 'exit code 1')) };
      return { outcome: Promise.resolve(outcome(m, 'completed', `answer to ${m.text}`)) };
    },
    abort(req) {
      aborts.push(req.chat_id);
      const list = pending.get(req.chat_id) ?? [];
      pending.delete(req.chat_id);
      for (const end of list) end();
      return { killed: list.length };
    },
    list: () => [{ name: 'main', provider: 'claude', model: 'claude-opus-4', online: true, is_main: true }],
  });
  const delivery = startChatDelivery({ bus, transports: registryOf(recordingTransport('api')) });
  const said: { chat_id: number; text: string }[] = [];
  const sub = bus.transient$.subscribe((m) => {
    if (m.type === CHAT_DELIVERY_CHUNKS.delivered) said.push({ chat_id: m.data.chat_id, text: m.data.text });
  });
  const config: WorkflowConfig = { enabled: true, max_parallel_runs: 5, default_step_timeout: 3600, ...opts.config };
  let counter = 0;
  const engine = new WorkflowEngine({
    bus, host, log, dir, clock, now: () => clock.now(), watch: false, newId: () => `run-${++counter}-${Math.random().toString(36).slice(2, 6)}`,
    load: () => loadWorkflowDefinitions(dir, { checkExpression: checkWorkflowExpression }),
    config: () => config,
  });
  await engine.start();
  /** Everything the engine started has ended, but what waits on an agent's answer, a reply or a timer. */
  const settle = () => engine.idle();
  let stopped = false;
  const r: Rig = {
    bus, engine, clock, log, dir, asked, said, aborts, config, held,
    async run(id, variables = {}) {
      const { run_id } = await bus.send(WORKFLOW_COMMANDS.run, { principal: ALICE, workflow_id: id, transport: 'api', chat_id: 7, topic_id: null, variables });
      await settle();
      return run_id;
    },
    status: (runId) => statusOf(bus, runId),
    settle,
    async stop() {
      if (stopped) return;
      stopped = true;
      await engine.stop();
      agents.unsubscribe();
      delivery.unsubscribe();
      sub.unsubscribe();
      host.stopAll();
      bus.close();
    },
  };
  t.teardown(() => r.stop());
  return r;
}

await t.test('every step type end to end: ask_agent (fresh session, model override), notify to the chat, condition, parallel, wait_for_reply taking the next message', async (t) => {
  const r = await rig(t, {
    'release.yaml': `
name: Release
variables: { version: "1.0" }
steps:
  - { id: draft, type: ask_agent, agent: main, prompt: "Notes for $version", model: claude-sonnet-4 }
  - { id: tell, type: notify, message: "Draft: $steps.draft.output" }
  - { id: ok, type: wait_for_reply, message: "Ship $version?" }
  - { id: check, type: condition, if: "$steps.ok.output.lower() == 'yes'", else: stop }
  - id: fan
    type: parallel
    steps:
      - { id: a, type: ask_agent, agent: main, prompt: "branch a", new_session: false }
      - { id: b, type: notify, message: "shipping $version" }
  - { id: stop, type: notify, message: "done: $steps.a.output" }
`,
  });
  const id = await r.run('release', { version: '2.0' });
  t.same(r.asked.map((m) => [m.text, m.kind, m.transport, m.new_session]), [['@claude-sonnet-4 Notes for 2.0', 'workflow', 'workflow', true]]);
  t.same(r.said.map((s) => s.text), ['Draft: answer to @claude-sonnet-4 Notes for 2.0', 'Ship 2.0?']);
  t.equal((await r.status(id)).status, 'waiting');

  t.equal(r.engine.takeReply({ transport: 'api', chat_id: 8, topic_id: null, text: 'yes' }), null, 'another chat\'s message is not the reply');
  t.equal(r.engine.takeReply({ transport: 'api', chat_id: 7, topic_id: 3, text: 'yes' }), null, 'another topic\'s message is not the reply');
  const ack = r.engine.takeReply({ transport: 'api', chat_id: 7, topic_id: null, text: 'YES' });
  t.ok(ack, 'the next message of the chat is the reply');
  t.match(await ack, /Reply received: workflow "Release"/);
  await r.settle();
  const view = await r.status(id);
  t.equal(view.status, 'completed');
  t.same(view.steps.map((s) => [s.id, s.status]), [['draft', 'completed'], ['tell', 'completed'], ['ok', 'completed'], ['check', 'completed'], ['fan', 'completed'], ['a', 'completed'], ['b', 'completed'], ['stop', 'completed']]);
  t.equal(view.steps.find((s) => s.id === 'ok')!.output, 'YES');
  const branch = r.asked.find((m) => m.text === 'branch a')!;
  t.equal(branch.new_session, false);
  t.not(branch.chat_id, r.asked[0]!.chat_id, 'a parallel branch asks in a chat of its own');
  t.equal(r.said.at(-1)!.text, 'done: answer to branch a');
  t.equal(r.engine.takeReply({ transport: 'api', chat_id: 7, topic_id: null, text: 'later' }), null, 'nothing waits any more');
});

await t.test('an agent failure applies on_error: retry waits its delay on the clock, then abort fails the run', async (t) => {
  const r = await rig(t, { 'flaky.yaml': `steps: [ { id: a, type: ask_agent, agent: main, prompt: "FAIL", on_error: retry, retry: { max_attempts: 2, delay_seconds: 60 } } ]` });
  const id = await r.run('flaky');
  t.equal(r.asked.length, 1);
  t.equal((await r.status(id)).steps[0]!.status, 'pending', 'waiting for its retry');
  r.clock.increment(59_000);
  await r.settle();
  t.equal(r.asked.length, 1, 'not before the delay');
  r.clock.increment(1000);
  await r.settle();
  t.equal(r.asked.length, 2, 'the second attempt');
  const view = await r.status(id);
  t.equal(view.status, 'failed');
  t.match(view.error, /step a failed \(after 2 attempts\): agent main failed/);
});

await t.test('a refused ask fails the step with the refusal; skip carries on', async (t) => {
  const r = await rig(t, { 'x.yaml': `steps: [ { id: a, type: ask_agent, agent: main, prompt: "REFUSE", on_error: skip }, { id: b, type: notify, message: after } ]` });
  const id = await r.run('x');
  const view = await r.status(id);
  t.equal(view.status, 'completed');
  t.match(view.steps[0]!.error, /refused the request: may not use main/);
});

await t.test('a step timeout aborts that request (on the injected clock) and fails the step', async (t) => {
  const r = await rig(t, { 'slow.yaml': `steps: [ { id: a, type: ask_agent, agent: main, prompt: "HOLD", timeout: 30 } ]` });
  const id = await r.run('slow');
  t.equal((await r.status(id)).status, 'running');
  r.clock.increment(30_000);
  await r.settle();
  t.same(r.aborts, [r.asked[0]!.chat_id], 'the step\'s own request was aborted');
  const view = await r.status(id);
  t.equal(view.status, 'failed');
  t.match(view.error, /timed out after 30 s/);
});

await t.test('parallel: one branch failing stops the others (their requests aborted) and fails the block', async (t) => {
  const r = await rig(t, {
    'par.yaml': `
steps:
  - id: fan
    type: parallel
    steps:
      - { id: slow, type: ask_agent, agent: main, prompt: "HOLD slow" }
      - { id: bad, type: ask_agent, agent: main, prompt: "FAIL" }
`,
  });
  const id = await r.run('par');
  const view = await r.status(id);
  t.equal(view.status, 'failed');
  t.same(view.steps.map((s) => [s.id, s.status]), [['fan', 'failed'], ['slow', 'skipped'], ['bad', 'failed']]);
  t.same(r.aborts, [r.asked.find((m) => m.text === 'HOLD slow')!.chat_id]);
});

await t.test('cancel during a wait: the run is cancelled and the next message goes to the agent again', async (t) => {
  const r = await rig(t, { 'q.yaml': `steps: [ { id: q, type: wait_for_reply, message: "Proceed?" }, { id: n, type: notify, message: never } ]` });
  const id = await r.run('q');
  t.equal((await r.status(id)).status, 'waiting');
  t.same(await r.bus.send(WORKFLOW_COMMANDS.cancel, { principal: ALICE, run_id: id }), { run_id: id, status: 'cancelled' });
  t.equal(r.engine.takeReply({ transport: 'api', chat_id: 7, topic_id: null, text: 'yes' }), null);
  await t.rejects(r.bus.send(WORKFLOW_COMMANDS.cancel, { principal: ALICE, run_id: id }), { code: 'run-finished' });
  await t.rejects(r.bus.send(WORKFLOW_COMMANDS.cancel, { principal: ALICE, run_id: 'nope' }), { code: 'not-found' });
  await t.rejects(r.bus.send(WORKFLOW_COMMANDS.cancel, { principal: { ...ALICE, role: 'viewer' }, run_id: id }), { code: 'forbidden' });
  t.same(r.said.map((s) => s.text), ['Proceed?']);
});

await t.test('a reload never changes an active run: it keeps the definition it started with', async (t) => {
  const r = await rig(t, { 'w.yaml': `steps: [ { id: q, type: wait_for_reply, message: "v1 question" }, { id: n, type: notify, message: "v1 end" } ]` });
  const id = await r.run('w');
  writeFileSync(join(r.dir, 'w.yaml'), `steps: [ { id: other, type: notify, message: "v2" } ]`);
  await r.engine.reload();
  rmSync(join(r.dir, 'w.yaml'));
  await r.engine.reload();
  const list = await r.bus.send(WORKFLOW_COMMANDS.list, { principal: ALICE });
  t.same(list.definitions, [], 'the file is gone');
  await r.engine.takeReply({ transport: 'api', chat_id: 7, topic_id: null, text: 'ok' });
  await r.settle();
  t.equal((await r.status(id)).status, 'completed');
  t.same(r.said.map((s) => s.text), ['v1 question', 'v1 end']);
});

await t.test('run refusals: unknown workflow, broken file (with its error), undeclared variable, disabled, max_parallel_runs', async (t) => {
  const r = await rig(t, {
    'wait.yaml': `variables: { who: x }\nsteps: [ { id: q, type: wait_for_reply, message: "?" } ]`,
    'broken.yaml': `steps: [ { id: a, type: notify } ]`,
  }, { config: { max_parallel_runs: 1 } });
  const send = (workflow_id: string, variables: Record<string, string> = {}) =>
    r.bus.send(WORKFLOW_COMMANDS.run, { principal: ALICE, workflow_id, transport: 'api', chat_id: 7, topic_id: null, variables });
  await t.rejects(send('nope'), { code: 'unknown-workflow', message: /no workflow named nope \(known: wait\)/ });
  await t.rejects(send('broken'), { code: 'unknown-workflow', message: /broken\.yaml:1:\d+: steps\[0\]/ });
  await t.rejects(send('wait', { whom: 'y' }), { code: 'invalid-body', message: /variables\.whom: workflow wait declares no variable "whom" \(it declares who\)/ });
  await send('wait');
  await t.rejects(send('wait'), { code: 'too-many-runs', message: /1 workflow runs are active and workflow\.max_parallel_runs is 1/ });
  r.config.enabled = false;
  await t.rejects(send('wait'), { code: 'workflows-disabled' });
  const list = await r.bus.send(WORKFLOW_COMMANDS.list, { principal: ALICE });
  t.same(list.definitions.map((d) => [d.id, d.error === null]), [['wait', true], ['broken', false]]);
  t.equal(list.runs.length, 1);
});

await t.test('a restart resumes from the log: a waiting run keeps waiting (its question is not asked again) and then completes; a cut ask fails per on_error', async (t) => {
  const log = new MemoryEventLog();
  const dir = join(t.testdir(), 'wf');
  const files = {
    'wait.yaml': `steps: [ { id: q, type: wait_for_reply, message: "Proceed?" }, { id: n, type: notify, message: "got $steps.q.output" } ]`,
    'ask.yaml': `steps: [ { id: a, type: ask_agent, agent: main, prompt: "HOLD", on_error: retry, retry: { max_attempts: 2 } } ]`,
  };
  const first = await rig(t, files, { log, dir });
  const waiting = await first.run('wait');
  const asking = await first.run('ask');
  t.equal(first.asked.length, 1);
  await first.stop();

  const second = await rig(t, {}, { log, dir });
  await second.settle();
  t.same(second.said, [], 'the question is not asked again');
  t.equal((await second.status(waiting)).status, 'waiting');
  t.same(second.asked.map((m) => m.text), ['HOLD'], 'the cut ask failed as interrupted and its retry asked again');
  const view = await second.status(asking);
  t.same([view.status, view.steps[0]!.attempts], ['running', 2]);
  await second.engine.takeReply({ transport: 'api', chat_id: 7, topic_id: null, text: 'go' });
  await second.settle();
  t.equal((await second.status(waiting)).status, 'completed');
  t.same(second.said.map((s) => s.text), ['got go']);
});

await t.test('a restart keeps each timer\'s moment: a pending retry and a wait\'s timeout fire after the time left, and the log re-drives through the restart', async (t) => {
  const log = new MemoryEventLog();
  const dir = join(t.testdir(), 'wf');
  const files = {
    'flaky.yaml': `steps: [ { id: a, type: ask_agent, agent: main, prompt: "FAIL then ok", on_error: retry, retry: { max_attempts: 2, delay_seconds: 60 } } ]`,
    'wait.yaml': `steps: [ { id: q, type: wait_for_reply, message: "Proceed?", timeout: 30, on_error: skip }, { id: n, type: notify, message: "went on without an answer" } ]`,
  };
  const first = await rig(t, files, { log, dir });
  const flaky = await first.run('flaky');
  const waiting = await first.run('wait');
  t.equal((await first.status(flaky)).steps[0]!.status, 'pending', 'the retry is scheduled');
  first.clock.increment(10_000);
  await first.settle();
  await first.stop();

  // Down for 10 s more: 20 s after the start, 40 s of the retry's delay and 10 s of the wait are left.
  const second = await rig(t, {}, { log, dir, at: T0 + 20_000 });
  await second.settle();
  t.same(second.asked, [], 'nothing is due yet');
  second.clock.increment(9_999);
  await second.settle();
  t.equal((await second.status(waiting)).status, 'waiting', 'not a fresh 30 s, and not before the 30 s are up');
  second.clock.increment(1);
  await second.settle();
  t.same(second.said.map((s) => s.text), ['went on without an answer']);
  t.match((await second.status(waiting)).steps[0], { status: 'skipped', error: /timed out after 30 s/ });
  second.clock.increment(29_999);
  await second.settle();
  t.same(second.asked, [], 'the retry keeps its 60 s');
  second.clock.increment(1);
  await second.settle();
  t.same(second.asked.map((m) => m.text), ['FAIL then ok'], 'the second attempt');
  t.same((await second.status(flaky)).steps[0]!.attempts, 2);

  const runs = log.read({ streamPrefix: 'run:' });
  t.same(runs.filter((e) => e.type === 'workflow.input_received').map((e) => (e.data as { input: { type: string } }).input.type).filter((x) => x === 'resume'), ['resume', 'resume'], 'each restored run wrote its resume');
  t.same(redriveMachines(runs).diffs, [], 'replay re-drives both runs through the restart, the retry and the timeout');
});

await t.test('/workflow chat command: usage, list, run with --var, status, runs, cancel', async (t) => {
  const r = await rig(t, { 'greet.yaml': `name: Greeter\nvariables: { who: world }\nsteps: [ { id: q, type: wait_for_reply, message: "Hello $who" } ]` });
  const msg = (arg?: string): [Bus, AgentMessage, string | undefined] => [r.bus, { request_id: 'r', agent: 'main', transport: 'api', chat_id: 7, topic_id: null, text: `/workflow ${arg ?? ''}`, principal: ALICE, kind: 'foreground' }, arg];
  t.match(await answerWorkflowCommand(...msg('frobnicate')), { ok: false, text: /unknown subcommand "frobnicate"\.\nUsage:/ });
  t.match(await answerWorkflowCommand(...msg('run greet --var 1x=2')), { ok: false, text: /--var 1x: the name must start with a letter/ });
  t.match(await answerWorkflowCommand(...msg('run greet --var who')), { ok: false, text: /--var needs name=value/ });
  t.match(await answerWorkflowCommand(...msg()), { ok: true, text: /• greet — Greeter \(1 steps; variables: who\)/ });
  const started = await answerWorkflowCommand(...msg('run greet --var who="big world"'));
  const runId = /run (\S+)\./.exec(started.text)![1]!;
  await r.settle();
  t.same(r.said.map((s) => s.text), ['Hello big world']);
  t.match(await answerWorkflowCommand(...msg(`status ${runId}`)), { ok: true, text: /: waiting\n[^]*• q \(wait_for_reply\): waiting/ });
  t.match(await answerWorkflowCommand(...msg('runs')), { text: new RegExp(`• ${runId} — greet: waiting at q`) });
  t.match(await answerWorkflowCommand(...msg(`cancel ${runId}`)), { ok: true, text: `Run ${runId}: cancelled.` });
  t.match(await answerWorkflowCommand(...msg(`cancel ${runId}`)), { ok: false, text: /already ended \(cancelled\)/ });
});

await t.test('chat.deliver: the admin chat gets a persisted chat_message of kind text, the direct API a live chunk, a transport not running the admin chat with a rerouted fact', async (t) => {
  const log = new MemoryEventLog();
  const bus = new Bus({ log, clock: () => Date.parse('2026-11-20T08:00:00Z') });
  t.teardown(() => bus.close());
  const delivery = startChatDelivery({ bus, transports: registryOf(recordingTransport('api')) });
  t.teardown(() => delivery.unsubscribe());
  const recorded: unknown[] = [];
  // The chat-sessions actor's side of the command, in memory: what it is asked to keep.
  const sessions = bus.handle(CHAT_SESSION_COMMANDS.recordEnvelope, 'chat-sessions', (cmd) => {
    recorded.push(cmd.data);
    return { session_id: 's1' };
  });
  t.teardown(() => sessions.unsubscribe());
  const live: unknown[] = [];
  const sub = bus.transient$.subscribe((m) => m.type === CHAT_DELIVERY_CHUNKS.delivered && live.push(m.data));
  t.teardown(() => sub.unsubscribe());

  t.same(await bus.send(CHAT_DELIVERY_COMMANDS.deliver, { transport: 'admin', chat_id: 5, topic_id: null, text: 'Ship it?', source: 'workflow:r1' }), { delivered: true, to: 'admin' });
  t.match(recorded, [{ agent: 'main', message: { sender: 'agent', content: 'Ship it?', kind: 'text', meta: { source: 'workflow:r1' }, timestamp: '2026-11-20T08:00:00.000Z' } }]);
  t.same(await bus.send(CHAT_DELIVERY_COMMANDS.deliver, { transport: 'api', chat_id: 7, topic_id: 2, text: 'hi', source: 'workflow:r1' }), { delivered: true, to: 'api' });
  t.same(live, [{ transport: 'api', chat_id: 7, topic_id: 2, text: 'hi', source: 'workflow:r1' }]);
  t.same(await bus.send(CHAT_DELIVERY_COMMANDS.deliver, { transport: 'telegram', chat_id: 7, topic_id: null, text: 'hi', agent: 'helper', source: 'workflow:r1' }), { delivered: true, to: 'admin' });
  t.match(recorded.at(-1), { agent: 'helper', message: { content: 'hi', kind: 'text', meta: { source: 'workflow:r1', rerouted_from: { transport: 'telegram', chat_id: 7, topic_id: null } } } }, 'telegram is not running: the agent’s admin chat gets it');
  t.match(log.read({ types: [CHAT_DELIVERY_EVENTS.delivery_rerouted] }), [
    { stream: 'delivery:telegram:7', data: { transport: 'telegram', chat_id: 7, topic_id: null, agent: 'helper', source: 'workflow:r1', to: 'admin', session_id: 's1', reason: 'transport telegram is not running' } },
  ]);
  t.equal(live.length, 1, 'no live chunk for it');
  await t.rejects(bus.send(CHAT_DELIVERY_COMMANDS.deliver, { transport: 'api', chat_id: 7, topic_id: null, text: '', source: 'x' }), { code: 'invalid-command' });
});
