import * as v from 'valibot';
import { defineCommand } from '../command.js';
import { ChatButtonSchema } from '../agent-commands.schema.js';
import { PrincipalSchema } from '../principal.schema.js';
import { CreateTaskBodySchema, MAX_TASK_LIST_LIMIT, TaskIdSchema, TaskViewSchema } from '../task-record.schema.js';

/*
 * Tasks as the admin API reaches them (SPEC.md "Admin REST: tasks, sessions") and as agents' tool
 * scripts reach them through the internal API (SPEC.md "Internal localhost API", WIRE.md §3).
 * `task.create` and `task.cancel` are answered `no-task-hub` (503) after the role and ACL checks
 * when no task hub is attached; the internal commands then have no handler at all (`no-handler`, 503).
 */

const AgentName = v.pipe(v.string('must be a string'), v.regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be an agent name (1-64 characters of letters, digits, _ and -)'));
/** Bytes of UTF-8: the prompt ends up on a CLI's argv or stdin. */
export const MAX_TASK_TEXT_BYTES = 256 * 1024;
export const TaskText = (what: string) =>
  v.pipe(
    v.string('must be a string'),
    v.check((s) => s.trim() !== '', `must be a non-empty ${what}`),
    v.check((s) => Buffer.byteLength(s, 'utf8') <= MAX_TASK_TEXT_BYTES, `must be a ${what} of at most ${MAX_TASK_TEXT_BYTES} bytes of UTF-8`),
  );
const ChatId = v.pipe(v.number('must be a number'), v.check((n) => Number.isSafeInteger(n), 'must be a whole number'));
const Owner = v.optional(v.nullable(AgentName), null);

/** `POST /tasks/create` (WIRE.md §3); `transport` beside chat_id/topic_id names the parent chat's transport when the tool knows it. */
export const SubmitTaskSchema = v.object({
  from: AgentName,
  prompt: TaskText('prompt'),
  name: v.optional(v.nullable(v.pipe(v.string('must be a string'), v.maxLength(200, 'must be at most 200 characters'))), null),
  provider: v.optional(v.nullable(v.picklist(['claude', 'codex', 'gemini'], 'must be claude, codex or gemini')), null),
  model: v.optional(v.nullable(v.pipe(v.string('must be a string'), v.maxLength(200, 'must be at most 200 characters'))), null),
  chat_id: v.optional(v.nullable(ChatId), null),
  topic_id: v.optional(v.nullable(ChatId), null),
  transport: v.optional(v.nullable(v.pipe(v.string('must be a string'), v.regex(/^[a-z][a-z0-9_-]{0,31}$/, 'must be a transport name'))), null),
});
export const ResumeTaskSchema = v.object({ task_id: TaskIdSchema, prompt: TaskText('prompt'), from: Owner });
/** `from`: the agent asking, which must be the task's parent (its run carries the parent's token). */
export const AskParentSchema = v.object({ task_id: TaskIdSchema, question: TaskText('question'), from: Owner });
/** `POST /api/tasks/{id}/answer`: the answer a waiting task's question gets from the panel. */
export const AnswerTaskBodySchema = v.strictObject({ answer: TaskText('answer') });
export const TaskRefSchema = v.object({ task_id: TaskIdSchema, from: Owner });
export const TaskOwnerQuerySchema = v.object({ from: v.optional(AgentName) });

/**
 * What a `/tasks` callback asks (SPEC.md "Chat commands": `tsc:refresh`, `tsc:cancel:<task_id>`,
 * `tsc:cancel_all`, `tsc:delete_finished`), already parsed (machines/task-selector.logic.ts).
 */
export const TaskSelectorActionSchema = v.variant('kind', [
  v.object({ kind: v.literal('refresh') }),
  v.object({ kind: v.literal('cancel'), task_id: TaskIdSchema }),
  v.object({ kind: v.literal('cancel_all') }),
  v.object({ kind: v.literal('delete_finished') }),
]);
export type TaskSelectorAction = v.InferOutput<typeof TaskSelectorActionSchema>;
/** The selector as text and buttons; `ok` false when the action was refused (nothing changed). */
export const TaskSelectorAnswerSchema = v.object({ text: v.string(), buttons: v.array(ChatButtonSchema), ok: v.boolean() });
export type TaskSelectorAnswer = v.InferOutput<typeof TaskSelectorAnswerSchema>;

const TaskAnswer = v.object({ task_id: v.string(), status: v.string() });

export const TASK_COMMANDS = {
  list: defineCommand(
    'task.list',
    v.strictObject({ principal: PrincipalSchema, status: v.nullable(v.pipe(v.string(), v.maxLength(32))), limit: v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(MAX_TASK_LIST_LIMIT)) }),
    v.array(TaskViewSchema),
  ),
  get: defineCommand('task.get', v.strictObject({ principal: PrincipalSchema, id: TaskIdSchema }), TaskViewSchema),
  create: defineCommand('task.create', v.strictObject({ principal: PrincipalSchema, ...CreateTaskBodySchema.entries }), v.object({ task_id: v.string() })),
  cancel: defineCommand('task.cancel', v.strictObject({ principal: PrincipalSchema, id: TaskIdSchema }), TaskAnswer),
  /** The admin API's delete: a finished task's entry and folder, after the ACL check. */
  remove: defineCommand('task.remove', v.strictObject({ principal: PrincipalSchema, id: TaskIdSchema }), v.object({ task_id: v.string(), deleted: v.boolean() })),
  /** The admin API's answer to a waiting task's question (what the parent's resume does), after the ACL check. */
  answer: defineCommand('task.answer', v.strictObject({ principal: PrincipalSchema, id: TaskIdSchema, answer: TaskText('answer') }), TaskAnswer),
  /** Internal API: an agent delegates a task; `principal` is the agent, acting for its caller user. */
  submit: defineCommand('task.submit', v.object({ principal: PrincipalSchema, ...SubmitTaskSchema.entries }), v.object({ task_id: v.string() }), { invalidCode: 'invalid-body' }),
  /** Runs a finished task again, or answers a waiting one (see actors/tasks/task-hub.ts). */
  resume: defineCommand('task.resume', ResumeTaskSchema, TaskAnswer, { invalidCode: 'invalid-body' }),
  /** Answered when the parent answers (`answer`) or the task ends first (`answer` null). */
  askParent: defineCommand('task.ask_parent', AskParentSchema, v.object({ task_id: v.string(), status: v.string(), answer: v.nullable(v.string()) }), { invalidCode: 'invalid-body' }),
  listOwned: defineCommand('task.list_owned', v.object({ from: v.nullable(AgentName) }), v.array(TaskViewSchema), { invalidCode: 'invalid-query' }),
  cancelOwned: defineCommand('task.cancel_owned', TaskRefSchema, TaskAnswer, { invalidCode: 'invalid-body' }),
  delete: defineCommand('task.delete', TaskRefSchema, v.object({ task_id: v.string(), deleted: v.boolean() }), { invalidCode: 'invalid-body' }),
  /** `/tasks` in a chat: the chat's tasks of that agent, after the action (which touches only those). */
  selector: defineCommand('task.selector', v.object({ agent: AgentName, chat_id: ChatId, action: TaskSelectorActionSchema }), TaskSelectorAnswerSchema),
} as const;
