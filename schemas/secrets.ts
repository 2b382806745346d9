/**
 * Keys whose values are credentials wherever they appear in config-like data: `token`, `api_key`,
 * `jwt_secret`, `matrix.password`, env-style `OPENAI_API_KEY`, plurals and spellings (not `*_tokens`: those are counts).
 */
const SECRET_KEY = /(^|_)(token|passwords?|passwd|secrets?|keys?|credentials?)$/i;
/** Named like a credential but only a marker the agent prints (heartbeat's `HEARTBEAT_OK`). */
const NOT_SECRET = new Set(['ack_token']);

export const MASK = '***';

/**
 * A copy with every non-empty credential replaced by `***`, for display (`svc config show`,
 * `/api/config`). Everything under a credential's key is one too (`"token": {"value": ...}`,
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
