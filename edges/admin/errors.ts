import type { StatusTable } from '../http/index.js';

/** The one status table of the admin surface, beyond COMMON_STATUSES (DESIGN.md §4). */
export const ADMIN_STATUSES: StatusTable = {};
