import * as v from 'valibot';
import { defineCommand } from '../command.js';
import { typeNames } from '../events/type-names.js';

/*
 * `chat.deliver`: svc itself says something in a chat (a workflow's notify or wait_for_reply
 * message, a cron result, a wake webhook's answer), outside any turn. One handler
 * (actors/chat-delivery/) hands it to the chat's transport (schemas/chat-transport.ts) when that
 * transport can reach the chat now, else to the agent's admin chat, which always can.
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
  /** Stable per message where the sender has one: the admin chat keeps it under this id, so a retried delivery does not show twice. */
  id: v.optional(v.pipe(v.string(), v.regex(/^[A-Za-z0-9._:-]{1,160}$/, 'letters, digits, . _ : - only'))),
});
export type ChatDelivery = v.InferOutput<typeof ChatDeliverySchema>;

export const CHAT_DELIVERY_COMMANDS = {
  /**
   * `delivered`: false when nothing was said anywhere. `to`: the transport that got it — the one
   * asked, or `admin` when that one was not running and the agent's admin chat got it instead.
   */
  deliver: defineCommand('chat.deliver', ChatDeliverySchema, v.object({ delivered: v.boolean(), to: v.optional(v.string()) })),
} as const;

/** Transient on `chat:<transport>:<chat id>`: the chat's own transport took a delivery (for live observers). */
export const CHAT_DELIVERY_CHUNK_SCHEMAS = {
  'chat.delivered': v.object({ transport: v.string(), chat_id: v.number(), topic_id: v.nullable(v.number()), text: v.string(), source: v.string() }),
};
export const CHAT_DELIVERY_CHUNKS = typeNames(CHAT_DELIVERY_CHUNK_SCHEMAS);

/**
 * Stream `delivery:<transport>:<chat id>`: something svc had to say in a chat whose transport was
 * not running went to the agent's admin chat instead (`to`), and `reason` says why. Nothing svc
 * computed for a person is dropped: the log says where each such result went.
 */
export const CHAT_DELIVERY_EVENT_SCHEMAS = {
  'chat.delivery_rerouted': v.object({
    transport: v.string(),
    chat_id: v.number(),
    topic_id: v.nullable(v.number()),
    agent: v.string(),
    source: v.string(),
    to: v.string(),
    reason: v.string(),
    /** The admin chat session that got it. */
    session_id: v.nullable(v.string()),
  }),
};
export const CHAT_DELIVERY_EVENTS = typeNames(CHAT_DELIVERY_EVENT_SCHEMAS);
export const chatDeliveryStream = (transport: string, chatId: number): string => `delivery:${transport}:${chatId}`;
