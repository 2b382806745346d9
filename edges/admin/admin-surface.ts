import { AUDIT_COMMANDS, SvcError, describeError } from '../../schemas/index.js';
import { COMMON_STATUSES, combineStatusTables, errorReply, roleSatisfies, type Authenticator, type Route, type StatusTable, type Surface } from '../http/index.js';
import type { AdminDeps } from './admin-deps.js';
import { activityRoutes } from './activity.routes.js';
import { agentsRoutes } from './agents.routes.js';
import { auditRoutes } from './audit.routes.js';
import { authRoutes } from './auth.routes.js';
import { chatRoutes } from './chat.routes.js';
import { cronRoutes } from './cron.routes.js';
import { dashboardRoutes } from './dashboard.routes.js';
import { ADMIN_STATUSES } from './errors.js';
import { filesRoutes } from './files.routes.js';
import { memoryRoutes } from './memory.routes.js';
import { portabilityRoutes } from './portability.routes.js';
import { ragRoutes } from './rag.routes.js';
import { sessionsRoutes } from './sessions.routes.js';
import { skillsRoutes } from './skills.routes.js';
import { staticTokenAuthenticator } from './static-token.js';
import { systemRoutes } from './system.routes.js';
import { tasksRoutes } from './tasks.routes.js';
import { usersRoutes } from './users.routes.js';
import { webhooksRoutes } from './webhooks.routes.js';

/**
 * The admin API (SPEC.md "Admin REST", WIRE.md §2) on the one API server, beside `/ws` and the
 * shared `/api/*` routes. Its authenticators turn the panel's credentials into a Principal; the
 * shared routes accept them too.
 */
export function adminSurface(deps: AdminDeps): Surface {
  const authenticators: Authenticator[] = [staticTokenAuthenticator(() => deps.config().api.token)];
  const audit = auditor(deps, combineStatusTables('admin', COMMON_STATUSES, ADMIN_STATUSES));
  return {
    name: 'admin',
    standalone: true,
    statuses: ADMIN_STATUSES,
    authenticators,
    routes: [
      ...authRoutes(deps),
      ...usersRoutes(deps),
      ...systemRoutes(deps),
      ...agentsRoutes(deps),
      ...dashboardRoutes(deps),
      ...activityRoutes(deps),
      ...auditRoutes(deps),
      ...portabilityRoutes(deps),
      ...cronRoutes(deps),
      ...webhooksRoutes(deps),
      ...tasksRoutes(deps),
      ...sessionsRoutes(deps),
      ...memoryRoutes(deps),
      ...ragRoutes(deps),
      ...skillsRoutes(deps),
      ...filesRoutes(deps),
      ...chatRoutes(deps),
    ].map(audit),
  };
}

const MUTATING = new Set(['POST', 'PUT', 'DELETE']);
const MAX_TARGET_CHARS = 300;

/**
 * SPEC.md `/api/audit`: every mutating admin request an authenticated caller makes, done or
 * refused, becomes an `audit.recorded` fact: the route's `METHOD /pattern`, what it named in its
 * path, the status and the client address; never a body, so never a secret. Such a route's least
 * role is checked here instead of by the server, so a refusal for want of a role is recorded too.
 * Requests without valid credentials (401) are not: an anonymous client must not be able to fill
 * the log.
 */
function auditor(deps: AdminDeps, statuses: StatusTable): (route: Route) => Route {
  const { bus } = deps;
  return (route) => {
    if (route.auth === 'public' || !MUTATING.has(route.method)) return route;
    const { role, accepts } = route.auth;
    const { handler } = route;
    const action = `${route.method} ${route.pattern}`;
    return {
      ...route,
      auth: { accepts },
      handler: async (req, principal) => {
        let status = 500;
        try {
          if (role !== undefined && !roleSatisfies(principal.role, role)) {
            throw new SvcError('forbidden', `${req.method} ${req.path} needs the ${role} role or above; ${principal.id === null ? `this ${principal.kind} credential` : `${principal.kind} "${principal.id}"`} has ${principal.role ?? 'no role'}`);
          }
          const reply = await handler(req, principal);
          status = reply.status;
          return reply;
        } catch (e) {
          status = errorReply(e, statuses).reply.status;
          throw e;
        } finally {
          const target = Object.values(req.params).join('/').slice(0, MAX_TARGET_CHARS) || null;
          await bus
            .send(AUDIT_COMMANDS.record, { principal, action, target, status, ip: req.remoteAddress.slice(0, 64) || null })
            .catch((e: unknown) => bus.emitLog('error', `audit record for ${action} failed: ${describeError(e)}`));
        }
      },
    };
  };
}
