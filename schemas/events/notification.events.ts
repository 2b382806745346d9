import * as v from 'valibot';
import { typeNames } from './type-names.js';
import { NotificationSchema } from '../notification.schema.js';

/** Streams `notification:<id>` (one notification) and `notifications` (read-all, which spans many). */
export const NOTIFICATION_EVENT_SCHEMAS = {
  'notification.created': NotificationSchema,
  'notification.read': v.object({ id: v.string() }),
  'notification.all_read': v.object({ ids: v.array(v.string()) }),
};
export const NOTIFICATION_EVENTS = typeNames(NOTIFICATION_EVENT_SCHEMAS);
