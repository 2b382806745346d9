import { Subscription } from 'rxjs';
import type { Bus, Cause } from '../../bus/index.js';
import { MAIN_AGENT, SvcError, TASK_COMMANDS, TASK_STATUSES, type Principal, type Role, type SubAgentConfig, type TaskRecord, type TaskView } from '../../schemas/index.js';
import { agentAccess, unrestricted } from '../../machines/index.js';
import type { TasksReadModel } from '../../store/index.js';
import { recordOf } from './tasks-file-writer.js';

/*
 * Tasks as the admin API sees them (SPEC.md "Admin REST: tasks, sessions", WIRE.md §2 Task): read
 * from the tasks projection of the log, the read model tasks.json is also written from. Creating and cancelling are the task hub's, after the
 * access checks made here; without a hub they are answered `no-task-hub` (503), so a caller still
 * learns first whether it may.
 */

export interface TaskQueriesDeps {
  bus: Bus;
  tasks: TasksReadModel;
  registry: () => readonly SubAgentConfig[];
  /** The task hub once it runs (it starts after the agents); absent or null: `no-task-hub`. */
  hub?: () => TaskHubApi | null;
}

/** What the admin API needs of the task hub (actors/tasks/task-hub.ts). */
export interface TaskHubApi {
  submit(sub: { from: string; prompt: string; name: string | null; provider: 'claude' | 'codex' | 'gemini' | null; model: string | null; chat_id: null; topic_id: null; transport: null; caller_user: string | null; caller_role: Role | null }, cause: Cause): Promise<{ task_id: string }>;
  cancel(id: string, from: null, cause: Cause): Promise<{ task_id: string; status: string }>;
  delete(id: string, from: null, cause: Cause): Promise<{ task_id: string; deleted: boolean }>;
  resume(id: string, prompt: string, from: null, cause: Cause): Promise<{ task_id: string; status: string }>;
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
  const { bus } = deps;
  const records = () => deps.tasks.all().map(recordOf);
  const noHub = (what: string) => new SvcError('no-task-hub', `${what}: the task hub is not running`);
  const find = (p: Principal, id: string): TaskRecord => {
    const found = deps.tasks.get(id);
    const task = found && recordOf(found);
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
      return records()
        .filter((t) => (status === null || t.status === status) && taskVisibleTo(principal, t, deps.registry()))
        .sort((a, b) => (b.created_at ?? 0) - (a.created_at ?? 0))
        .slice(0, limit)
        .map((t) => taskView(t, now));
    }),
  );
  subs.add(bus.handle(TASK_COMMANDS.get, 'tasks', ({ data }) => taskView(find(data.principal, data.id), bus.now())));
  subs.add(
    bus.handle(TASK_COMMANDS.create, 'tasks', (cmd) => {
      const { data } = cmd;
      const access = agentAccess(data.principal, data.agent, deps.registry());
      if (!access.allowed) throw new SvcError('agent-not-allowed', `create task: ${access.message}`);
      if (data.agent !== MAIN_AGENT && !deps.registry().some((r) => r.name === data.agent)) throw new SvcError('invalid-body', `body.agent: no agent named ${JSON.stringify(data.agent)}`);
      const hub = deps.hub?.();
      if (!hub) throw noHub('task not created');
      const provider = data.provider ?? null;
      if (provider !== null && !['claude', 'codex', 'gemini'].includes(provider)) throw new SvcError('invalid-body', `body.provider: must be claude, codex or gemini, got ${JSON.stringify(provider)}`);
      // The panel's user creates it for the agent: the agent is its parent, the user whom it runs for.
      return hub.submit(
        { from: data.agent, prompt: data.prompt, name: data.name, provider: provider as 'claude' | 'codex' | 'gemini' | null, model: data.model ?? null, chat_id: null, topic_id: null, transport: null, caller_user: data.principal.kind === 'user' ? data.principal.id : data.principal.acting_for, caller_role: data.principal.role },
        cmd,
      );
    }),
  );
  subs.add(
    bus.handle(TASK_COMMANDS.cancel, 'tasks', (cmd) => {
      const { data } = cmd;
      find(data.principal, data.id);
      const hub = deps.hub?.();
      if (!hub) throw noHub(`task ${JSON.stringify(data.id)} not cancelled`);
      return hub.cancel(data.id, null, cmd);
    }),
  );
  subs.add(
    bus.handle(TASK_COMMANDS.remove, 'tasks', (cmd) => {
      const { data } = cmd;
      find(data.principal, data.id);
      const hub = deps.hub?.();
      if (!hub) throw noHub(`task ${JSON.stringify(data.id)} not deleted`);
      return hub.delete(data.id, null, cmd);
    }),
  );
  subs.add(
    bus.handle(TASK_COMMANDS.answer, 'tasks', (cmd) => {
      const { data } = cmd;
      const task = find(data.principal, data.id);
      // Only a question is answered here: resuming a finished task is the parent agent's (resume_task.py).
      if (task.status !== 'waiting') throw new SvcError('task-state', `task ${data.id} is ${task.status}; only a waiting task (one that asked a question) can be answered`);
      const hub = deps.hub?.();
      if (!hub) throw noHub(`task ${JSON.stringify(data.id)} not answered`);
      return hub.resume(data.id, data.answer, null, cmd);
    }),
  );
  return subs;
}
