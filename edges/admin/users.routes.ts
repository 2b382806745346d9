import { CreateUserBodySchema, UpdateUserBodySchema, USER_COMMANDS, userInfo, type Principal } from '../../schemas/index.js';
import { json, withBody, type HttpRequest, type Route } from '../http/index.js';
import { adminAuth } from './admin-auth.js';
import type { AdminDeps } from './admin-deps.js';
import { clientIp } from './login-rate-limit.js';

/*
 * SPEC.md "Admin REST: ... users": admin only, WIRE.md `UserInfo` rows (never a hash, TOTP secret
 * or token state). Writes go to the users directory, which refuses to leave no active admin.
 */
const USER_BODY_BYTES = 16 * 1024;

export function usersRoutes(deps: AdminDeps): Route[] {
  const ip = (req: HttpRequest) => clientIp(req, deps.config().api.trusted_proxies ?? []);
  return [
    {
      method: 'GET',
      pattern: '/api/users',
      summary: 'Every user (no password hashes or TOTP secrets)',
      auth: adminAuth('users.read'),
      handler: () => json(200, deps.users().map(userInfo)),
    },
    {
      method: 'POST',
      pattern: '/api/users',
      summary: 'Create a user',
      auth: adminAuth('users.write'),
      maxBodyBytes: USER_BODY_BYTES,
      ...withBody(CreateUserBodySchema, async (user, req, principal: Principal) => json(201, await deps.bus.send(USER_COMMANDS.create, { principal, ip: ip(req), user }))),
    },
    {
      method: 'PUT',
      pattern: '/api/users/:username',
      summary: "Change a user's role, agents, password or state",
      auth: adminAuth('users.write'),
      maxBodyBytes: USER_BODY_BYTES,
      ...withBody(UpdateUserBodySchema, async (changes, req, principal: Principal) =>
        json(200, await deps.bus.send(USER_COMMANDS.update, { principal, ip: ip(req), username: req.params.username!, changes })),
      ),
    },
    {
      method: 'DELETE',
      pattern: '/api/users/:username',
      summary: 'Delete a user',
      auth: adminAuth('users.write'),
      handler: async (req, principal) => json(200, await deps.bus.send(USER_COMMANDS.delete, { principal, ip: ip(req), username: req.params.username! })),
    },
  ];
}
