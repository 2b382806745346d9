// The task machine given/when/then: given a task (fresh, or restored where its facts left it),
// when the hub tells it what happened, then exactly these facts, or nothing for what is not allowed.
import t from 'tap';
import { createActor } from 'xstate';
import { foldTask, foldTasks, formatAge, parseTaskAction, renderTaskSelector, taskMachine, taskMachineState, type TaskCreated, type TaskMachineEvent, type TaskState } from '../../machines/index.js';
import type { AnyEnvelope, Fact } from '../../schemas/index.js';

const created: TaskCreated = {
  task_id: 't1', name: 'research', parent_agent: 'main', agent: 'main', transport: 'api', chat_id: 7, topic_id: null,
  caller_user: 'alice', prompt: 'Research X', provider: null, model: null, created_at: 1000,
};
const run = { provider: 'claude', model: 'opus', session_id: 's-1' };

function drive(events: TaskMachineEvent[], from?: TaskState) {
  const restored = from ? taskMachineState(from) : null;
  const actor = createActor(taskMachine, restored ? { input: created, snapshot: taskMachine.resolveState(restored as never) } : { input: created });
  const facts: Fact[] = [];
  actor.on('*', (f) => void facts.push(f));
  actor.start();
  for (const e of events) actor.send(e);
  const snap = actor.getSnapshot();
  return { facts, value: snap.value, status: snap.status, context: snap.context };
}

const types = (facts: Fact[]) => facts.map((f) => f.type);

await t.test('given a new task, when it starts, then task.created with its input and status running', async (t) => {
  const r = drive([]);
  t.same(r.facts, [{ type: 'task.created', data: created }]);
  t.equal(r.context.status, 'running');
  t.equal(r.context.runs, 1);
});

await t.test('ask_parent round trip: running → waiting → running → done, each a fact, and the record follows', async (t) => {
  const r = drive([
    { type: 'ask', question: 'Which year?', now: 1010 },
    { type: 'ask', question: 'again?', now: 1011 },
    { type: 'answer', answer: '2025', now: 1020 },
    { type: 'answer', answer: 'twice', now: 1021 },
    { type: 'complete', result: 'Done', ...run, now: 1030 },
  ]);
  t.same(r.facts.slice(1), [
    { type: 'task.question_asked', data: { question: 'Which year?', at: 1010 } },
    { type: 'task.answered', data: { answer: '2025', at: 1020 } },
    { type: 'task.completed', data: { result: 'Done', ...run, at: 1030 } },
  ], 'a second question while waiting and an answer nobody asked for are not facts');
  t.equal(r.value, 'done');
  t.match(r.context, { status: 'done', result: 'Done', provider: 'claude', model: 'opus', session_id: 's-1', finished_at: 1030, question: null });
});

await t.test('the provider and model a run resolved are persisted; a run that never started keeps the overrides', async (t) => {
  const r = drive([{ type: 'fail', reason: 'timeout', result: 'partial', provider: null, model: null, session_id: null, now: 5 }]);
  t.match(r.context, { status: 'failed', reason: 'timeout', result: 'partial', provider: null, session_id: null });
  t.same(types(r.facts), ['task.created', 'task.failed']);
});

await t.test('resume: from done, failed, cancelled and waiting with a stored session; refused without one or while running', async (t) => {
  for (const end of [
    { type: 'complete', result: 'ok', ...run, now: 2 },
    { type: 'fail', reason: 'exit-code', result: '', ...run, now: 2 },
  ] as TaskMachineEvent[]) {
    const r = drive([end, { type: 'resume', prompt: 'more', now: 3 }, { type: 'complete', result: 'more done', ...run, now: 4 }]);
    t.same(types(r.facts), ['task.created', end.type === 'complete' ? 'task.completed' : 'task.failed', 'task.resumed', 'task.completed']);
    t.match(r.context, { status: 'done', runs: 2, result: 'more done', finished_at: 4 });
  }
  const done = drive([{ type: 'complete', result: 'ok', ...run, now: 2 }]).context;
  const cancelled: TaskState = { ...done, status: 'cancelled' };
  t.same(types(drive([{ type: 'resume', prompt: 'again', now: 3 }], cancelled).facts), ['task.resumed'], 'a cancelled task with a session resumes');
  const waiting: TaskState = { ...done, status: 'waiting', question: 'Proceed?', finished_at: null };
  const w = drive([{ type: 'resume', prompt: 'yes', now: 3 }], waiting);
  t.same(w.facts, [{ type: 'task.resumed', data: { prompt: 'yes', at: 3 } }], 'a waiting task whose run is gone is answered by a resume');
  t.match(w.context, { status: 'running', question: null });

  t.same(drive([{ type: 'resume', prompt: 'x', now: 1 }]).facts.length, 1, 'a running task is not resumed');
  const noSession = drive([{ type: 'fail', reason: 'spawn-failed', result: '', provider: null, model: null, session_id: null, now: 2 }, { type: 'resume', prompt: 'x', now: 3 }]);
  t.same(types(noSession.facts), ['task.created', 'task.failed'], 'no session id: nothing to resume');
  t.equal(noSession.value, 'failed');
});

await t.test('cancel: from running and waiting, never from a finished state', async (t) => {
  t.same(types(drive([{ type: 'cancel', now: 2 }, { type: 'complete', result: 'late', ...run, now: 3 }]).facts), ['task.created', 'task.cancelled'], 'a run ending after the cancel changes nothing');
  t.same(types(drive([{ type: 'ask', question: 'q', now: 2 }, { type: 'cancel', now: 3 }]).facts), ['task.created', 'task.question_asked', 'task.cancelled']);
  t.same(types(drive([{ type: 'complete', result: 'ok', ...run, now: 2 }, { type: 'cancel', now: 3 }]).facts), ['task.created', 'task.completed']);
});

await t.test('a waiting task whose run ends on its own (deadline, error) finishes with that run', async (t) => {
  const r = drive([{ type: 'ask', question: 'q', now: 2 }, { type: 'fail', reason: 'timeout', result: '', ...run, now: 3 }]);
  t.same(types(r.facts), ['task.created', 'task.question_asked', 'task.failed']);
  t.match(r.context, { status: 'failed', question: null, session_id: 's-1' });
});

await t.test('delete: only a finished task, and then the actor ends', async (t) => {
  t.same(types(drive([{ type: 'delete', now: 2 }]).facts), ['task.created'], 'a running task is not deleted');
  t.same(types(drive([{ type: 'ask', question: 'q', now: 2 }, { type: 'delete', now: 3 }]).facts), ['task.created', 'task.question_asked'], 'nor a waiting one');
  const r = drive([{ type: 'cancel', now: 2 }, { type: 'delete', now: 3 }]);
  t.same(types(r.facts), ['task.created', 'task.cancelled', 'task.deleted']);
  t.equal(r.status, 'done');
  t.equal(r.context.deleted, true);
});

await t.test('the fold of the facts is the machine context; a restore lands where the facts left the task', async (t) => {
  const r = drive([{ type: 'ask', question: 'q', now: 2 }, { type: 'answer', answer: 'a', now: 3 }, { type: 'complete', result: 'ok', ...run, now: 4 }, { type: 'resume', prompt: 'p', now: 5 }]);
  t.same(foldTask(r.facts), r.context);
  const restored = taskMachineState(r.context)!;
  t.equal(restored.value, 'working', 'a task created long ago restores as working, so nothing is created twice');
  const again = drive([{ type: 'ask', question: 'q2', now: 6 }], r.context);
  t.same(again.facts, [{ type: 'task.question_asked', data: { question: 'q2', at: 6 } }]);
  t.equal(taskMachineState({ ...r.context, deleted: true }), null, 'a deleted task is not restored');

  const env = (seq: number, stream: string, f: Fact): AnyEnvelope => ({ seq, at: '2026-11-21T07:00:00.000Z', stream, type: f.type, data: f.data as AnyEnvelope['data'] });
  const all = foldTasks([...r.facts.map((f, i) => env(i + 1, 'task:t1', f)), env(99, 'turn:x', r.facts[0]!)]);
  t.same([...all.keys()], ['t1'], 'only task streams are folded');
});

// ---------------------------------------------------------------- the /tasks selector

await t.test('parseTaskAction: the four callbacks, and a clear refusal for anything else', async (t) => {
  t.same(parseTaskAction(undefined), { kind: 'refresh' });
  t.same(parseTaskAction('tsc:refresh'), { kind: 'refresh' });
  t.same(parseTaskAction(' tsc:cancel_all '), { kind: 'cancel_all' });
  t.same(parseTaskAction('tsc:delete_finished'), { kind: 'delete_finished' });
  t.same(parseTaskAction('tsc:cancel:a1b2_c.d-e'), { kind: 'cancel', task_id: 'a1b2_c.d-e' });
  const hostile = ['tsc:cancel:../x', 'tsc:cancel:..', 'tsc:cancel:', 'tsc:cancel:a/b', `tsc:cancel:${'a'.repeat(129)}`, 'tsc:cancel:a b', 'tsc:drop_all', 'tsc:', 'tsc:refresh now', 'hello', `tsc:${'x'.repeat(100_000)}`];
  for (const h of hostile) {
    const r = parseTaskAction(h);
    t.equal(r.kind, 'invalid', JSON.stringify(h.slice(0, 40)));
    if (r.kind === 'invalid') t.ok(r.message.length < 200, 'the refusal quotes only a short head');
  }
});

await t.test('renderTaskSelector: sections with id, name, status, age; buttons as callback data', async (t) => {
  const now = 10_000;
  const tasks = [
    { task_id: 'r1', name: 'research', status: 'running', created_at: now - 125 },
    { task_id: 'w1', name: 'asks\nsomething', status: 'waiting', created_at: now - 7300 },
    { task_id: 'd1', name: 'done one', status: 'done', created_at: now - 90_000 },
    { task_id: 'c1', name: 'gone', status: 'cancelled', created_at: now - 5 },
  ];
  const r = renderTaskSelector(tasks, now);
  t.equal(r.ok, true);
  t.match(r.text, /Running \(1\)\n  r1  research  running  2m\n/);
  t.match(r.text, /Waiting for answer \(1\)\n  w1  asks something  waiting  2h 1m\n/);
  t.match(r.text, /Finished \(2\)\n  c1  gone  cancelled  5s\n  d1  done one  done  1d 1h\n/);
  t.same(r.buttons.map((b) => b.data), ['tsc:cancel:r1', 'tsc:cancel:w1', 'tsc:cancel_all', 'tsc:delete_finished', 'tsc:refresh']);
  const empty = renderTaskSelector([], now, 'No task x in this chat; nothing changed.', false);
  t.match(empty.text, /^No task x in this chat; nothing changed\.\n\nTasks in this chat \(0\)\n\nRunning \(0\)\n  none/);
  t.equal(empty.ok, false);
  t.same(empty.buttons, [{ label: 'Refresh', data: 'tsc:refresh' }]);
  // A task id too long for a 64-byte callback is listed but gets no button.
  const long = renderTaskSelector([{ task_id: 'x'.repeat(60), name: 'n', status: 'running', created_at: now }], now);
  t.same(long.buttons.map((b) => b.data), ['tsc:refresh']);
  t.equal(formatAge(-3), '0s');
});
