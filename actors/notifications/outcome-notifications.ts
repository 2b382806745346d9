import type { Subscription } from 'rxjs';
import { followsFrom, type Bus } from '../../bus/index.js';
import { OUTCOME_FACT_TYPES, outcomeNotification, type OutcomeSubject } from '../../machines/index.js';
import { NOTIFICATION_COMMANDS, TASK_EVENTS, describeError, type Envelope } from '../../schemas/index.js';
import type { TasksReadModel } from '../../store/index.js';

/*
 * Every outcome SPEC.md's severity table names raises its notification here, from the fact that
 * records it (task.completed/failed, cron.run_finished, webhook.completed/failed): the actors that
 * finish tasks, runs and calls only record how they ended, and cannot forget the bell. The rule is
 * machines/notification.logic.ts's outcomeNotification; the notifier persists and pushes the result.
 */

export interface OutcomeNotificationsDeps {
  bus: Bus;
  /** Where a task's name and agent are read (the tasks projection), which its end facts do not repeat. */
  tasks: Pick<TasksReadModel, 'get'>;
}

const NO_SUBJECT: OutcomeSubject = { name: null, agent: null };

/** The task's name and the agent it was delegated to; its stream is `task:<id>`. */
function taskSubject(tasks: Pick<TasksReadModel, 'get'>, stream: string): OutcomeSubject {
  const task = tasks.get(stream.slice('task:'.length));
  return task ? { name: task.name, agent: task.agent } : NO_SUBJECT;
}

const OUTCOME_TYPES = new Set(OUTCOME_FACT_TYPES);

export function startOutcomeNotifications(deps: OutcomeNotificationsDeps): Subscription {
  const { bus, tasks } = deps;
  return bus.subscribe(
    'outcome-notifications',
    async (e: Envelope) => {
      const subject = e.type === TASK_EVENTS.completed || e.type === TASK_EVENTS.failed ? taskSubject(tasks, e.stream) : NO_SUBJECT;
      const n = outcomeNotification(e, subject);
      if (!n) return;
      try {
        await bus.send(NOTIFICATION_COMMANDS.create, n, { by: 'outcome-notifications', ...followsFrom(e) });
      } catch (err) {
        // The outcome itself is in the log either way; only the bell missed it, and the log line says which.
        bus.emitLog('warn', `${e.stream}: no notification for ${e.type}: ${describeError(err)}`, { stream: e.stream, type: e.type });
      }
    },
    (e) => OUTCOME_TYPES.has(e.type),
  );
}
