import type { StatusTable } from '../http/index.js';

/** The one status table of the admin surface, beyond COMMON_STATUSES (DESIGN.md §4). */
export const ADMIN_STATUSES: StatusTable = {
  /** A command's data failed its schema where it is handled (an over-long agent name, ...). */
  'invalid-command': 400,
  /** `PUT /api/agents/{name}`: a path that is relative, missing, not a directory or has `..`. */
  'invalid-additional-directory': 400,
  /** An avatar upload whose bytes are not a PNG, JPEG, GIF or WebP picture. */
  'invalid-image': 415,
  /** The registry file on disk is broken (a hand edit): fix it before the panel may write it. */
  'registry-invalid': 409,
  'invalid-agent-name': 400,
  /** The principal's allowed_agents does not list the agent. */
  'agent-not-allowed': 403,
  'unknown-agent': 404,
  /** Memory module or skill document above its size limit. */
  'file-too-large': 413,
  'file-exists': 409,
  'skill-exists': 409,
  /** A memory write whose `base_version` is no longer the file's: reload or overwrite. */
  'memory-conflict': 409,
  /** config.json itself does not validate: fix it first, nothing was written. */
  'config-invalid': 409,
  /** A signed download link that was not issued by this server (or was altered). */
  'signature-invalid': 403,
  'link-expired': 410,
  'cron-job-exists': 409,
  /** Run-now on a job whose record on disk is not valid (a hand edit): fix it first, as with registry-invalid. */
  'cron-job-invalid': 409,
  'webhook-exists': 409,
  'webhook-no-secret': 409,
  // Parts not running (yet, during start-up): the task hub and the cron scheduler.
  'no-task-hub': 503,
  'tasks-disabled': 503,
  'task-state': 409,
  'no-scheduler': 503,
  /** A read marker or `before` naming a message the session does not hold (SPEC.md "Errors"). */
  'unknown-message': 400,
  'call-not-allowed': 403,
  'unknown-caller': 403,
  'chat-session-exists': 409,
  /** A history write bigger than one fact may be. */
  'event-too-large': 413,
  'agent-stopped': 503,
  /** Wrong name or password, or a refused token: one code for all, so it never says which. */
  'invalid-credentials': 401,
  /** Too many failed logins for one account name (SPEC.md's per-IP limit is `rate-limited`). */
  'account-locked': 429,
  'invalid-totp': 400,
  /** 2FA set up or turned off twice, or verified with nothing set up. */
  'totp-state': 409,
  /** SPEC.md "Errors": errors-acknowledge (and other per-user writes) by the static-token admin. */
  'legacy-admin': 400,
  'user-exists': 409,
  'last-admin': 409,
};
