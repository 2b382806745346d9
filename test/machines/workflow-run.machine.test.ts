import t from 'tap';
import { SimulatedClock, createActor } from 'xstate';
import {
  MAX_STEP_EXECUTIONS,
  checkWorkflowExpression,
  foldWorkflowRun,
  restoreWorkflowRun,
  runTimers,
  runningEffects,
  workflowRunMachine,
  workflowRunView,
  type WorkflowRunInput,
} from '../../machines/index.js';
import type { Fact, Principal, WorkflowDefinition } from '../../schemas/index.js';
import { parseWorkflowFile } from '../../store/index.js';

/*
 * Given a workflow file, when the run is started and sent what the engine reports (answers,
 * failures, timers firing, a reply, a cancel), then these facts and this state. The machine is
 * driven alone: no engine, no clock but the `now` each input carries.
 */

/** An input without its time: the helper stamps one a second after the last. */
type Input = WorkflowRunInput extends infer E ? (E extends WorkflowRunInput ? Omit<E, 'now'> & { now?: number } : never) : never;

const PRINCIPAL: Principal = { kind: 'user', id: 'alice', acting_for: null, role: 'admin', allowed_agents: [], origin: { transport: 'api', chat_id: 7, topic_id: null } };

function definition(yaml: string): WorkflowDefinition {
  const r = parseWorkflowFile('wf.yaml', yaml, { checkExpression: checkWorkflowExpression });
  if (!r.ok) throw new Error(r.error.text);
  return r.definition;
}

function given(yaml: string, opts: { variables?: Record<string, string>; max?: number; clock?: SimulatedClock } = {}) {
  const def = definition(yaml);
  const facts: Fact[] = [];
  const actor = createActor(workflowRunMachine, {
    input: {
      run_id: 'r1',
      definition: def,
      variables: { ...def.variables, ...opts.variables },
      transport: 'api',
      chat_id: 7,
      topic_id: null,
      principal: PRINCIPAL,
      max_step_executions: opts.max ?? MAX_STEP_EXECUTIONS,
      default_step_timeout: 3600,
    },
    // The run's timers are its own delays: on a clock nobody advances here, they never fire by themselves.
    clock: opts.clock ?? new SimulatedClock(),
  });
  const journal: Fact[] = [];
  // The decisions apart from the inputs' journal, which has a test of its own.
  actor.on('*', (f: Fact) => void (f.type === 'workflow.input_received' ? journal : facts).push(f));
  actor.start();
  let now = 1_000_000;
  const api = {
    facts,
    journal,
    actor,
    /** Facts as `type step` lines, the shortest readable trace. */
    trace(): string[] {
      return facts.map((f) => `${f.type.slice('workflow.'.length)}${'step' in f.data && f.data.step ? ` ${String(f.data.step)}` : ''}`);
    },
    send(input: Input) {
      now = input.now ?? now + 1000;
      actor.send({ ...input, now } as WorkflowRunInput);
      return api;
    },
    run() {
      return actor.getSnapshot().context.run!;
    },
    value() {
      return actor.getSnapshot().value;
    },
    /** The one attempt of `step` the engine is performing now. */
    n(step: string): number {
      return api.run().steps[step]!.n;
    },
    done(step: string, output = '') {
      return api.send({ type: 'step.done', step, n: api.n(step), output });
    },
    fail(step: string, error = 'boom') {
      return api.send({ type: 'step.failed', step, n: api.n(step), error });
    },
  };
  api.send({ type: 'start' });
  return api;
}

await t.test('steps run in file order; outputs and variables are substituted into later texts; the last step completes the run', async (t) => {
  const r = given(`
variables: { topic: cats }
steps:
  - { id: ask, type: ask_agent, agent: main, prompt: "Write about $topic" }
  - { id: tell, type: notify, message: "Got: $steps.ask.output ($variables.topic)" }
`, { variables: { topic: 'dogs' } });
  t.equal(r.value(), 'running');
  t.same(runningEffects(r.run()).map((e) => [e.step, e.type, e.text]), [['ask', 'ask_agent', 'Write about dogs']]);
  r.done('ask', 'A poem');
  t.same(runningEffects(r.run()).map((e) => e.text), ['Got: A poem (dogs)']);
  r.done('tell');
  t.equal(r.value(), 'completed');
  t.same(r.trace(), ['run_started', 'step_started ask', 'step_completed ask', 'step_started tell', 'step_completed tell', 'run_completed']);
  t.equal(r.run().outputs.ask, 'A poem');
  const view = workflowRunView(r.run());
  t.equal(view.status, 'completed');
  t.same(view.steps.map((s) => [s.id, s.status, s.attempts]), [['ask', 'completed', 1], ['tell', 'completed', 1]]);
});

await t.test('goto skips the steps in between; a condition goes to then or else, a missing one meaning the next step', async (t) => {
  const yaml = `
variables: { answer: "yes" }
steps:
  - { id: first, type: notify, message: hi, goto: check }
  - { id: skipped, type: notify, message: never }
  - { id: check, type: condition, if: "$answer.lower() == 'yes'", then: happy }
  - { id: sad, type: notify, message: sad }
  - { id: happy, type: notify, message: happy }
`;
  const yes = given(yaml, { variables: { answer: 'YES' } });
  yes.done('first');
  yes.done('happy');
  t.same(yes.trace(), ['run_started', 'step_started first', 'step_completed first', 'step_started check', 'step_completed check', 'step_started happy', 'step_completed happy', 'run_completed']);
  t.equal(yes.run().outputs.check, 'true');
  t.equal(yes.run().steps.skipped!.status, 'pending');

  const no = given(yaml, { variables: { answer: 'no' } });
  no.done('first');
  t.same(runningEffects(no.run()).map((e) => e.step), ['sad'], 'no else: the next step');
  no.done('sad').done('happy');
  t.equal(no.value(), 'completed');
});

await t.test('wait_for_reply: the run waits, a reply completes the step with the text, and a reply while running changes nothing', async (t) => {
  const r = given(`
steps:
  - { id: q, type: wait_for_reply, message: "Deploy?" }
  - { id: a, type: notify, message: "You said $steps.q.output" }
`);
  t.equal(r.value(), 'waiting');
  t.equal(r.run().steps.q!.status, 'waiting');
  t.same(runningEffects(r.run()).map((e) => [e.step, e.type, e.text]), [['q', 'wait_for_reply', 'Deploy?']]);
  t.same(r.send({ type: 'step.done', step: 'q', n: r.n('q'), output: 'not a reply' }).facts.length, 2, 'an engine answer does not end a wait');
  r.send({ type: 'reply', text: 'ship it' });
  t.equal(r.value(), 'running');
  t.equal(r.run().outputs.q, 'ship it');
  const before = r.facts.length;
  r.send({ type: 'reply', text: 'again' });
  t.equal(r.facts.length, before, 'no wait: no fact');
  t.same(runningEffects(r.run()).map((e) => e.text), ['You said ship it']);
});

await t.test('cancel during a wait ends the run cancelled; nothing after it changes the run', async (t) => {
  const r = given(`steps: [ { id: q, type: wait_for_reply, message: "?" }, { id: n, type: notify, message: x } ]`);
  r.send({ type: 'cancel', by: 'alice' });
  t.equal(r.value(), 'cancelled');
  t.same(r.facts.at(-1), { type: 'workflow.run_cancelled', data: { by: 'alice', at_ms: r.run().ended_at } });
  r.send({ type: 'reply', text: 'late' }).send({ type: 'cancel', by: 'bob' });
  t.equal(r.facts.at(-1)!.type, 'workflow.run_cancelled');
  t.same(runningEffects(r.run()), [], 'a cancelled run performs nothing');
});

await t.test('on_error abort (the default) fails the run with the step and its error', async (t) => {
  const r = given(`steps: [ { id: a, type: ask_agent, agent: main, prompt: p }, { id: b, type: notify, message: m } ]`);
  r.fail('a', 'exit code 1');
  t.equal(r.value(), 'failed');
  t.same(r.facts.at(-1)!.data, { step: 'a', error: 'step a failed: exit code 1', at_ms: r.run().ended_at });
});

await t.test('on_error retry: a delay is scheduled (never slept), the due retry runs the next attempt, and spent attempts abort', async (t) => {
  const r = given(`steps: [ { id: a, type: ask_agent, agent: main, prompt: p, on_error: retry, retry: { max_attempts: 3, delay_seconds: 30 } } ]`);
  r.send({ type: 'step.failed', step: 'a', n: 2, error: 'about another attempt' });
  t.equal(r.run().steps.a!.status, 'running', 'a failure of another execution is ignored');
  r.fail('a', 'first');
  const rec = r.run().steps.a!;
  t.equal(rec.status, 'pending');
  t.same(runTimers(r.run()).map((x) => [x.key, x.at]), [[`retry:a:2:1`, rec.retry_at]]);
  t.equal(rec.retry_at, (r.facts.at(-1)!.data as { at_ms: number }).at_ms + 30_000);
  r.send({ type: 'retry.due', step: 'a', attempt: 3 });
  t.equal(r.run().steps.a!.status, 'pending', 'a retry for the wrong attempt is ignored');
  r.send(runTimers(r.run())[0]!.input(0) as never);
  t.same([r.run().steps.a!.status, r.run().steps.a!.attempts], ['running', 2]);
  r.fail('a', 'second');
  r.send({ type: 'retry.due', step: 'a', attempt: 3 });
  r.fail('a', 'third');
  t.equal(r.value(), 'failed');
  t.equal(r.run().error, 'step a failed (after 3 attempts): third');
  t.equal(r.run().executions, 3);
});

await t.test('on_error retry without a block: three attempts back to back, then success carries on', async (t) => {
  const r = given(`steps: [ { id: a, type: notify, message: m, on_error: retry }, { id: b, type: notify, message: n } ]`);
  r.fail('a').fail('a');
  t.equal(r.run().steps.a!.attempts, 3);
  r.done('a');
  t.same(runningEffects(r.run()).map((e) => e.step), ['b']);
});

await t.test('on_error fallback goes to its step; skip carries on with the next step in the file', async (t) => {
  const r = given(`
steps:
  - { id: a, type: ask_agent, agent: main, prompt: p, on_error: fallback, fallback: { goto: rescue }, goto: end }
  - { id: b, type: notify, message: b, on_error: skip, goto: end }
  - { id: rescue, type: notify, message: r }
  - { id: end, type: notify, message: e }
`);
  r.fail('a');
  t.equal(r.run().steps.a!.status, 'failed');
  t.same(runningEffects(r.run()).map((e) => e.step), ['rescue']);
  r.done('rescue').done('end');
  t.equal(r.value(), 'completed');

  const s = given(`
steps:
  - { id: b, type: notify, message: b, on_error: skip, goto: end }
  - { id: next, type: notify, message: n }
  - { id: end, type: notify, message: e }
`);
  s.fail('b', 'no chat');
  t.equal(s.run().steps.b!.status, 'skipped');
  t.equal(s.run().steps.b!.error, 'skipped after an error: no chat');
  t.same(runningEffects(s.run()).map((e) => e.step), ['next'], 'skip is not completion: goto is not taken');
});

await t.test('a step timeout: the deadline is in the state, the timer input fails the attempt, a late answer is ignored', async (t) => {
  const r = given(`steps: [ { id: a, type: ask_agent, agent: main, prompt: p, timeout: 5, on_error: skip }, { id: b, type: notify, message: m } ]`);
  const [timer] = runTimers(r.run());
  t.equal(timer!.at, r.run().started_at + 5000);
  const n = r.n('a');
  r.send(timer!.input(0) as never);
  t.match(r.facts.find((f) => f.type === 'workflow.step_failed')!.data, { step: 'a', n, reason: 'timeout', error: 'timed out after 5 s' });
  r.send({ type: 'step.done', step: 'a', n, output: 'too late' });
  t.equal(r.run().outputs.a, undefined);
  t.equal(r.run().steps.a!.status, 'skipped');
  t.same(runTimers(r.run()), [], 'notify has no default timeout');
});

await t.test('ask_agent takes the run\'s default step timeout when it sets none', async (t) => {
  const r = given(`steps: [ { id: a, type: ask_agent, agent: main, prompt: p } ]`);
  t.equal(r.run().steps.a!.deadline_ms, r.run().started_at + 3600 * 1000);
});

await t.test('parallel: branches start together, the block completes when all have, outputs are addressable', async (t) => {
  const r = given(`
steps:
  - id: fan
    type: parallel
    steps:
      - { id: x, type: ask_agent, agent: main, prompt: px }
      - { id: y, type: notify, message: py }
  - { id: after, type: notify, message: "$steps.x.output" }
`);
  t.same(runningEffects(r.run()).map((e) => [e.step, e.parent]), [['x', 'fan'], ['y', 'fan']]);
  r.done('y');
  t.equal(r.run().steps.fan!.status, 'running');
  r.done('x', 'X says');
  t.equal(r.run().steps.fan!.status, 'completed');
  t.same(runningEffects(r.run()).map((e) => e.text), ['X says']);
});

await t.test('parallel fails fast: a branch that fails for good stops its siblings (skipped) and fails the block; its on_error applies', async (t) => {
  const yaml = (onError: string) => `
steps:
  - id: fan
    type: parallel
    on_error: ${onError}
    steps:
      - { id: x, type: ask_agent, agent: main, prompt: px }
      - { id: y, type: ask_agent, agent: main, prompt: py, on_error: retry, retry: { max_attempts: 2, delay_seconds: 10 } }
      - { id: z, type: notify, message: pz }
  - { id: after, type: notify, message: done }
`;
  const abort = given(yaml('abort'));
  abort.done('z');
  abort.fail('y');
  t.equal(abort.run().steps.y!.status, 'pending', 'y waits for its retry');
  abort.fail('x', 'crashed');
  t.equal(abort.value(), 'failed');
  t.same(['x', 'y', 'z'].map((s) => abort.run().steps[s]!.status), ['failed', 'skipped', 'completed']);
  t.equal(abort.run().error, 'step fan failed: branch x failed: crashed');
  t.same(runTimers(abort.run()), [], 'the stopped retry is not armed');

  const skip = given(yaml('skip'));
  skip.fail('x');
  t.same(['x', 'y', 'z', 'fan'].map((s) => skip.run().steps[s]!.status), ['failed', 'skipped', 'skipped', 'skipped']);
  t.same(runningEffects(skip.run()).map((e) => e.step), ['after']);

  const retry = given(yaml('retry'));
  retry.fail('x');
  t.same(runningEffects(retry.run()).map((e) => e.step), ['x', 'y', 'z'], 'a retried block runs every branch again');
  t.equal(retry.run().steps.fan!.attempts, 2);
});

await t.test('a branch that skips counts as settled', async (t) => {
  const r = given(`
steps:
  - id: fan
    type: parallel
    steps:
      - { id: x, type: notify, message: px, on_error: skip }
      - { id: y, type: notify, message: py }
`);
  r.fail('x').done('y');
  t.equal(r.value(), 'completed');
});

await t.test('goto loops are bounded by the cap on step executions', async (t) => {
  const r = given(`steps: [ { id: again, type: notify, message: tick, goto: again } ]`);
  for (let i = 0; i < MAX_STEP_EXECUTIONS; i++) r.done('again');
  t.equal(r.value(), 'failed');
  t.equal(r.run().executions, MAX_STEP_EXECUTIONS);
  t.match(r.run().error!, /cap of 1000 step executions/);
});

await t.test('a condition that cannot be evaluated and a text over the cap are errors of that step', async (t) => {
  const bad = given(`steps: [ { id: c, type: condition, if: "$nope == 'x'", then: c, on_error: skip }, { id: n, type: notify, message: ok } ]`);
  t.equal(bad.run().steps.c!.status, 'skipped');
  t.match(bad.run().steps.c!.error!, /condition/);
  const big = given(`steps: [ { id: n, type: notify, message: "$big$big" } ]`, { variables: { big: 'x'.repeat(200 * 1024) } });
  t.equal(big.value(), 'failed');
  t.match(big.run().error!, /over 262144 characters/);
});

await t.test('a run folded from its facts is the run that wrote them, and resumes where it was', async (t) => {
  const r = given(`steps: [ { id: a, type: ask_agent, agent: main, prompt: p }, { id: q, type: wait_for_reply, message: "?" }, { id: b, type: notify, message: "$steps.q.output" } ]`);
  r.done('a', 'answer');
  t.same(foldWorkflowRun(r.facts), r.run());
  const restored = restoreWorkflowRun(r.facts)!;
  t.equal(restored.value, 'waiting');
  const actor = createActor(workflowRunMachine, { snapshot: workflowRunMachine.resolveState(restored), input: restored.context.start });
  const facts: Fact[] = [];
  actor.on('*', (f: Fact) => void facts.push(f));
  actor.start();
  actor.send({ type: 'reply', text: 'go', now: 5 });
  t.same(facts.map((f) => f.type), ['workflow.input_received', 'workflow.step_completed', 'workflow.step_started']);
  t.equal(actor.getSnapshot().context.run!.steps.b!.text, 'go');
  t.equal(restoreWorkflowRun([...r.facts, { type: 'workflow.run_cancelled', data: { by: null, at_ms: 1 } }]), null, 'a finished run is not restored');
});

await t.test('external inputs are journaled before the facts they cause; ignored ones and the machine\'s own timers are not', async (t) => {
  const r = given(`steps: [ { id: a, type: ask_agent, agent: main, prompt: p, timeout: 5, on_error: retry, retry: { max_attempts: 2, delay_seconds: 0 } }, { id: q, type: wait_for_reply, message: "?" } ]`);
  r.send({ type: 'step.done', step: 'a', n: 99, output: 'not this attempt' });
  t.same(r.journal, [], 'an answer for another attempt changes nothing and is not written');
  r.send({ type: 'step.failed', step: 'a', n: 1, error: 'boom', now: 2_000_000 });
  r.send(runTimers(r.run())[0]!.input(0) as never);
  t.same(r.journal.map((f) => f.data), [{ input: { type: 'step.failed', step: 'a', n: 1, error: 'boom', reason: 'error' }, at_ms: 2_000_000 }], 'the timeout is the machine\'s own');
  r.send({ type: 'reply', text: 'early' });
  t.equal(r.journal.length, 1, 'a reply while not waiting is ignored');
  r.send({ type: 'resume' });
  t.equal(r.journal.length, 1, 'a resume of a finished run writes nothing');
  t.equal(r.value(), 'failed');

  const q = given(`steps: [ { id: q, type: wait_for_reply, message: "?" } ]`);
  const long = 'y'.repeat(300 * 1024);
  q.send({ type: 'reply', text: long });
  t.match(q.journal[0]!.data, { input: { type: 'reply' } });
  t.equal((q.journal[0]!.data as { input: { text: string } }).input.text, q.run().outputs.q, 'the journal keeps the reply as bounded as the run does');
});

await t.test('timers are the machine\'s delays on its clock: a timeout and a retry fire when due, with the moment they were due', async (t) => {
  const clock = new SimulatedClock();
  // The helper starts the run at 1 001 000.
  clock.set(1_001_000);
  const r = given(`steps: [ { id: a, type: ask_agent, agent: main, prompt: p, timeout: 30, on_error: retry, retry: { max_attempts: 2, delay_seconds: 60 } } ]`, { clock });
  clock.increment(29_999);
  t.equal(r.run().steps.a!.status, 'running', 'not before its deadline');
  clock.increment(1);
  t.match(r.facts.find((f) => f.type === 'workflow.step_failed')!.data, { step: 'a', n: 1, reason: 'timeout', at_ms: 1_031_000 });
  t.match(r.facts.at(-1)!, { type: 'workflow.step_retry_scheduled', data: { attempt: 2, due_ms: 1_091_000 } });
  clock.increment(59_999);
  t.equal(r.run().steps.a!.status, 'pending', 'the retry waits its delay');
  clock.increment(1);
  t.match(r.run().steps.a!, { status: 'running', attempts: 2, deadline_ms: 1_121_000 });
  r.send({ type: 'step.done', step: 'a', n: 2, output: 'ok', now: 1_100_000 });
  t.equal(r.value(), 'completed');
  clock.increment(60_000);
  t.equal(r.facts.filter((f) => f.type === 'workflow.step_failed').length, 1, 'the answered attempt\'s deadline was cancelled');
});

await t.test('a restored run has no timers until resumed; resume arms them for the time left and fires the ones past due at once', async (t) => {
  const clock = new SimulatedClock();
  // The helper starts the run at 1 001 000.
  clock.set(1_001_000);
  const r = given(`
steps:
  - id: fan
    type: parallel
    steps:
      - { id: x, type: ask_agent, agent: main, prompt: px, timeout: 30 }
      - { id: y, type: ask_agent, agent: main, prompt: py, timeout: 90 }
`, { clock });
  r.actor.stop();
  const restore = (at: number) => {
    const c = new SimulatedClock();
    c.set(at);
    const state = restoreWorkflowRun([...r.journal, ...r.facts])!;
    const actor = createActor(workflowRunMachine, { snapshot: workflowRunMachine.resolveState(state), clock: c, input: state.context.start });
    const facts: Fact[] = [];
    actor.on('*', (f: Fact) => void facts.push(f));
    actor.start();
    return { c, actor, facts };
  };
  const early = restore(1_011_000);
  early.c.increment(60_000);
  t.same(early.facts, [], 'nothing fires without a resume');
  early.actor.stop();

  const soon = restore(1_011_000);
  soon.actor.send({ type: 'resume', now: 1_011_000 });
  t.same(soon.facts.map((f) => f.data), [{ input: { type: 'resume' }, at_ms: 1_011_000 }], 'a resume is written even when nothing is due');
  soon.c.increment(19_999);
  t.equal(soon.facts.length, 1, 'x keeps its deadline, not a fresh 30 s');
  soon.c.increment(1);
  t.match(soon.facts.slice(1), [{ type: 'workflow.step_failed', data: { step: 'x', reason: 'timeout', at_ms: 1_031_000 } }]);
  soon.actor.stop();

  const late = restore(1_051_000);
  late.actor.send({ type: 'resume', now: 1_051_000 });
  t.match(late.facts.map((f) => [f.type, (f.data as { step?: string }).step]), [
    ['workflow.input_received', undefined],
    ['workflow.step_failed', 'x'],
    ['workflow.step_failed', 'fan'],
    ['workflow.step_skipped', 'y'],
    ['workflow.run_failed', 'fan'],
  ], 'x\'s deadline passed while nothing ran: it times out in the resume, at the resume\'s time');
  t.equal((late.facts[1]!.data as { at_ms: number }).at_ms, 1_051_000);
  late.c.increment(60_000);
  t.equal(late.facts.length, 5, 'y\'s timer went with its run');
});
