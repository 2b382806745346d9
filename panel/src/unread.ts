import { get } from './api/client';
import { adminSocket } from './api/socket';
import { createStore } from './store';

/*
 * The unread-notification count in the header: loaded once signed in, raised by each
 * `notification` push (not for `silent` ones, which the count never includes), and reloaded by
 * the notifications page after it marks something read.
 */
export const unreadCount = createStore<number>(0);

export async function reloadUnread(): Promise<void> {
  try {
    const r = await get<{ count: number }>('/api/notifications/unread-count');
    unreadCount.set(r.count);
  } catch {
    // The header keeps the last count; the notifications page shows the error.
  }
}

adminSocket.subscribe((f) => {
  if (f.type === 'auth_ok') void reloadUnread();
  if (f.type === 'notification' && f.data['severity'] !== 'silent' && f.data['read'] !== true) unreadCount.set(unreadCount.get() + 1);
});
