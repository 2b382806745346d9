import type { StatusTable } from '../http/index.js';

/**
 * The one status table of the internal API beyond COMMON_STATUSES, which already maps
 * `unauthorized` (no or wrong token) 401, `no-handler` (no agent runtime on the bus) 503,
 * invalid-json/invalid-body 400 and body-too-large 413; mapping them here again is refused.
 */
export const INTERNAL_STATUSES: StatusTable = {
  /** `from` and `to` are the same agent. */
  'self-call': 400,
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
  'no-task-hub': 503,
  'tasks-disabled': 503,
  'task-not-owner': 403,
  'task-state': 409,
  'invalid-task-id': 400,
  'unknown-workflow': 404,
  /** workflow.enabled is false. */
  'workflows-disabled': 503,
  /** workflow.max_parallel_runs runs are active. */
  'too-many-runs': 429,
  /** Cancel of a run that already ended. */
  'run-finished': 409,
};
