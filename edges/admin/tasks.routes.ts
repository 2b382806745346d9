import * as v from 'valibot';
import { AnswerTaskBodySchema, CreateTaskBodySchema, DEFAULT_TASK_LIST_LIMIT, MAX_TASK_LIST_LIMIT, TASK_COMMANDS, TaskIdSchema, type Principal } from '../../schemas/index.js';
import { json, parseWith, withBody, type Route } from '../http/index.js';
import { adminAuth } from './admin-auth.js';
import type { AdminDeps } from './admin-deps.js';
import { pathParam, queryLimit } from './query-params.js';

/*
 * SPEC.md "Admin REST: tasks" with WIRE.md §2's task. Create, cancel, delete and answer answer 503
 * `no-task-hub` (after the role and ACL checks) until the task hub is attached. Delete (admin) takes
 * only a finished task and answer (operator) only a waiting one: otherwise 409 `task-state`.
 */
const Status = v.pipe(v.string(), v.maxLength(32, 'must be at most 32 characters'));

export function tasksRoutes(deps: AdminDeps): Route[] {
  const { bus } = deps;
  return [
    {
      method: 'GET',
      pattern: '/api/tasks',
      auth: adminAuth('tasks.read'),
      summary: 'Tasks the caller may see, newest first',
      handler: async (req, principal) => {
        const raw = req.query.get('status');
        const status = raw === null || raw === '' ? null : parseWith(Status, raw, 'invalid-query', 'query.status');
        return json(200, await bus.send(TASK_COMMANDS.list, { principal, status, limit: queryLimit(req, DEFAULT_TASK_LIST_LIMIT, MAX_TASK_LIST_LIMIT) }));
      },
    },
    {
      method: 'GET',
      pattern: '/api/tasks/:id',
      auth: adminAuth('tasks.read'),
      handler: async (req, principal) => json(200, await bus.send(TASK_COMMANDS.get, { principal, id: pathParam(req, 'id', TaskIdSchema) })),
    },
    {
      method: 'POST',
      pattern: '/api/tasks',
      auth: adminAuth('tasks.create'),
      summary: 'Create a background task',
      maxBodyBytes: 256 * 1024,
      ...withBody(CreateTaskBodySchema, async (body, _req, principal: Principal) => json(201, await bus.send(TASK_COMMANDS.create, { principal, ...body }))),
    },
    {
      method: 'POST',
      pattern: '/api/tasks/:id/cancel',
      auth: adminAuth('tasks.cancel'),
      summary: 'Cancel a running task',
      handler: async (req, principal) => json(200, await bus.send(TASK_COMMANDS.cancel, { principal, id: pathParam(req, 'id', TaskIdSchema) })),
    },
    {
      method: 'DELETE',
      pattern: '/api/tasks/:id',
      auth: adminAuth('tasks.delete'),
      summary: 'Delete a finished task (its entry and folder)',
      handler: async (req, principal) => json(200, await bus.send(TASK_COMMANDS.remove, { principal, id: pathParam(req, 'id', TaskIdSchema) })),
    },
    {
      method: 'POST',
      pattern: '/api/tasks/:id/answer',
      auth: adminAuth('tasks.answer'),
      summary: "Answer a waiting task's question",
      maxBodyBytes: 512 * 1024,
      ...withBody(AnswerTaskBodySchema, async ({ answer }, req, principal: Principal) => json(200, await bus.send(TASK_COMMANDS.answer, { principal, id: pathParam(req, 'id', TaskIdSchema), answer }))),
    },
  ];
}
