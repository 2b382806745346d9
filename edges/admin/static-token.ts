import { timingSafeEqual } from 'node:crypto';
import type { Principal } from '../../schemas/index.js';
import type { Authenticator, HttpRequest } from '../http/index.js';

/** SPEC.md "Admin panel (JWT)" 4: the static API token is an admin with no users.json row. */
export const LEGACY_ADMIN: Principal = {
  kind: 'user',
  id: null,
  acting_for: null,
  role: 'admin',
  allowed_agents: [],
  origin: { transport: 'admin', chat_id: null, topic_id: null },
};

/** True when `presented` is the configured token; an empty configured token matches nothing. */
export function staticTokenMatches(presented: string, token: string): boolean {
  if (token === '') return false;
  const a = Buffer.from(presented);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

function bearer(req: Pick<HttpRequest, 'headers'>): string | null {
  const m = /^Bearer ([^\s]+)$/.exec(req.headers.authorization ?? '');
  return m ? m[1]! : null;
}

/**
 * `Authorization: Bearer <api.token>` on an admin route. Another bearer is not this credential (it is
 * a JWT for the next authenticator), so it is left alone. The token is read per request, so a
 * reloaded config takes effect at once.
 */
export function staticTokenAuthenticator(token: () => string): Authenticator {
  return {
    credential: 'admin-static-token',
    hint: 'Authorization: Bearer <access token>',
    authenticate: (req) => {
      const presented = bearer(req);
      return presented !== null && staticTokenMatches(presented, token()) ? LEGACY_ADMIN : null;
    },
  };
}
