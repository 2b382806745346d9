import * as v from 'valibot';
import { defineCommand } from '../command.js';
import { typeNames } from '../events/type-names.js';

/*
 * `chat.deliver`: svc itself says something in a chat (a workflow's notify or wait_for_reply
 * message), outside any turn. One handler routes it by transport (actors/chat-delivery/): the admin
 * chat gets a persisted `chat_message`, the direct API the `chat.delivered` chunk its connections of
 * that chat turn into a sealed `result` frame. Messenger transports plug in there when they exist.
 */

export const MAX_DELIVERED_TEXT_CHARS = 256 * 1024;

export const ChatDeliverySchema = v.strictObject({
  transport: v.pipe(v.string(), v.minLength(1), v.maxLength(32)),
  chat_id: v.pipe(v.number(), v.integer()),
  topic_id: v.nullable(v.pipe(v.number(), v.integer())),
  text: v.pipe(v.string(), v.minLength(1), v.maxLength(MAX_DELIVERED_TEXT_CHARS)),
  /** Whose chat it shows in, where a transport keeps chats per agent (the admin chat); the main agent when absent. */
  agent: v.optional(v.pipe(v.string(), v.regex(/^[A-Za-z0-9_-]{1,64}$/))),
  /** What sends it (`workflow:<run id>`), for the log and the message's meta. */
  source: v.pipe(v.string(), v.minLength(1), v.maxLength(128)),
});
export type ChatDelivery = v.InferOutput<typeof ChatDeliverySchema>;

export const CHAT_DELIVERY_COMMANDS = {
  /** `delivered`: false when the transport has no delivery here (nothing was sent). */
  deliver: defineCommand('chat.deliver', ChatDeliverySchema, v.object({ delivered: v.boolean() })),
} as const;

/** Transient on `chat:<transport>:<chat id>`: a delivery for the live connections of that chat. */
export const CHAT_DELIVERY_CHUNK_SCHEMAS = {
  'chat.delivered': v.object({ transport: v.string(), chat_id: v.number(), topic_id: v.nullable(v.number()), text: v.string(), source: v.string() }),
};
export const CHAT_DELIVERY_CHUNKS = typeNames(CHAT_DELIVERY_CHUNK_SCHEMAS);
