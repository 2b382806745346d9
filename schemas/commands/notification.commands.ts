import {
  CreateNotificationResultSchema,
  CreateNotificationSchema,
  MarkAllReadResultSchema,
  MarkAllReadSchema,
  MarkReadSchema,
  NotificationSchema,
} from '../notification.schema.js';
import { defineCommand } from '../command.js';

export const NOTIFICATION_COMMANDS = {
  create: defineCommand('notification.create', CreateNotificationSchema, CreateNotificationResultSchema),
  markRead: defineCommand('notification.mark_read', MarkReadSchema, NotificationSchema),
  markAllRead: defineCommand('notification.mark_all_read', MarkAllReadSchema, MarkAllReadResultSchema),
} as const;
