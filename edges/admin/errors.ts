import type { StatusTable } from '../http/index.js';

/** The one status table of the admin surface, beyond COMMON_STATUSES (DESIGN.md §4). */
export const ADMIN_STATUSES: StatusTable = {
  /** A command's data failed its schema where it is handled. */
  'invalid-command': 400,
  /** A read marker or `before` naming a message the session does not hold (SPEC.md "Errors"). */
  'unknown-message': 400,
  /** The caller's allowed_agents (or an agent's can_call) excludes the agent the request touches. */
  'agent-not-allowed': 403,
  'call-not-allowed': 403,
  'unknown-caller': 403,
  'unknown-agent': 404,
  'chat-session-exists': 409,
  /** A history write bigger than one fact may be. */
  'event-too-large': 413,
  'agent-stopped': 503,
};
