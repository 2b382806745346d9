import * as v from 'valibot';
import { ClientFrameSchema, CLIENT_FRAME_TYPES, SvcError, isPlainObject, type SessionErrorCode } from '../../schemas/index.js';

/* How the direct edge reads client frames and words its error frames (WIRE.md §1). */

export type { AuthErrorCode, ServerFrame, SessionErrorCode, WireProvider as ProviderListing } from '../../schemas/index.js';

/** A decrypted client payload, sorted into what the session does with it. */
export type ClientRequest =
  | { kind: 'message'; text: string }
  | { kind: 'abort' }
  | { kind: 'error'; code: SessionErrorCode; message: string };

const STOP = /^\s*\/stop(?:@[A-Za-z0-9_]{1,64})?\s*$/i;
const EXPECTED = 'expected {"type":"message","text":"..."} or {"type":"abort"}';

/** `{type:"message",text}` / `{type:"abort"}`, parsed by ClientFrameSchema; the text `/stop` is an abort (SPEC.md). */
export function classifyClientPayload(payload: Uint8Array): ClientRequest {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength).toString('utf8'));
  } catch {
    return { kind: 'error', code: 'unknown_type', message: `payload is not JSON; ${EXPECTED}` };
  }
  // An array is an object to the schema's object check; on the wire it is not a frame.
  if (!isPlainObject(value)) return { kind: 'error', code: 'unknown_type', message: `payload is not a JSON object; ${EXPECTED}` };
  const r = v.safeParse(ClientFrameSchema, value);
  if (r.success) {
    const frame = r.output;
    if (frame.type === 'abort' || STOP.test(frame.text)) return { kind: 'abort' };
    return { kind: 'message', text: frame.text };
  }
  if (value.type === 'message') return { kind: 'error', code: 'empty', message: 'message.text is empty; send a non-empty string' };
  const shown = typeof value.type === 'string' ? JSON.stringify(value.type.slice(0, 64)) : 'missing';
  return { kind: 'error', code: 'unknown_type', message: `type ${shown} is not allowed (one of ${CLIENT_FRAME_TYPES.join(', ')})` };
}

/** Refusals the client can act on, as session error codes; `internal` ones are logged, not shown. */
const SESSION_ERRORS: Readonly<Record<string, { code: SessionErrorCode; internal: boolean }>> = {
  'no-handler': { code: 'no_handler', internal: false },
  empty: { code: 'empty', internal: false },
  'message-too-large': { code: 'message_too_large', internal: false },
  'session-busy': { code: 'internal_error', internal: false },
};

/** A failure of the agent contract as a session error: a known refusal keeps its meaning, anything else is internal. */
export function sessionErrorOf(e: unknown): { code: SessionErrorCode; message: string; internal: boolean } {
  if (e instanceof SvcError && Object.hasOwn(SESSION_ERRORS, e.code)) {
    const known = SESSION_ERRORS[e.code]!;
    const message = e.code === 'no-handler' ? 'no agent runtime is attached to handle this request' : e.message;
    return { code: known.code, message, internal: known.internal };
  }
  return { code: 'internal_error', message: 'the request failed inside the service; see the service log', internal: true };
}
