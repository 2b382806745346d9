import * as v from 'valibot';
import type { ErrorCode } from './error-codes.js';
import { SvcError } from './error.js';

/**
 * Parse untrusted data with a schema, or throw SvcError(code) whose message names the first bad
 * field (`body.title: ...`, `agent.message data.chat_id: ...`): the one way every layer rejects input.
 */
export function parseWith<S extends v.GenericSchema>(schema: S, raw: unknown, code: ErrorCode, what: string): v.InferOutput<S> {
  const r = v.safeParse(schema, raw);
  if (r.success) return r.output;
  const issue = r.issues[0]!;
  const path = v.getDotPath(issue);
  throw new SvcError(code, `${what}${path ? `.${path}` : ''}: ${issue.message}`);
}
