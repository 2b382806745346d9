import * as v from 'valibot';

/*
 * Task records as the admin API shows them (SPEC.md "Task records", WIRE.md §2 Task) and as
 * `tasks.json` holds them. The task hub that writes the file comes in a later issue, so the reader
 * is lenient about the container (array, `{tasks: [...]}` or a map by id) and keeps unknown fields.
 */

export const TASK_STATUSES = ['running', 'waiting', 'done', 'failed', 'cancelled'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];
export const FINISHED_TASK_STATUSES: readonly string[] = ['done', 'failed', 'cancelled'];
export const ACTIVE_TASK_STATUSES: readonly string[] = ['running', 'waiting'];

const text = v.optional(v.nullable(v.string()), null);
const num = v.optional(v.nullable(v.number()), null);

export const TaskRecordSchema = v.looseObject({
  task_id: v.pipe(v.string(), v.minLength(1)),
  status: v.string(),
  name: text,
  parent_agent: text,
  agent: text,
  provider: text,
  model: text,
  prompt: text,
  description: text,
  result: text,
  /** Epoch seconds. */
  created_at: num,
  finished_at: num,
  elapsed_seconds: num,
});
export type TaskRecord = v.InferOutput<typeof TaskRecordSchema>;

/** WIRE.md §2's task. */
export const TaskViewSchema = v.object({
  task_id: v.string(),
  name: v.nullable(v.string()),
  status: v.string(),
  parent_agent: v.nullable(v.string()),
  agent: v.nullable(v.string()),
  provider: v.nullable(v.string()),
  model: v.nullable(v.string()),
  created_at: v.nullable(v.number()),
  elapsed_seconds: v.nullable(v.number()),
  prompt: v.nullable(v.string()),
  description: v.nullable(v.string()),
  result: v.nullable(v.string()),
});
export type TaskView = v.InferOutput<typeof TaskViewSchema>;

export const MAX_TASK_LIST_LIMIT = 500;
export const DEFAULT_TASK_LIST_LIMIT = 50;

export const TaskIdSchema = v.pipe(
  v.string('must be a string'),
  v.regex(/^[A-Za-z0-9_.-]+$/, 'must be letters, digits, _, . and - only'),
  v.check((s) => s !== '.' && s !== '..', 'must not be . or ..'),
  v.maxLength(128, 'must be at most 128 characters'),
);

/** WIRE.md §2: `POST /api/tasks {name, agent, prompt, provider?, model?}`. */
export const CreateTaskBodySchema = v.strictObject({
  name: v.pipe(v.string('must be a string'), v.trim(), v.minLength(1, 'must not be empty'), v.maxLength(200, 'must be at most 200 characters')),
  agent: v.pipe(v.string('must be a string'), v.regex(/^[a-zA-Z0-9_-]+$/, 'must be an agent name of letters, digits, _ and - only'), v.maxLength(64)),
  prompt: v.pipe(v.string('must be a string'), v.minLength(1, 'must not be empty'), v.maxLength(100_000, 'must be at most 100000 characters')),
  provider: v.optional(v.nullable(v.pipe(v.string('must be a string'), v.maxLength(64)))),
  model: v.optional(v.nullable(v.pipe(v.string('must be a string'), v.maxLength(200)))),
});
