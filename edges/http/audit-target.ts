import { isPlainObject } from '../../schemas/index.js';
import type { HttpReply, HttpRequest } from './http.js';

/*
 * What an audited admin request changed, for an auditor (issue 21: "creating a user records only the
 * path"): the target is what the path names, else the identity of the thing the body or the answer
 * names (the user created, the cron job or webhook, whose id the daemon may have chosen, the file),
 * else, for a settings write, the names of the settings it sets. Only values under the identifying
 * keys below are ever copied, and of the rest of the body only key names: a password, token, hash
 * or TOTP secret never reaches the log, whatever the body holds.
 */

const MAX_VALUE_CHARS = 200;
export const MAX_TARGET_CHARS = 300;

/** Keys whose value names a resource (in this order of preference); none of them holds a secret. */
const ID_KEYS = ['username', 'id', 'relative_path', 'file_path', 'path', 'filename', 'name'] as const;
/** Query keys that name where a write went (`PUT /api/memory?agent=`, `/upload?relative_path=`). */
const QUERY_KEYS = ['agent', 'relative_path', 'path'] as const;

export interface AuditTarget {
  target: string | null;
  detail: Record<string, string> | null;
}

const idOf = (o: Record<string, unknown>, key: string): string | null => {
  const v = o[key];
  return typeof v === 'string' && v !== '' ? v.slice(0, MAX_VALUE_CHARS) : typeof v === 'number' ? String(v) : null;
};

function jsonBody(req: HttpRequest): Record<string, unknown> | null {
  if (req.body.length === 0 || !/^application\/json\b/i.test(req.headers['content-type'] ?? '')) return null;
  try {
    const parsed: unknown = JSON.parse(req.body.toString('utf8'));
    return isPlainObject(parsed) ? parsed : null;
  } catch {
    return null;
  }
}

export function auditTarget(req: HttpRequest, reply: HttpReply | undefined): AuditTarget {
  const body = jsonBody(req);
  // An answer names what was made only when it was made: an error's body names nothing.
  const made = reply && reply.status < 300 && isPlainObject(reply.json) ? reply.json : null;
  const detail: Record<string, string> = {};

  let target = Object.values(req.params).join('/') || null;
  for (const key of ID_KEYS) {
    if (target !== null) break;
    target = (made && idOf(made, key)) ?? (body && idOf(body, key));
  }
  for (const key of QUERY_KEYS) {
    const v = req.query.get(key);
    if (v) detail[key] = v.slice(0, MAX_VALUE_CHARS);
  }
  // Where the write went, when the query says (an agent's memory, an upload's folder).
  target ??= detail.relative_path ?? detail.path ?? detail.agent ?? null;
  if (body) {
    const agent = idOf(body, 'agent');
    if (agent !== null) detail.agent = agent;
    // Names only: which fields a write set (`password` among them says a password changed, not to what).
    const fields = Object.keys(body).sort().join(',').slice(0, MAX_VALUE_CHARS);
    if (fields !== '') detail.fields = fields;
    // A settings write names no resource: the settings it sets are its target.
    target ??= fields || null;
  }
  return { target: target === null ? null : target.slice(0, MAX_TARGET_CHARS), detail: Object.keys(detail).length ? detail : null };
}
