import { parseJsonBody, parseWith, type Authenticator, type HttpRequest } from '../http/index.js';
import { CallerClaimBody, CallerClaimOptionalBody, CallerClaimQuery, FROM_OPTIONAL_PATHS } from './bodies.js';
import { MAIN_AGENT, agentPrincipal, authenticateAgent, authenticateMain, callerUser, ownerPrincipal, type CallerDirectory, type Warn } from './caller.js';

const ORIGIN = { transport: 'internal', chat_id: null, topic_id: null } as const;

/** The calling agent named by the request: the body's `from`, or the query's on a GET (absent: main). */
function claimedAgent(req: HttpRequest): string {
  if (req.method === 'GET') return parseWith(CallerClaimQuery, Object.fromEntries(req.query), 'invalid-query', 'query').from ?? MAIN_AGENT;
  if (FROM_OPTIONAL_PATHS.has(req.path)) return parseJsonBody(req, CallerClaimOptionalBody).from ?? MAIN_AGENT;
  return parseJsonBody(req, CallerClaimBody).from;
}

/**
 * `agent-token`: the claimed agent's `interagent_token` (the main agent token for main) as a bearer
 * token, and the person it acts for from `X-SVC-Caller-User-Id`. A wrong token or an unknown user
 * is refused with its own code and message, since this is the internal API's only credential.
 */
export function agentTokenAuthenticator(dir: CallerDirectory, warn: Warn): Authenticator {
  return {
    credential: 'agent-token',
    hint: 'Authorization: Bearer <interagent_token of the calling agent>',
    authenticate(req) {
      const agent = claimedAgent(req);
      const { tokenless } = authenticateAgent(dir, agent, req.headers, warn);
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
