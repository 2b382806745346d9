import { randomUUID } from 'node:crypto';
import { Subscription } from 'rxjs';
import { causedBy, type Bus, type Command } from '../../bus/index.js';
import { EMPTY_THROTTLE_STATE, classify, shouldThrottle, truncateBody, type ThrottleState } from '../../machines/index.js';
import {
  MAX_NOTIFICATION_ID_CHARS,
  NOTIFICATIONS_STREAM,
  NOTIFICATION_COMMANDS,
  NOTIFICATION_EVENTS,
  SvcError,
  agentLimit,
  notificationStream,
  type CommandData,
  type CreateNotificationResult,
  type MarkAllReadResult,
  type Notification,
  type Severity,
} from '../../schemas/index.js';
import type { NotificationReadModel } from '../../store/index.js';
import { serialRunner } from '../host/serial.js';

/*
 * The notifier: a small command-handling actor, not an xstate machine, because it holds no
 * lifecycle — only the throttle memory, which is advisory (logged, never suppressing anything).
 * The rules live in machines/notification.logic.ts; this file does the I/O around them.
 */

export interface NotifierDeps {
  bus: Bus;
  readModel: Pick<NotificationReadModel, 'get' | 'unreadIds'>;
  /** Injected so tests and replays get predictable ids. */
  newId?: () => string;
}

/**
 * Registers the three notification command handlers on the bus; unsubscribe to stop. Commands
 * run one at a time, each seeing the read model its predecessor left (a publish resolves only
 * after the projection folded it), so "already read" and "nothing unread" are exact.
 */
export function startNotifier(deps: NotifierDeps): Subscription {
  const { bus, readModel } = deps;
  const newId = deps.newId ?? (() => randomUUID());
  let throttle: ThrottleState = EMPTY_THROTTLE_STATE;
  const serial = serialRunner();

  const create = async (cmd: Command<string, CommandData<typeof NOTIFICATION_COMMANDS.create>>): Promise<CreateNotificationResult> => {
    const d = cmd.data;
    const c = classify({ source: d.source, outcome: d.outcome, body: d.body });
    if (!c.persist) {
      bus.emitLog('info', `notification not persisted: ${d.source} ${d.outcome} with an empty body (${JSON.stringify(d.title)})`, {
        source: d.source,
        source_id: d.source_id ?? null,
      });
      return { persisted: false };
    }
    const id = newId();
    if (typeof id !== 'string' || id.length === 0 || id.length > MAX_NOTIFICATION_ID_CHARS) {
      throw new SvcError('invalid-id', `notifier id generator returned ${JSON.stringify(id)}; ids must be 1..${MAX_NOTIFICATION_ID_CHARS} characters`);
    }
    if (readModel.get(id)) throw new SvcError('notification-exists', `notifier id generator returned ${id}, which is already taken`);
    const now = bus.now();
    const t = shouldThrottle(throttle, d.source_id, c.severity, now);
    throttle = t.state;
    logThrottle(bus, id, c.severity, d.source_id ?? null, t.throttled);
    const notification: Notification = {
      id,
      title: d.title,
      body: truncateBody(d.body ?? ''),
      read: false,
      severity: c.severity,
      type: c.type,
      agent: d.agent ?? null,
      status: d.status ?? null,
      source_id: d.source_id ?? null,
      created_at: new Date(now).toISOString(),
    };
    await bus.publish({
      stream: notificationStream(id),
      type: NOTIFICATION_EVENTS.created,
      data: { ...notification },
      ...causedBy(cmd),
    });
    return { persisted: true, notification, throttled: t.throttled };
  };

  const markRead = async (cmd: Command<string, CommandData<typeof NOTIFICATION_COMMANDS.markRead>>): Promise<Notification> => {
    const { id, principal } = cmd.data;
    const current = readModel.get(id);
    // One the caller's list hides is answered as absent: the answer would show it, marking it would change it for everyone.
    const limit = agentLimit(principal);
    if (!current || (limit !== null && current.agent !== null && !limit.includes(current.agent))) {
      throw new SvcError('not-found', `notification ${JSON.stringify(id)} does not exist`);
    }
    if (current.read) return current;
    await bus.publish({ stream: notificationStream(id), type: NOTIFICATION_EVENTS.read, data: { id }, ...causedBy(cmd) });
    return readModel.get(id) ?? { ...current, read: true };
  };

  const markAllRead = async (cmd: Command<string, CommandData<typeof NOTIFICATION_COMMANDS.markAllRead>>): Promise<MarkAllReadResult> => {
    const ids = readModel.unreadIds(agentLimit(cmd.data.principal));
    if (ids.length === 0) return { ids: [] };
    await bus.publish({ stream: NOTIFICATIONS_STREAM, type: NOTIFICATION_EVENTS.all_read, data: { ids }, ...causedBy(cmd) });
    return { ids };
  };

  const subs = new Subscription();
  subs.add(bus.handle(NOTIFICATION_COMMANDS.create, 'notifier', (cmd) => serial(() => create(cmd))));
  subs.add(bus.handle(NOTIFICATION_COMMANDS.markRead, 'notifier', (cmd) => serial(() => markRead(cmd))));
  subs.add(bus.handle(NOTIFICATION_COMMANDS.markAllRead, 'notifier', (cmd) => serial(() => markAllRead(cmd))));
  return subs;
}

function logThrottle(bus: Bus, id: string, severity: Severity, sourceId: string | null, throttled: boolean): void {
  bus.emitLog('debug', `notification ${id} (${severity}${sourceId ? ` from ${sourceId}` : ''}) ${throttled ? 'would be throttled' : 'not throttled'}; delivered either way`, {
    notification: id,
    severity,
    source_id: sourceId,
    throttled,
  });
}
