import * as v from 'valibot';
import { AUTH_REJECTIONS } from './events/connection.events.js';
import { TurnFileSchema } from './events/turn.events.js';

/*
 * The direct API's `/ws` frames (WIRE.md §1), both ways, and their error codes. Client frames are
 * parsed by these schemas; server frames are typed by them.
 */

/** Codes of the error frames a client can get: refusals before auth, then per-request failures. */
export const AUTH_ERROR_CODES = AUTH_REJECTIONS;
export type AuthErrorCode = (typeof AUTH_ERROR_CODES)[number];
export const SESSION_ERROR_CODES = ['decrypt_failed', 'empty', 'message_too_large', 'unknown_type', 'no_handler', 'internal_error'] as const;
export type SessionErrorCode = (typeof SESSION_ERROR_CODES)[number];

/**
 * The first, plaintext frame. Only its shape is checked here: the token is compared in constant
 * time, the key by the crypto, and chat/channel by the connection machine, each with its own answer.
 */
export const AuthFrameSchema = v.looseObject({
  type: v.literal('auth'),
  token: v.optional(v.unknown()),
  e2e_pk: v.optional(v.unknown()),
  chat_id: v.optional(v.unknown()),
  channel_id: v.optional(v.unknown()),
});
export type AuthFrame = v.InferOutput<typeof AuthFrameSchema>;

/** What a client sends inside the encrypted session. Unknown keys are ignored (clients send extras). */
export const ClientFrameSchema = v.variant('type', [
  v.looseObject({
    type: v.literal('message'),
    text: v.pipe(
      v.string(),
      v.check((s) => s.trim() !== ''),
    ),
  }),
  v.looseObject({ type: v.literal('abort') }),
]);
export type ClientFrame = v.InferOutput<typeof ClientFrameSchema>;
export const CLIENT_FRAME_TYPES = ['message', 'abort'] as const;

export const WireProviderSchema = v.object({ id: v.string(), name: v.string(), models: v.array(v.string()) });
export type WireProvider = v.InferOutput<typeof WireProviderSchema>;

export const AuthOkFrameSchema = v.object({
  type: v.literal('auth_ok'),
  chat_id: v.number(),
  channel_id: v.optional(v.number()),
  e2e_pk: v.string(),
  providers: v.array(WireProviderSchema),
  active_provider: v.string(),
  active_model: v.string(),
});
export type AuthOkFrame = v.InferOutput<typeof AuthOkFrameSchema>;

export const ServerFrameSchema = v.variant('type', [
  AuthOkFrameSchema,
  v.object({ type: v.literal('text_delta'), data: v.string() }),
  v.object({ type: v.literal('tool_activity'), data: v.string() }),
  v.object({ type: v.literal('system_status'), data: v.nullable(v.string()) }),
  /** `interrupted`: not an answer that ended, but what a restart of svc cut off (sent on the chat's next connection). */
  v.object({ type: v.literal('result'), text: v.string(), stream_fallback: v.boolean(), files: v.array(TurnFileSchema), interrupted: v.optional(v.literal(true)) }),
  v.object({ type: v.literal('abort_ok'), killed: v.number() }),
  v.object({
    type: v.literal('notification'),
    notification: v.object({ id: v.union([v.string(), v.number()]), title: v.string(), body: v.string(), read: v.boolean() }),
  }),
  v.object({ type: v.literal('error'), code: v.picklist([...AUTH_ERROR_CODES, ...SESSION_ERROR_CODES]), message: v.string() }),
]);
export type ServerFrame = v.InferOutput<typeof ServerFrameSchema>;
