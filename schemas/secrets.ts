/**
 * Keys whose values are credentials wherever they appear in config-like data and records: `token`,
 * `api_key`, `jwt_secret`, `matrix.password`, env-style `OPENAI_API_KEY`, plurals and spellings (not
 * `*_tokens`: those are counts), and every `hmac_*` field of a webhook file another tool wrote
 * (ductor's `hmac_secret`, and beside it the scheme fields, which say how to forge nothing but are
 * masked with it rather than sorted one by one). Matched by name, case-insensitive, at any depth, so
 * a key svc does not know (a hand edit, an older tool) is masked too.
 */
const SECRET_KEY = /(^|_)(token|passwords?|passwd|secrets?|keys?|credentials?)$|^hmac_/i;
/**
 * Named like a credential but not one: a marker the agent prints (heartbeat's `HEARTBEAT_OK`), and a
 * webhook signature scheme's `signature_key` / `timestamp_key` (the names of parts of a header,
 * `v1` and `t`), which the panel's edit form must be able to show and send back.
 */
const NOT_SECRET = new Set(['ack_token', 'signature_key', 'timestamp_key']);

export const MASK = '***';

/**
 * A copy with every non-empty credential replaced by `***`, for display (`svc config show`,
 * `/api/config`, and every admin listing of records: cron jobs, webhooks, the export). Everything under a credential's key is one too (`"token": {"value": ...}`,
 * `"api_keys": [...]`), numbers included.
 */
export function maskSecrets<T>(value: T): T {
  return walk(value, false) as T;
}

function walk(value: unknown, secret: boolean): unknown {
  if (Array.isArray(value)) return value.map((v) => walk(v, secret));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, walk(v, secret || (SECRET_KEY.test(k) && !NOT_SECRET.has(k)))]));
  }
  if (secret && ((typeof value === 'string' && value !== '' && value !== 'null') || typeof value === 'number')) return MASK;
  return value;
}
