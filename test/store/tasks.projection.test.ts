// The tasks read model folds the task facts inside each append, with the task machine's own fold's
// answers (machines/task.logic.ts), and a log written before it existed is folded into it on open.
import t from 'tap';
import { join } from 'node:path';
import { foldTasks } from '../../machines/index.js';
import { TASK_EVENTS, type AnyEnvelope } from '../../schemas/index.js';
import { PROJECTIONS, SqliteEventLog, foldTaskRow, tasksProjection, tasksReadModel, type FoldedTask } from '../../store/index.js';

const created = (task_id: string, at: number) => ({
  stream: `task:${task_id}`,
  type: TASK_EVENTS.created,
  data: { task_id, name: task_id, parent_agent: 'main', agent: 'main', transport: 'api', chat_id: 7, topic_id: null, caller_user: 'alice', caller_role: 'admin', prompt: 'p', provider: null, model: null, created_at: at },
});
const run = { provider: 'claude', model: 'opus', session_id: 's-1' };
const FACTS = [
  created('a', 100),
  { stream: 'task:a', type: TASK_EVENTS.question_asked, data: { question: 'year?', at: 101 } },
  { stream: 'task:a', type: TASK_EVENTS.answered, data: { answer: '2025', at: 102 } },
  { stream: 'task:a', type: TASK_EVENTS.completed, data: { result: 'done', ...run, at: 103 } },
  created('b', 110),
  { stream: 'task:b', type: TASK_EVENTS.failed, data: { reason: 'timeout', result: 'slow', provider: null, model: null, session_id: null, at: 111 } },
  { stream: 'task:a', type: TASK_EVENTS.resumed, data: { prompt: 'again', at: 120 } },
  { stream: 'task:a', type: TASK_EVENTS.cancelled, data: { at: 121 } },
  created('c', 130),
  { stream: 'task:c', type: TASK_EVENTS.failed, data: { reason: 'stale', result: 'x', ...run, at: 131 } },
  { stream: 'task:c', type: TASK_EVENTS.deleted, data: { at: 132 } },
  // Not the fold's: ignored by both.
  { stream: 'task:zz', type: TASK_EVENTS.answered, data: { answer: 'no task', at: 140 } },
] as const;

await t.test('folded inside each append: the read model answers as the task machine’s fold does, deleted tasks gone, creation order kept', async (t) => {
  const log = SqliteEventLog.open(join(t.testdir(), 'events.db'), { projections: PROJECTIONS });
  t.teardown(() => log.close());
  for (const f of FACTS) log.append([f as never], '2026-01-01T00:00:00.000Z');
  const model = tasksReadModel(log.projectionDb());
  const expected = [...foldTasks(log.read({ streamPrefix: 'task:' })).values()].filter((s) => !s.deleted);
  t.same(model.all(), expected);
  t.same(model.all().map((s) => `${s.task_id}:${s.status}:${s.runs}`), ['a:cancelled:2', 'b:failed:1']);
  t.same(model.get('b'), expected[1]);
  t.equal(model.get('c'), null, 'a deleted task leaves the read model');
  t.equal(model.get('nope'), null);
  t.equal(foldTaskRow(null, { type: TASK_EVENTS.answered, data: {} }), null, 'a fact before its task is created folds into nothing');
  t.same(foldTaskRow(model.get('a'), { type: 'task.unknown', data: {} }), model.get('a'), 'an unknown type changes nothing');
});

await t.test('a log written before the tasks projection existed is folded into it when opened', async (t) => {
  const path = join(t.testdir(), 'events.db');
  const others = PROJECTIONS.filter((p) => p !== tasksProjection);
  const old = SqliteEventLog.open(path, { projections: others });
  for (const f of FACTS) old.append([f as never], '2026-01-01T00:00:00.000Z');
  const facts: AnyEnvelope[] = old.read({ streamPrefix: 'task:' });
  old.close();
  const log = SqliteEventLog.open(path, { projections: PROJECTIONS });
  t.teardown(() => log.close());
  t.same(tasksReadModel(log.projectionDb()).all().map((s: FoldedTask) => s.task_id), ['a', 'b']);
  t.same(tasksReadModel(log.projectionDb()).all(), [...foldTasks(facts).values()].filter((s) => !s.deleted));
});
