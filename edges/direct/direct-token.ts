import type { Principal } from '../../schemas/index.js';
import type { Authenticator } from '../http/index.js';
import { bearerMatches } from './e2e-crypto.js';

/**
 * Whoever holds `api.token`: the owner's shared token, with no users.json row. SPEC.md makes the
 * static API token a legacy admin, so the bearer has the admin role.
 */
export const DIRECT_TOKEN_PRINCIPAL: Principal = {
  kind: 'user',
  id: null,
  acting_for: null,
  role: 'admin',
  allowed_agents: [],
  origin: { transport: 'api', chat_id: null, topic_id: null },
};

/**
 * `Authorization: Bearer <api.token>`. Any other bearer is not this credential (it may be an admin
 * JWT on a route that accepts both), so it is left to the route's next credential, never refused here.
 */
export function directTokenAuthenticator(token: string): Authenticator {
  return {
    credential: 'direct-token',
    hint: 'Authorization: Bearer <api.token>',
    authenticate: (req) => (bearerMatches(req.headers.authorization, token) ? DIRECT_TOKEN_PRINCIPAL : null),
  };
}
