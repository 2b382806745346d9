import * as v from 'valibot';
import { ACTIVITY_COMMANDS, ACTIVITY_SEVERITIES, DEFAULT_ACTIVITY_LIMIT, MAX_ACTIVITY_ID_CHARS, MAX_ACTIVITY_LIMIT } from '../../schemas/index.js';
import { json, parseWith, type Route } from '../http/index.js';
import { adminAuth } from './admin-auth.js';
import type { AdminDeps } from './admin-deps.js';
import { language, pathParam, queryFlag, queryLimit } from './query-params.js';

/*
 * The activity feed (SPEC.md "Activity event"): the canonical, localised stream, one event by id,
 * and the legacy raw feed, unchanged since before 1.3.29. Filtered by the caller's allowed_agents
 * where the command is handled.
 */

const SeverityList = v.pipe(
  v.string(),
  v.transform((s) => s.split(',').map((x) => x.trim())),
  v.array(v.picklist(ACTIVITY_SEVERITIES, `must be a comma list of ${ACTIVITY_SEVERITIES.join(', ')}`)),
);
const ActivityId = v.pipe(v.string(), v.minLength(1, 'must not be empty'), v.maxLength(MAX_ACTIVITY_ID_CHARS, `must be at most ${MAX_ACTIVITY_ID_CHARS} characters`));

export function activityRoutes(deps: AdminDeps): Route[] {
  const { bus } = deps;
  return [
    {
      method: 'GET',
      pattern: '/api/activity/recent',
      auth: adminAuth('activity.read'),
      handler: async (req, principal) => {
        const raw = req.query.get('severity');
        const severity = raw === null || raw === '' ? null : parseWith(SeverityList, raw, 'invalid-query', 'query.severity');
        const limit = queryLimit(req, DEFAULT_ACTIVITY_LIMIT, MAX_ACTIVITY_LIMIT);
        return json(200, await bus.send(ACTIVITY_COMMANDS.recent, { principal, lang: language(req), limit, severity }));
      },
    },
    {
      method: 'GET',
      pattern: '/api/activity/:id',
      auth: adminAuth('activity.read'),
      handler: async (req, principal) => {
        const id = pathParam(req, 'id', ActivityId);
        return json(200, await bus.send(ACTIVITY_COMMANDS.get, { principal, lang: language(req), id, verbose: queryFlag(req, 'verbose') }));
      },
    },
    {
      method: 'GET',
      pattern: '/api/activity',
      auth: adminAuth('activity.read'),
      handler: async (req, principal) => json(200, await bus.send(ACTIVITY_COMMANDS.legacy, { principal, limit: queryLimit(req, DEFAULT_ACTIVITY_LIMIT, MAX_ACTIVITY_LIMIT) })),
    },
  ];
}
