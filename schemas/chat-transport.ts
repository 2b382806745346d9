import { createHash } from 'node:crypto';
import * as v from 'valibot';
import type { ChatButton } from './agent-commands.schema.js';

/*
 * What a chat transport is (DESIGN.md §7): a surface people chat with svc through — the direct
 * API, the admin chat, Telegram, Matrix. Inbound, each turns its users' messages, commands and
 * button presses into the one agent contract (`AgentClient.ask`, bus/agents.ts) with the sender as
 * a Principal; outbound, svc says things outside a turn (a cron result, a workflow's question, a
 * notification) through `deliver`, and the registry (bus/transports.ts) asks `reaches` first, so a
 * chat that cannot be told now gets the message in the agent's admin chat instead, never nowhere.
 */

/** A chat, and the topic within it (a Telegram forum topic, a direct-API channel); null: the chat itself. */
export interface ChatAddress {
  chat_id: number;
  topic_id: number | null;
}

/** Something svc says in a chat outside a turn. */
export interface OutboundMessage extends ChatAddress {
  text: string;
  /** What sends it (`cron:<job>`, `workflow:<run>`), for the log. */
  source: string;
  /** Whose chat it is, where a transport keeps chats per agent. */
  agent: string;
  buttons?: readonly ChatButton[];
  /** The correlation id of the facts the delivery causes. */
  correlation: string;
  /** The sender's own id for the message, where it has one (the admin chat keeps it under it). */
  id?: string;
}

/** An answer the agent finished for a messenger's chat that svc died before sending (machines/messenger-outbox.logic.ts). */
export interface OwedAnswer extends ChatAddress {
  /** The request it answers: what `messenger.answer_delivered` names once it is sent. */
  request_id: string;
  agent: string;
  text: string;
}

export const TRANSPORT_STATES = ['starting', 'running', 'retrying', 'stopped'] as const;

/** For the start banner, `svc status`, `svc doctor` and the dashboard. */
export const TransportHealthSchema = v.object({
  name: v.string(),
  /** The agent a bot of its own speaks for (a sub-agent's); absent: shared by every agent without one. */
  agent: v.optional(v.string()),
  /** `retrying`: it failed to start or lost its connection, and tries again after a backoff. */
  state: v.picklist(TRANSPORT_STATES),
  /** One phrase: what it is connected as, or why it is not. */
  detail: v.string(),
});
export type TransportHealth = v.InferOutput<typeof TransportHealthSchema>;

export interface ChatTransport {
  /** `api`, `admin`, `telegram`, `matrix`: the `transport` of the messages it asks with. */
  readonly name: string;
  health(): TransportHealth;
  /** Whether a message to that chat can be delivered now (running, and the chat is one it can talk to). */
  reaches(to: ChatAddress): boolean;
  /** Resolves once the chat has it; rejects when it could not be sent (the registry then reroutes it). */
  deliver(message: OutboundMessage): Promise<void>;
}

/**
 * One message a transport streams an answer into: the first call sends it, later ones edit it.
 * Each receives the whole answer so far (Markdown), and renders and cuts it to fit the transport.
 */
export interface MessageEditor {
  send(text: string): Promise<void>;
  edit(text: string): Promise<void>;
}

/** An answer being streamed (actors/messenger/edit-streamer.ts paces it by StreamingConfig). */
export interface EditStream {
  /** The answer so far, as it grows. */
  update(text: string): void;
  /** No more updates: waits for the request in flight; `shown` is what the message shows, null if it was never sent. */
  finish(): Promise<{ shown: string | null }>;
}

export type StartEditStream = (editor: MessageEditor) => EditStream;

/**
 * The chat id a Matrix room's messages run under (sessions, tasks and deliveries are keyed by
 * numbers): 48 bits of the room id's SHA-256, the same on every start and every machine, so a room
 * keeps its session across restarts and a delivery addressed to it finds it again. Never 0 (an
 * unset chat). Of a user id (`@who:server`) it names that person's direct room with the bot: the
 * main chat, where a `wake` without a chat goes.
 */
export function matrixChatId(roomOrUserId: string): number {
  const n = parseInt(createHash('sha256').update(roomOrUserId).digest('hex').slice(0, 12), 16);
  return n === 0 ? 1 : n;
}
