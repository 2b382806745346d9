import type { StatusTable } from '../http/index.js';

/**
 * The webhook server's codes beyond COMMON_STATUSES, which already maps rate-limited 429,
 * unsupported-media-type 415, body-too-large 413, invalid-json / invalid-body 400, not-found 404
 * and unauthorized 401.
 */
export const WEBHOOK_STATUSES: StatusTable = {
  'webhook-disabled': 403,
  replayed: 409,
  'webhooks-unavailable': 503,
  'bus-closed': 503,
};

/**
 * WIRE.md §4 names its errors in snake case (`rate_limited`, `invalid_json`): `error` carries that
 * name, `message` the human text, and `code` the catalog code every other surface answers with.
 */
export function webhookErrorBody({ error, code }: { error: string; code: string }): { error: string; message: string; code: string } {
  return { error: code.replace(/-/g, '_'), message: error, code };
}
