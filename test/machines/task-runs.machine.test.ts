// The task run queue given/when/then: given the inputs the hub hands it, then exactly these facts
// (each input journaled, each start decided), and the same facts again when its stream is re-driven.
import t from 'tap';
import { SimulatedClock, createActor } from 'xstate';
import { redriveStream, MACHINE_REPLAYS } from '../../actors/index.js';
import { ORPHAN_SWEEP_INTERVAL_MS, admit, runStarted, taskRunsMachine, type TaskRunsEvent } from '../../machines/index.js';
import type { AnyEnvelope, Fact } from '../../schemas/index.js';

// Always a simulated clock: a real one would hold the sweep's 5-hour timer open.
function drive(events: TaskRunsEvent[], clock = new SimulatedClock()) {
  const actor = createActor(taskRunsMachine, { clock });
  const facts: Fact[] = [];
  actor.on('*', (f) => void facts.push(f));
  actor.start();
  for (const e of events) actor.send(e);
  return { actor, facts };
}

const req = (task_id: string, chat_id: number, max_parallel = 2, run = 1): TaskRunsEvent => ({ type: 'request', task_id, run, chat_id, max_parallel });
const started = (facts: Fact[]) => facts.filter((f) => f.type === 'task_run.started').map((f) => (f.data as { task_id: string }).task_id);

await t.test('given max_parallel 2, when three runs of one chat are asked for, then two start and the third waits for a place', async (t) => {
  const { actor, facts } = drive([req('a', 1), req('b', 1), req('c', 1), req('x', 2)]);
  t.same(started(facts), ['a', 'b', 'x'], 'the other chat is not held up');
  t.same(facts[0], { type: 'task_run.opened', data: {} });
  t.same(facts[1], { type: 'task_run.queued', data: { task_id: 'a', run: 1, chat_id: 1, max_parallel: 2 } }, 'the input is journaled before the start it causes');
  t.notOk(runStarted(actor.getSnapshot().context, 'c'));
  actor.send({ type: 'ended', task_id: 'a', run: 1, max_parallel: 2 });
  t.same(started(facts), ['a', 'b', 'x', 'c'], 'the end frees the place for the oldest queued run');
  t.ok(runStarted(actor.getSnapshot().context, 'c'));
});

await t.test('a late end of an earlier run frees its own place only, never the task’s later run', async (t) => {
  // Run 1 was cancelled and the task resumed while run 1's CLI was still being stopped.
  const { actor, facts } = drive([req('a', 1, 2, 1), req('a', 1, 2, 2), req('b', 1, 2)]);
  t.same(started(facts), ['a', 'a'], 'both runs hold a place while both CLIs live');
  actor.send({ type: 'ended', task_id: 'a', run: 1, max_parallel: 2 });
  t.same(started(facts), ['a', 'a', 'b']);
  t.same(actor.getSnapshot().context.running.map((r) => `${r.task_id}#${r.run}`), ['a#2', 'b#1'], 'run 2 keeps its place');
  t.ok(runStarted(actor.getSnapshot().context, 'a'));
});

await t.test('a dropped queued run never starts; a lower max_parallel holds new starts until enough runs end', async (t) => {
  const { actor, facts } = drive([req('a', 1, 1), req('b', 1, 1), req('c', 1, 1)]);
  actor.send({ type: 'drop', task_id: 'b', run: 1, max_parallel: 1 });
  actor.send({ type: 'ended', task_id: 'a', run: 1, max_parallel: 1 });
  t.same(started(facts), ['a', 'c']);
  t.same(actor.getSnapshot().context, { queued: [], running: [{ task_id: 'c', run: 1, chat_id: 1 }] });
  t.same(admit({ queued: [{ task_id: 'q', run: 1, chat_id: 1 }], running: [{ task_id: 'r1', run: 1, chat_id: 1 }, { task_id: 'r2', run: 1, chat_id: 1 }] }, 1).started, [], 'over the limit after a config change: nothing starts');
});

await t.test('the orphan sweep fires on the injected clock every interval, as a fact', async (t) => {
  const clock = new SimulatedClock();
  const { facts } = drive([], clock);
  clock.increment(ORPHAN_SWEEP_INTERVAL_MS - 1);
  t.same(facts.map((f) => f.type), ['task_run.opened']);
  clock.increment(1);
  clock.increment(ORPHAN_SWEEP_INTERVAL_MS);
  t.same(facts.map((f) => f.type), ['task_run.opened', 'task_run.sweep_due', 'task_run.sweep_due']);
});

await t.test('its stream re-drives to exactly its facts, across a restart; an altered start is named', async (t) => {
  const spec = MACHINE_REPLAYS.find((s) => s.name === 'task-runs')!;
  t.ok(spec.streams('task-runs'));
  const clock = new SimulatedClock();
  const first = drive([req('a', 1, 1), req('b', 1, 1), { type: 'ended', task_id: 'a', run: 1, max_parallel: 1 }], clock).facts;
  clock.increment(ORPHAN_SWEEP_INTERVAL_MS);
  const second = drive([req('c', 3, 1), { type: 'drop', task_id: 'c', run: 1, max_parallel: 1 }]).facts;
  const log: AnyEnvelope[] = [...first, ...second].map((f, i) => ({ seq: i + 1, at: new Date(0).toISOString(), stream: 'task-runs', type: f.type, data: f.data as AnyEnvelope['data'] }));
  t.same(redriveStream(spec, 'task-runs', log), [], 'queue, sweep and restart re-drive');
  const altered = log.map((e) => (e.type === 'task_run.started' && e.data.task_id === 'b' ? { ...e, data: { task_id: 'c', run: 1 } } : e));
  const seq = log.find((e) => e.type === 'task_run.started' && e.data.task_id === 'b')!.seq;
  t.match(redriveStream(spec, 'task-runs', altered), [{ machine: 'task-runs', seq, line: /the log has task_run\.started .*"c".*the machine emitted task_run\.started .*"b"/ }]);
  const skipped = log.filter((e) => !(e.type === 'task_run.ended'));
  const bStart = skipped.find((e) => e.type === 'task_run.started' && e.data.task_id === 'b')!.seq;
  t.same(
    redriveStream(spec, 'task-runs', skipped),
    [{ machine: 'task-runs', stream: 'task-runs', seq: bStart, line: `seq ${bStart}: the log has task_run.started {"run":1,"task_id":"b"}, the machine emitted nothing` }],
    'a start without the end that freed its place is named',
  );
});
