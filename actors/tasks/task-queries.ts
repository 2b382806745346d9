import { Subscription } from 'rxjs';
import type { Bus } from '../../bus/index.js';
import { MAIN_AGENT, SvcError, TASK_COMMANDS, TASK_STATUSES, type Principal, type SubAgentConfig, type TaskRecord, type TaskView } from '../../schemas/index.js';
import { agentAccess, unrestricted } from '../../machines/index.js';
import { loadTasks, type HomePaths } from '../../store/index.js';

/*
 * Tasks as the admin API sees them (SPEC.md "Admin REST: tasks, sessions", WIRE.md §2 Task): read
 * from tasks.json as the task hub writes it. Creating and cancelling belong to the task hub (issue
 * 13); until it is attached they are answered `no-task-hub` (503), after the same access checks
 * the hub will make, so a caller learns first whether it may.
 */

export interface TaskQueriesDeps {
  bus: Bus;
  paths: HomePaths;
  registry: () => readonly SubAgentConfig[];
}

export function taskView(t: TaskRecord, nowMs: number): TaskView {
  const running = t.status === 'running' || t.status === 'waiting';
  const elapsed = t.elapsed_seconds ?? (t.created_at === null ? null : Math.max(0, (running ? nowMs / 1000 : (t.finished_at ?? nowMs / 1000)) - t.created_at));
  return {
    task_id: t.task_id,
    name: t.name,
    status: t.status,
    parent_agent: t.parent_agent,
    agent: t.agent,
    provider: t.provider,
    model: t.model,
    created_at: t.created_at,
    elapsed_seconds: elapsed === null ? null : Math.round(elapsed * 10) / 10,
    prompt: t.prompt,
    description: t.description,
    result: t.result,
  };
}

/**
 * SPEC.md filters tasks "by parent_agent or agent": a restricted caller sees a task when every agent
 * it names is allowed (a task naming none is nobody's in particular, so only unrestricted callers see it).
 */
export function taskVisibleTo(p: Principal, t: TaskRecord, registry: readonly SubAgentConfig[]): boolean {
  if (unrestricted(p) && p.kind !== 'agent') return true;
  const named = [t.parent_agent, t.agent].filter((a): a is string => a !== null && a !== '');
  return named.length > 0 && named.every((a) => agentAccess(p, a, registry).allowed);
}

export function startTaskQueries(deps: TaskQueriesDeps): Subscription {
  const { bus, paths } = deps;
  const noHub = (what: string) => new SvcError('no-task-hub', `${what}: the task hub is not attached in this version`);
  const find = (p: Principal, id: string): TaskRecord => {
    const task = loadTasks(paths).find((t) => t.task_id === id);
    if (!task) throw new SvcError('not-found', `task ${JSON.stringify(id)} does not exist`);
    if (!taskVisibleTo(p, task, deps.registry())) throw new SvcError('agent-not-allowed', `task ${JSON.stringify(id)} belongs to an agent you may not use`);
    return task;
  };

  const subs = new Subscription();
  subs.add(
    bus.handle(TASK_COMMANDS.list, 'tasks', ({ data }) => {
      const { principal, status, limit } = data;
      if (status !== null && !(TASK_STATUSES as readonly string[]).includes(status)) {
        throw new SvcError('invalid-query', `status must be one of ${TASK_STATUSES.join(', ')}, got ${JSON.stringify(status)}`);
      }
      const now = bus.now();
      return loadTasks(paths)
        .filter((t) => (status === null || t.status === status) && taskVisibleTo(principal, t, deps.registry()))
        .sort((a, b) => (b.created_at ?? 0) - (a.created_at ?? 0))
        .slice(0, limit)
        .map((t) => taskView(t, now));
    }),
  );
  subs.add(bus.handle(TASK_COMMANDS.get, 'tasks', ({ data }) => taskView(find(data.principal, data.id), bus.now())));
  subs.add(
    bus.handle(TASK_COMMANDS.create, 'tasks', ({ data }) => {
      const access = agentAccess(data.principal, data.agent, deps.registry());
      if (!access.allowed) throw new SvcError('agent-not-allowed', `create task: ${access.message}`);
      if (data.agent !== MAIN_AGENT && !deps.registry().some((r) => r.name === data.agent)) throw new SvcError('invalid-body', `body.agent: no agent named ${JSON.stringify(data.agent)}`);
      throw noHub('task not created');
    }),
  );
  subs.add(
    bus.handle(TASK_COMMANDS.cancel, 'tasks', ({ data }) => {
      find(data.principal, data.id);
      throw noHub(`task ${JSON.stringify(data.id)} not cancelled`);
    }),
  );
  return subs;
}
