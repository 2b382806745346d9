import { startNotifier, startOutcomeNotifications } from '../../actors/index.js';
import { notificationReadModel, tasksReadModel } from '../../store/index.js';
import { part } from '../subsystems.js';
import { BUS, EVENT_LOG, NOTIFICATIONS } from './keys.js';

/* Notifications: the read model the admin API and the dashboard read, the notifier and the outcome notices. */

export const notifications = part({
  name: 'notifications',
  needs: { bus: BUS, log: EVENT_LOG },
  provides: { notifications: NOTIFICATIONS },
  start({ bus, log }) {
    const readModel = notificationReadModel(log.projectionDb());
    const notifier = startNotifier({ bus, readModel });
    const outcomes = startOutcomeNotifications({ bus, tasks: tasksReadModel(log.projectionDb()) });
    return {
      provide: { notifications: readModel },
      stop: () => {
        outcomes.unsubscribe();
        notifier.unsubscribe();
      },
    };
  },
});
