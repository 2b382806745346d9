import * as v from 'valibot';
import { typeNames } from './type-names.js';

/*
 * Stream `audit`: every mutating admin action and every login attempt (SPEC.md `/api/audit`), as
 * facts, so the audit log is a projection of the event log. `target` names what was acted on;
 * `detail` never holds a secret (passwords, tokens and TOTP codes are left out by the recorder).
 */
export const AUDIT_STREAM = 'audit';

export const AUDIT_EVENT_SCHEMAS = {
  'audit.recorded': v.object({
    /** Username, or null for the static-token legacy admin or an unknown login name. */
    actor: v.nullable(v.string()),
    /** `auth.login`, `auth.login_failed`, `POST /api/cron`, ... */
    action: v.string(),
    target: v.nullable(v.string()),
    /** HTTP status of the request, when there was one. */
    status: v.nullable(v.number()),
    ip: v.nullable(v.string()),
    detail: v.optional(v.record(v.string(), v.union([v.string(), v.number(), v.boolean(), v.null()]))),
  }),
};
export const AUDIT_EVENTS = typeNames(AUDIT_EVENT_SCHEMAS);
