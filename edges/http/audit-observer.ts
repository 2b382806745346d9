import type { Bus } from '../../bus/index.js';
import { AUDIT_COMMANDS, describeError, type Principal } from '../../schemas/index.js';
import { auditTarget } from './audit-target.js';
import { forwardedClient } from './client-address.js';
import type { HttpReply, HttpRequest } from './http.js';
import type { Surface } from './http-server.js';

const MUTATING = new Set(['POST', 'PUT', 'DELETE']);

/**
 * SPEC.md `/api/audit`: every mutating admin request an authenticated caller makes, done or
 * refused (for want of a role too), becomes an `audit.recorded` fact, committed before the reply:
 * the route's `METHOD /pattern`, what it changed (audit-target.ts: named by the path, the body's or
 * the answer's identifying fields, or the settings it sets; never a secret), the status and the
 * client address. Requests without valid credentials (401) are not recorded: an
 * anonymous client must not be able to fill the log. `audited` picks which requests are admin
 * actions on a surface that serves other traffic too (`/upload` also takes chat attachments).
 * The address is the client's as the login facts give it: canonical, and behind one of
 * `trustedProxies` (`api.trusted_proxies`) the one `X-Forwarded-For` names.
 */
export function auditObserver(
  bus: Bus,
  audited: (req: HttpRequest, principal: Principal) => boolean = () => true,
  trustedProxies: () => readonly string[] = () => [],
): NonNullable<Surface['observe']> {
  return async (req, route, principal, status, reply?: HttpReply) => {
    if (!MUTATING.has(route.method) || !audited(req, principal)) return;
    const action = `${route.method} ${route.pattern}`;
    const { target, detail } = auditTarget(req, reply);
    await bus
      .send(AUDIT_COMMANDS.record, { principal, action, target, ...(detail ? { detail } : {}), status, ip: forwardedClient(req.remoteAddress, req.headers['x-forwarded-for'], trustedProxies()) || null })
      .catch((e: unknown) => bus.emitLog('error', `audit record for ${action} failed: ${describeError(e)}`));
  };
}
