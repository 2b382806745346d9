import * as v from 'valibot';
import { ChatAgentNameSchema, ChatMessageIdSchema, ChatSessionIdSchema, MAX_CHAT_MESSAGE_CHARS } from './chat-sessions.schema.js';
import type { Role } from './config.schema.js';
import type { ConnectionLifecycleEvent } from './connection-machine.js';

/*
 * `/ws/admin` (SPEC.md "Admin WebSocket", WIRE.md §2): the frames both ways, and the contract of
 * machines/admin-connection.machine.ts with the edge that drives it (edges/ may not import
 * machines/, so both sides type against this declaration; bin/ hands the machine in).
 */

/** An access token is a few hundred bytes; anything near this is not one. */
const MAX_TOKEN_CHARS = 8192;

export const AdminAuthFrameSchema = v.strictObject({ type: v.literal('auth'), token: v.pipe(v.string('must be a string'), v.maxLength(MAX_TOKEN_CHARS)) });
export const AdminMessageFrameSchema = v.strictObject({
  type: v.literal('message'),
  agent: ChatAgentNameSchema,
  text: v.pipe(v.string('must be a string'), v.minLength(1, 'must not be empty'), v.maxLength(MAX_CHAT_MESSAGE_CHARS, `must be at most ${MAX_CHAT_MESSAGE_CHARS} characters`)),
  session_id: v.optional(ChatSessionIdSchema),
  user_msg_id: v.optional(ChatMessageIdSchema),
  assistant_msg_id: v.optional(ChatMessageIdSchema),
});
export const AdminAbortFrameSchema = v.strictObject({ type: v.literal('abort'), agent: ChatAgentNameSchema });
export const ADMIN_CLIENT_FRAME_TYPES = ['auth', 'message', 'abort'] as const;
export type AdminAuthFrame = v.InferOutput<typeof AdminAuthFrameSchema>;
export type AdminMessageFrame = v.InferOutput<typeof AdminMessageFrameSchema>;
export type AdminAbortFrame = v.InferOutput<typeof AdminAbortFrameSchema>;

/** Codes of the `error` frame for a frame the server refused; the connection stays open. */
export const ADMIN_FRAME_ERRORS = ['invalid_frame', 'unknown_type', 'frame_too_large', 'out_of_order', 'rate_limited'] as const;
export type AdminFrameError = (typeof ADMIN_FRAME_ERRORS)[number];

const Streaming = { session_id: v.string(), agent: v.string() };
const FileSchema = v.object({ path: v.string(), name: v.string(), is_image: v.boolean() });
/** What the server sends (WIRE.md §2). */
export const AdminServerFrameSchema = v.variant('type', [
  v.object({ type: v.literal('auth_ok'), agents: v.array(v.string()), role: v.nullable(v.string()) }),
  v.object({ type: v.literal('auth_error'), message: v.string() }),
  v.object({ type: v.literal('text_delta'), text: v.string(), ...Streaming }),
  v.object({ type: v.literal('tool_activity'), tool: v.string(), ...Streaming }),
  v.object({ type: v.literal('system_status'), data: v.nullable(v.string()), ...Streaming }),
  v.object({ type: v.literal('result'), text: v.string(), files: v.array(FileSchema), ...Streaming }),
  v.object({ type: v.literal('error'), message: v.string(), code: v.optional(v.string()), session_id: v.optional(v.nullable(v.string())), agent: v.optional(v.nullable(v.string())) }),
  v.object({ type: v.literal('abort_ok'), killed: v.number() }),
  v.object({
    type: v.literal('chat_message'),
    kind: v.string(),
    role: v.string(),
    agent: v.string(),
    session_id: v.nullable(v.string()),
    content: v.string(),
    meta: v.record(v.string(), v.unknown()),
    /** Epoch seconds (SPEC.md). */
    timestamp: v.number(),
  }),
  v.object({ type: v.literal('chat.read'), session_id: v.string(), last_read_message_id: v.nullable(v.string()), unread_count: v.number() }),
  v.object({ type: v.literal('notification'), data: v.record(v.string(), v.unknown()) }),
]);
export type AdminServerFrame = v.InferOutput<typeof AdminServerFrameSchema>;

/** `chat_message` kinds (WIRE.md §2 rule 3): deliveries that did not come from a chat turn. */
export const CHAT_ENVELOPE_KINDS = ['task_result', 'task_question', 'interagent', 'text'] as const;

// ---------------------------------------------------------------- connection machine contract

export type AdminConnectionState = 'awaiting_auth' | 'open' | 'closing' | 'closed';
export type AdminAuthRejection = 'auth_timeout' | 'auth_required' | 'auth_failed';
export type AdminCloseReason = AdminAuthRejection | 'client' | 'backpressure' | 'shutdown' | 'revoked';

/** What the edge made of a frame before the machine rules on it. */
export type AdminFrameKind = 'auth' | 'message' | 'abort' | 'invalid' | 'unknown' | 'too_large';

export interface AdminConnectionInput {
  /** Frames a client may send per window before they are refused with `rate_limited`. */
  maxFrames: number;
  windowMs: number;
}

export interface AdminConnectionContext extends AdminConnectionInput {
  role: Role | null;
  /** The verdict on the last frame: accepted, or the error frame's code. */
  lastFrame: 'accepted' | AdminFrameError | null;
  windowStart: number;
  windowCount: number;
  rejection: AdminAuthRejection | null;
  closeReason: AdminCloseReason | null;
}

export type AdminConnectionEvent =
  /** The auth frame's credential, as the server's authenticators judged it. */
  | { type: 'auth'; ok: boolean; role: Role | null }
  /** `at`: the edge's clock (ms), for the rate window. */
  | { type: 'frame'; kind: AdminFrameKind; at: number }
  | ConnectionLifecycleEvent<'backpressure' | 'shutdown' | 'revoked'>;
