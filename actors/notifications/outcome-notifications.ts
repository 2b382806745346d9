import type { Subscription } from 'rxjs';
import { followsFrom, type Bus } from '../../bus/index.js';
import { OUTCOME_FACT_TYPES, outcomeNotification, type OutcomeSubject } from '../../machines/index.js';
import { NOTIFICATION_COMMANDS, TASK_EVENTS, describeError, type Envelope } from '../../schemas/index.js';
import type { EventLog } from '../../store/index.js';

/*
 * Every outcome SPEC.md's severity table names raises its notification here, from the fact that
 * records it (task.completed/failed, cron.run_finished, webhook.completed/failed): the actors that
 * finish tasks, runs and calls only record how they ended, and cannot forget the bell. The rule is
 * machines/notification.logic.ts's outcomeNotification; the notifier persists and pushes the result.
 */

export interface OutcomeNotificationsDeps {
  bus: Bus;
  /** Where a task's name and agent are read (its `task.created`), which its end facts do not repeat. */
  log: Pick<EventLog, 'read'>;
}

const NO_SUBJECT: OutcomeSubject = { name: null, agent: null };

/** The task's name and the agent it was delegated to, from its first fact. */
function taskSubject(log: Pick<EventLog, 'read'>, stream: string): OutcomeSubject {
  const created = log.read({ stream, types: [TASK_EVENTS.created], limit: 1 })[0];
  if (!created) return NO_SUBJECT;
  const d = created.data;
  return { name: typeof d.name === 'string' ? d.name : null, agent: typeof d.agent === 'string' ? d.agent : null };
}

const OUTCOME_TYPES = new Set(OUTCOME_FACT_TYPES);

export function startOutcomeNotifications(deps: OutcomeNotificationsDeps): Subscription {
  const { bus, log } = deps;
  return bus.subscribe(
    'outcome-notifications',
    async (e: Envelope) => {
      const subject = e.type === TASK_EVENTS.completed || e.type === TASK_EVENTS.failed ? taskSubject(log, e.stream) : NO_SUBJECT;
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
