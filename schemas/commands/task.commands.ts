import * as v from 'valibot';
import { defineCommand } from '../command.js';
import { PrincipalSchema } from '../principal.schema.js';
import { CreateTaskBodySchema, MAX_TASK_LIST_LIMIT, TaskIdSchema, TaskViewSchema } from '../task-record.schema.js';

/*
 * Tasks as the admin API reaches them (SPEC.md "Admin REST: tasks, sessions"). `task.create` and
 * `task.cancel` are answered `no-task-hub` (503) after the role and ACL checks until the task hub
 * (issue 13) takes them over.
 */
export const TASK_COMMANDS = {
  list: defineCommand(
    'task.list',
    v.strictObject({ principal: PrincipalSchema, status: v.nullable(v.pipe(v.string(), v.maxLength(32))), limit: v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(MAX_TASK_LIST_LIMIT)) }),
    v.array(TaskViewSchema),
  ),
  get: defineCommand('task.get', v.strictObject({ principal: PrincipalSchema, id: TaskIdSchema }), TaskViewSchema),
  create: defineCommand('task.create', v.strictObject({ principal: PrincipalSchema, ...CreateTaskBodySchema.entries }), v.object({ task_id: v.string() })),
  cancel: defineCommand('task.cancel', v.strictObject({ principal: PrincipalSchema, id: TaskIdSchema }), v.object({ task_id: v.string(), status: v.string() })),
} as const;
