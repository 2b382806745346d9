import { auditObserver, type Authenticator, type Surface } from '../http/index.js';
import type { AdminDeps } from './admin-deps.js';
import { adminCookieAuthenticator, adminJwtAuthenticator } from './access-token.js';
import { activityRoutes } from './activity.routes.js';
import { agentsRoutes } from './agents.routes.js';
import { auditRoutes } from './audit.routes.js';
import { authRoutes } from './auth.routes.js';
import { chatRoutes } from './chat.routes.js';
import { cronRoutes } from './cron.routes.js';
import { dashboardRoutes } from './dashboard.routes.js';
import { AdminSocketHub } from './admin-socket.js';
import { mountAdminWs } from './admin-ws.binding.js';
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
import { VerifiedAccessTokens } from './verified-tokens.js';
import { workflowsRoutes } from './workflows.routes.js';

/**
 * The admin API (SPEC.md "Admin REST", WIRE.md §2) on the one API server, beside `/ws` and the
 * shared `/api/*` routes. Its authenticators turn the panel's credentials into a Principal; the
 * shared routes accept them too.
 */
export function adminSurface(deps: AdminDeps): Surface {
  // One cache for the bearer and the cookie: the panel presents the same token either way.
  const tokenDeps = { ...deps, verified: new VerifiedAccessTokens() };
  const authenticators: Authenticator[] = [
    adminJwtAuthenticator(tokenDeps),
    adminCookieAuthenticator(tokenDeps),
    staticTokenAuthenticator(deps.apiToken ?? (() => deps.config().api.token)),
  ];
  const socket = deps.socket;
  let hub: AdminSocketHub | null = null;
  return {
    ...(socket
      ? {
          mountSockets: (app, authenticate) => {
            hub = new AdminSocketHub({ bus: deps.bus, users: deps.users, authenticate, allowedOrigins: () => deps.config().api.cors_origins, ...socket });
            mountAdminWs(app, hub);
          },
          close: () => hub?.close(),
        }
      : {}),
    name: 'admin',
    standalone: true,
    localisedErrors: true,
    statuses: ADMIN_STATUSES,
    authenticators,
    observe: auditObserver(deps.bus, undefined, () => deps.config().api.trusted_proxies ?? []),
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
      ...workflowsRoutes(deps),
      ...sessionsRoutes(deps),
      ...memoryRoutes(deps),
      ...ragRoutes(deps),
      ...skillsRoutes(deps),
      ...filesRoutes(deps),
      ...chatRoutes(deps),
    ],
  };
}
