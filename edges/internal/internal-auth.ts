import { parseJsonBody, parseWith, type Authenticator, type HttpRequest } from '../http/index.js';
import { CallerClaimBody, CallerClaimQuery } from './bodies.js';
import { agentOfToken, agentPrincipal, authenticateAgent, authenticateMain, callerUser, ownerPrincipal, type CallerDirectory, type Warn } from './caller.js';

const ORIGIN = { transport: 'internal', chat_id: null, topic_id: null } as const;

/**
 * The calling agent the request names: the body's `from`, or the query's on a GET; null when it names
 * none. Read by hand, leniently: authentication runs before the route's handler, whose `withBody` /
 * `withQuery` then parses the whole body or query strictly.
 */
function claimedAgent(req: HttpRequest): string | null {
  if (req.method === 'GET') return parseWith(CallerClaimQuery, Object.fromEntries(req.query), 'invalid-query', 'query').from ?? null;
  return parseJsonBody(req, CallerClaimBody).from ?? null;
}

/**
 * `agent-token`: the calling agent's `interagent_token` (the main agent token for main) as a bearer
 * token, and the person it acts for from `X-SVC-Caller-User-Id`. A request that names its agent
 * (`from`) is checked against that agent's token; one that names none (a task's `ask_parent`, a
 * GET without `from`) is the agent whose token it carries. A wrong token or an unknown user is
 * refused with its own code and message, since this is the internal API's only credential.
 */
export function agentTokenAuthenticator(dir: CallerDirectory, warn: Warn): Authenticator {
  return {
    credential: 'agent-token',
    hint: 'Authorization: Bearer <interagent_token of the calling agent>',
    authenticate(req) {
      const claimed = claimedAgent(req);
      const agent = claimed ?? agentOfToken(dir, req.headers);
      const { tokenless } = claimed === null ? { tokenless: false } : authenticateAgent(dir, agent, req.headers, warn);
      const principal = agentPrincipal(agent, callerUser(dir, req.headers), ORIGIN);
      // Legacy token-less mode proves nothing: any local process can send this request, and the
      // caller header too. Never more than a viewer, so a missing header is not the framework's admin.
      return tokenless ? { ...principal, role: 'viewer' } : principal;
    },
  };
}

/** `owner-token`: `svc ask` sends the main agent token. */
export function ownerTokenAuthenticator(dir: Pick<CallerDirectory, 'mainAgentToken'>): Authenticator {
  return {
    credential: 'owner-token',
    hint: 'Authorization: Bearer <main agent token>',
    authenticate(req) {
      authenticateMain(dir, req.headers);
      return ownerPrincipal();
    },
  };
}
