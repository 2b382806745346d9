import * as v from 'valibot';
import { ADMIN_AGENT_COMMANDS, DEFAULT_LOG_LINES, MAIN_AGENT, MAX_LOG_LINES, maskSecrets, type Principal } from '../../schemas/index.js';
import { json, withQuery, type Route } from '../http/index.js';
import { adminAuth } from './admin-auth.js';
import type { AdminDeps } from './admin-deps.js';

/*
 * SPEC.md "Admin REST: system": the configuration (secrets masked) and the daemon's log with its live
 * tail. The system status and instance name live in dashboard.routes.ts. Which agent's log a caller
 * may read is decided where the command is handled.
 */

const AgentParam = v.pipe(v.string(), v.minLength(1), v.maxLength(128));
/** A whole number as the query string spells it; `lines` above the cap is served at the cap. */
const LinesParam = v.pipe(
  v.string(),
  v.regex(/^\d{1,9}$/, 'a whole number'),
  v.transform(Number),
  v.minValue(1),
  v.transform((n) => Math.min(n, MAX_LOG_LINES)),
);
const AfterParam = v.pipe(v.string(), v.regex(/^\d{1,12}(\.\d{1,6})?$/, 'a timestamp in epoch seconds (the `timestamp` of the previous poll, 0 at first)'), v.transform(Number));

const LogsQuery = v.object({ agent: v.optional(AgentParam, MAIN_AGENT), lines: v.optional(LinesParam, String(DEFAULT_LOG_LINES)) });
/** `lines`: the panel's live tail sends it on every poll; a poll answers what came after `after`, so it only has to be valid. */
const PollQuery = v.object({ agent: v.optional(AgentParam, MAIN_AGENT), after: v.optional(AfterParam, '0'), lines: v.optional(LinesParam) });

export function systemRoutes(deps: AdminDeps): Route[] {
  const { bus } = deps;
  return [
    {
      method: 'GET',
      pattern: '/api/config',
      auth: adminAuth('config.read'),
      summary: 'The configuration, every secret masked as ***',
      // The effective configuration, every credential (nested ones too) as `***`.
      handler: () => json(200, maskSecrets(deps.config())),
    },
    {
      method: 'GET',
      pattern: '/api/logs',
      auth: adminAuth('logs.read'),
      summary: "The last lines of an agent's log",
      ...withQuery(LogsQuery, async (q, _req, principal: Principal) => json(200, await bus.send(ADMIN_AGENT_COMMANDS.logs, { principal, agent: q.agent, lines: q.lines }))),
    },
    {
      method: 'GET',
      pattern: '/api/logs/poll',
      auth: adminAuth('logs.read'),
      summary: 'Log lines newer than `after`, for a live tail',
      ...withQuery(PollQuery, async (q, _req, principal: Principal) => json(200, await bus.send(ADMIN_AGENT_COMMANDS.pollLogs, { principal, agent: q.agent, after: q.after }))),
    },
  ];
}
