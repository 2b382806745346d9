import * as v from 'valibot';
import { PrincipalSchema } from './principal.schema.js';

/*
 * Notifications (SPEC.md "Notification", WIRE.md §2): the vocabulary the notifier, its rules in
 * machines/, the read model in store/ and the HTTP routes share.
 */

export const NOTIFICATION_SEVERITIES = ['critical', 'warning', 'info', 'silent'] as const;
export type Severity = (typeof NOTIFICATION_SEVERITIES)[number];

export const NOTIFICATION_SOURCES = ['cron', 'task', 'webhook', 'system'] as const;
export type NotificationSource = (typeof NOTIFICATION_SOURCES)[number];
/** The notification's `type` is the UI's filter value, which is the source itself. */
export type NotificationType = NotificationSource;

export const NOTIFICATION_OUTCOMES = ['success', 'failed', 'error'] as const;
export type NotificationOutcome = (typeof NOTIFICATION_OUTCOMES)[number];

/** Stream of read-all facts, which span many notifications. */
export const NOTIFICATIONS_STREAM = 'notifications';
export const notificationStream = (id: string): string => `notification:${id}`;

export const MAX_NOTIFICATION_TITLE_CHARS = 500;
export const MAX_NOTIFICATION_ID_CHARS = 200;
const MAX_FIELD_CHARS = 200;

/** A notification as the read model (and the admin API, WIRE.md §2) shows it. */
export const NotificationSchema = v.object({
  id: v.string(),
  title: v.string(),
  body: v.string(),
  read: v.boolean(),
  severity: v.picklist(NOTIFICATION_SEVERITIES),
  type: v.string(),
  agent: v.nullable(v.string()),
  status: v.nullable(v.string()),
  source_id: v.nullable(v.string()),
  /** ISO-8601 UTC, from the notifier's clock. */
  created_at: v.string(),
});
export type Notification = v.InferOutput<typeof NotificationSchema>;

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

export const NotificationIdSchema = v.pipe(
  v.string('must be a string'),
  v.minLength(1, 'must not be empty'),
  v.maxLength(MAX_NOTIFICATION_ID_CHARS, `must be at most ${MAX_NOTIFICATION_ID_CHARS} characters`),
);
/** Who marks: a caller limited to some agents may mark only the notifications their list shows. */
export const MarkReadSchema = v.strictObject({ id: NotificationIdSchema, principal: PrincipalSchema });
export const MarkAllReadSchema = v.strictObject({ principal: PrincipalSchema });

export const CreateNotificationResultSchema = v.variant('persisted', [
  v.object({ persisted: v.literal(false) }),
  v.object({ persisted: v.literal(true), notification: NotificationSchema, throttled: v.boolean() }),
]);
export type CreateNotificationResult = v.InferOutput<typeof CreateNotificationResultSchema>;

export const MarkAllReadResultSchema = v.object({ ids: v.array(v.string()) });
export type MarkAllReadResult = v.InferOutput<typeof MarkAllReadResultSchema>;
