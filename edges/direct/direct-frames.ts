import { SvcError, type TurnFile } from '../../schemas/index.js';

/* The direct API's frames (WIRE.md §1), both ways, and its error codes. */

export type AuthErrorCode = 'auth_timeout' | 'auth_required' | 'auth_failed';
export type SessionErrorCode = 'decrypt_failed' | 'empty' | 'message_too_large' | 'unknown_type' | 'no_handler' | 'internal_error';

export interface ProviderListing {
  id: string;
  name: string;
  models: string[];
}

export interface AuthOkFrame {
  type: 'auth_ok';
  chat_id: number;
  channel_id?: number;
  e2e_pk: string;
  providers: ProviderListing[];
  active_provider: string;
  active_model: string;
}

export type ServerFrame =
  | AuthOkFrame
  | { type: 'text_delta'; data: string }
  | { type: 'tool_activity'; data: string }
  | { type: 'system_status'; data: string | null }
  /** `interrupted`: not an answer that ended, but what a restart of svc cut off (sent on the chat's next connection). */
  | { type: 'result'; text: string; stream_fallback: boolean; files: TurnFile[]; interrupted?: true }
  | { type: 'abort_ok'; killed: number }
  | { type: 'notification'; notification: { id: string | number; title: string; body: string; read: boolean } }
  | { type: 'error'; code: AuthErrorCode | SessionErrorCode; message: string };

/** A decrypted client payload, sorted into what the session does with it. */
export type ClientRequest =
  | { kind: 'message'; text: string }
  | { kind: 'abort' }
  | { kind: 'error'; code: SessionErrorCode; message: string };

const STOP = /^\s*\/stop(?:@[A-Za-z0-9_]{1,64})?\s*$/i;

/** `{type:"message",text}` / `{type:"abort"}`; the text `/stop` is an abort (SPEC.md). */
export function classifyClientPayload(payload: Uint8Array): ClientRequest {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength).toString('utf8'));
  } catch {
    return { kind: 'error', code: 'unknown_type', message: 'payload is not JSON; expected {"type":"message","text":"..."} or {"type":"abort"}' };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { kind: 'error', code: 'unknown_type', message: 'payload is not a JSON object; expected {"type":"message","text":"..."} or {"type":"abort"}' };
  }
  const frame = value as Record<string, unknown>;
  if (frame.type === 'abort') return { kind: 'abort' };
  if (frame.type === 'message') {
    if (typeof frame.text !== 'string' || frame.text.trim() === '') {
      return { kind: 'error', code: 'empty', message: 'message.text is empty; send a non-empty string' };
    }
    if (STOP.test(frame.text)) return { kind: 'abort' };
    return { kind: 'message', text: frame.text };
  }
  const shown = typeof frame.type === 'string' ? JSON.stringify(frame.type.slice(0, 64)) : 'missing';
  return { kind: 'error', code: 'unknown_type', message: `type ${shown} is not allowed (one of message, abort)` };
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
