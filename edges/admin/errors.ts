import type { StatusTable } from '../http/index.js';

/** The one status table of the admin surface, beyond COMMON_STATUSES (DESIGN.md §4). */
export const ADMIN_STATUSES: StatusTable = {
  /** Wrong name or password, or a refused token: one code for all, so it never says which. */
  'invalid-credentials': 401,
  /** Too many failed logins for one account name (SPEC.md's per-IP limit is `rate-limited`). */
  'account-locked': 429,
  'csrf-failed': 403,
  'invalid-totp': 400,
  /** 2FA set up or turned off twice, or verified with nothing set up. */
  'totp-state': 409,
  /** SPEC.md "Errors": errors-acknowledge (and other per-user writes) by the static-token admin. */
  'legacy-admin': 400,
  'user-exists': 409,
  'last-admin': 409,
};
