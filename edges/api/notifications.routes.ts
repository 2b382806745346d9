import * as v from 'valibot';
import type { Bus } from '../../bus/index.js';
import { NOTIFICATION_COMMANDS, NOTIFICATION_SEVERITIES, SvcError, agentLimit, type Principal, type Severity } from '../../schemas/index.js';
import { DEFAULT_NOTIFICATION_LIMIT, MAX_NOTIFICATION_LIMIT, type NotificationReadModel } from '../../store/index.js';
import { json, withQuery, type Route } from '../http/index.js';
import { API_AUTH } from './api-auth.js';

/*
 * SPEC.md "Notification endpoints". Pure handlers: validate the query with valibot,
 * read the read model or send a notifier command, map the answer. No state, no SQL.
 */

export interface NotificationRoutesDeps {
  /** Bound to the daemon's projection db by the composition root. */
  readModel: Pick<NotificationReadModel, 'list' | 'unreadCount' | 'get'>;
  bus: Pick<Bus, 'send'>;
}

const SEVERITY_MESSAGE = `must be a comma-separated list of ${NOTIFICATION_SEVERITIES.join(', ')}`;

const ListQuerySchema = v.object({
  limit: v.optional(
    v.pipe(
      v.string(),
      v.regex(/^\d{1,6}$/, `must be an integer from 1 to ${MAX_NOTIFICATION_LIMIT}`),
      v.transform(Number),
      v.minValue(1, `must be an integer from 1 to ${MAX_NOTIFICATION_LIMIT}`),
      v.maxValue(MAX_NOTIFICATION_LIMIT, `must be an integer from 1 to ${MAX_NOTIFICATION_LIMIT}`),
    ),
    String(DEFAULT_NOTIFICATION_LIMIT),
  ),
  unread_only: v.optional(
    v.pipe(
      v.picklist(['true', 'false', '1', '0'], 'must be one of true, false, 1, 0'),
      v.transform((s) => s === 'true' || s === '1'),
    ),
    'false',
  ),
  severity: v.optional(
    v.pipe(
      v.string(),
      v.transform((s) => s.split(',').map((x) => x.trim())),
      v.check((list) => list.every((x) => (NOTIFICATION_SEVERITIES as readonly string[]).includes(x)), SEVERITY_MESSAGE),
      v.transform((list) => [...new Set(list)] as Severity[]),
    ),
  ),
});

export function notificationRoutes(deps: NotificationRoutesDeps): Route[] {
  const { readModel, bus } = deps;
  return [
    {
      method: 'GET',
      pattern: '/api/notifications',
      auth: API_AUTH.viewer,
      summary: 'List notifications, newest first',
      // A user limited to some agents sees only their notifications (and those about no agent).
      ...withQuery(ListQuerySchema, (q, _req, principal: Principal) =>
        json(200, readModel.list({ limit: q.limit, unread_only: q.unread_only, agents: agentLimit(principal), ...(q.severity ? { severity: q.severity } : {}) })),
      ),
    },
    {
      method: 'GET',
      pattern: '/api/notifications/unread-count',
      auth: API_AUTH.viewer,
      summary: 'How many notifications are unread (silent ones never count)',
      handler: (_req, principal) => json(200, { count: readModel.unreadCount(agentLimit(principal)) }),
    },
    {
      method: 'PUT',
      pattern: '/api/notifications/:id/read',
      maxBodyBytes: 4096,
      // Marking read changes no resource, only what is shown as new: a viewer may (SPEC.md's errors ack is alike).
      auth: API_AUTH.viewer,
      summary: 'Mark one notification read',
      handler: async (req, principal) => {
        const id = req.params.id ?? '';
        await bus.send(NOTIFICATION_COMMANDS.markRead, { id, principal });
        // Answer with the row as the read model holds it: the command's publish has been folded.
        const n = readModel.get(id);
        if (!n) throw new SvcError('not-found', `notification ${JSON.stringify(id)} does not exist`);
        return json(200, n);
      },
    },
    {
      method: 'POST',
      pattern: '/api/notifications/read-all',
      maxBodyBytes: 4096,
      auth: API_AUTH.viewer,
      summary: 'Mark every notification read',
      handler: async (_req, principal) => {
        const r = await bus.send(NOTIFICATION_COMMANDS.markAllRead, { principal });
        return json(200, { status: 'ok', marked: r.ids.length, ids: r.ids });
      },
    },
  ];
}
