import { randomUUID } from 'node:crypto';
import { Subscription } from 'rxjs';
import * as v from 'valibot';
import { causedBy, type Bus, type Command } from '../bus/index.js';
import {
  EMPTY_THROTTLE_STATE,
  NOTIFICATION_OUTCOMES,
  NOTIFICATION_SOURCES,
  classify,
  shouldThrottle,
  truncateBody,
  type Severity,
  type ThrottleState,
} from '../machines/index.js';
import { SvcError, parseWith } from '../schemas/index.js';
import type { Notification, NotificationReadModel } from '../store/index.js';

/*
 * The notifier: a small command-handling actor, not an xstate machine, because it holds no
 * lifecycle — only the throttle memory, which is advisory (logged, never suppressing anything).
 * The rules live in machines/notification.logic.ts; this file does the I/O around them.
 */

export const NOTIFICATION_COMMANDS = {
  create: 'notification.create',
  markRead: 'notification.mark_read',
  markAllRead: 'notification.mark_all_read',
} as const;

export const NOTIFICATION_EVENTS = {
  created: 'notification.created',
  read: 'notification.read',
  allRead: 'notification.all_read',
} as const;

/** Stream of read-all facts, which span many notifications. */
export const NOTIFICATIONS_STREAM = 'notifications';
export const notificationStream = (id: string): string => `notification:${id}`;

export const MAX_NOTIFICATION_TITLE_CHARS = 500;
export const MAX_NOTIFICATION_ID_CHARS = 200;
const MAX_FIELD_CHARS = 200;

const optionalText = (what: string) =>
  v.optional(v.nullable(v.pipe(v.string(`${what} must be a string`), v.maxLength(MAX_FIELD_CHARS, `${what} must be at most ${MAX_FIELD_CHARS} characters`))));

export const CreateNotificationSchema = v.strictObject({
  source: v.picklist(NOTIFICATION_SOURCES, `must be one of ${NOTIFICATION_SOURCES.join(', ')}`),
  outcome: v.picklist(NOTIFICATION_OUTCOMES, `must be one of ${NOTIFICATION_OUTCOMES.join(', ')}`),
  title: v.pipe(
    v.string('must be a string'),
    v.trim(),
    v.minLength(1, 'must not be empty'),
    v.maxLength(MAX_NOTIFICATION_TITLE_CHARS, `must be at most ${MAX_NOTIFICATION_TITLE_CHARS} characters`),
  ),
  // Oversized bodies are cut, not refused: losing a failure notice over its length would be worse.
  body: v.optional(v.nullable(v.string('must be a string')), ''),
  agent: optionalText('agent'),
  source_id: optionalText('source_id'),
  status: optionalText('status'),
});
export type CreateNotification = v.InferInput<typeof CreateNotificationSchema>;

const NotificationIdSchema = v.pipe(
  v.string('must be a string'),
  v.minLength(1, 'must not be empty'),
  v.maxLength(MAX_NOTIFICATION_ID_CHARS, `must be at most ${MAX_NOTIFICATION_ID_CHARS} characters`),
);
export const MarkReadSchema = v.strictObject({ id: NotificationIdSchema });
export const MarkAllReadSchema = v.strictObject({});

export type CreateNotificationResult = { persisted: false } | { persisted: true; notification: Notification; throttled: boolean };
export interface MarkAllReadResult {
  ids: string[];
}

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
  let tail: Promise<unknown> = Promise.resolve();
  const serial = <R>(fn: () => Promise<R>): Promise<R> => {
    const run = tail.then(fn, fn);
    tail = run.catch(() => undefined);
    return run;
  };

  const create = async (cmd: Command<string, unknown>): Promise<CreateNotificationResult> => {
    const d = parseWith(CreateNotificationSchema, cmd.data ?? {}, 'invalid-command', `${cmd.type} data`);
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

  const markRead = async (cmd: Command<string, unknown>): Promise<Notification> => {
    const { id } = parseWith(MarkReadSchema, cmd.data ?? {}, 'invalid-command', `${cmd.type} data`);
    const current = readModel.get(id);
    if (!current) throw new SvcError('not-found', `notification ${JSON.stringify(id)} does not exist`);
    if (current.read) return current;
    await bus.publish({ stream: notificationStream(id), type: NOTIFICATION_EVENTS.read, data: { id }, ...causedBy(cmd) });
    return readModel.get(id) ?? { ...current, read: true };
  };

  const markAllRead = async (cmd: Command<string, unknown>): Promise<MarkAllReadResult> => {
    parseWith(MarkAllReadSchema, cmd.data ?? {}, 'invalid-command', `${cmd.type} data`);
    const ids = readModel.unreadIds();
    if (ids.length === 0) return { ids: [] };
    await bus.publish({ stream: NOTIFICATIONS_STREAM, type: NOTIFICATION_EVENTS.allRead, data: { ids }, ...causedBy(cmd) });
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
