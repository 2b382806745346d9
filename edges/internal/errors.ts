import type { StatusTable } from '../http/index.js';

/**
 * The one status table of the internal API. Codes not listed fall through to COMMON_STATUSES
 * (invalid-json/invalid-body 400, body-too-large 413, no-handler 503, ...).
 */
export const INTERNAL_STATUSES: StatusTable = {
  /** `from` and `to` are the same agent. */
  'self-call': 400,
  /** No or wrong `Authorization: Bearer` token for an agent that has one, or for `svc ask`. */
  unauthorized: 401,
  /** `from` names no agent, so there is no token to check it against. */
  'unknown-caller': 401,
  /** `X-SVC-Caller-User-Id` names no active user. */
  'unknown-user': 403,
  /** The caller user's `allowed_agents` does not include the recipient. */
  'agent-not-allowed': 403,
  /** The calling agent's `can_call` list does not include the recipient. */
  'call-not-allowed': 403,
  /** The recipient is neither the main agent nor in the registry. */
  'unknown-agent': 404,
  /** No agent runtime is attached to the bus. */
  'no-handler': 503,
  'no-task-hub': 503,
};
