import type { StatusTable } from '../http/index.js';

/** The one status table of the admin surface, beyond COMMON_STATUSES (DESIGN.md §4). */
export const ADMIN_STATUSES: StatusTable = {
  // Acting on an agent outside the caller's allowed_agents (SPEC.md "Agent-scoped access").
  'agent-not-allowed': 403,
  'cron-job-exists': 409,
  'webhook-exists': 409,
  'webhook-no-secret': 409,
  // Parts that come in later issues: the task hub (13) and the cron scheduler.
  'no-task-hub': 503,
  'no-scheduler': 503,
};
