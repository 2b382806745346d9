import * as v from 'valibot';
import { TRANSPORT_STATES } from '../chat-transport.js';
import { typeNames } from './type-names.js';

/*
 * Stream `messenger:<transport>:<bot id>`: updates a messenger bot took from its server, recorded
 * before the agent is asked, so an update the server hands out again (after a crash, before it
 * heard that the update was taken) is recognised and never runs twice.
 */
export const MESSENGER_EVENT_SCHEMAS = {
  'messenger.update_accepted': v.object({
    transport: v.string(),
    /** The transport's own update counter (Telegram's update_id), or the server time of the event (Matrix): increasing per bot. */
    update_id: v.number(),
    /** The event's own id where the transport has one (Matrix): what a repeat is recognised by. */
    event_id: v.optional(v.string()),
    chat_id: v.number(),
    topic_id: v.nullable(v.number()),
    agent: v.string(),
    /** The request the agent is asked with; its answer is owed to the chat until `messenger.answer_delivered` names it. */
    request_id: v.optional(v.string()),
  }),
  /**
   * Same stream: the answer to an accepted update reached its chat. An answer the agent finished
   * but the chat never got (svc died between the two) is sent once after the restart.
   */
  'messenger.answer_delivered': v.object({
    transport: v.string(),
    request_id: v.string(),
  }),
  /**
   * Stream `transport:<name>:<agent>`: a messenger came up, lost its connection or could not start
   * (a bad token, a server out of reach) and retries, or stopped — what `svc status` shows, read
   * from the log like the rest of a run. Recorded when the state or its reason changes, not per retry.
   */
  'messenger.state_changed': v.object({
    transport: v.string(),
    agent: v.string(),
    state: v.picklist(TRANSPORT_STATES),
    detail: v.string(),
  }),
};
export const MESSENGER_EVENTS = typeNames(MESSENGER_EVENT_SCHEMAS);
export const messengerStream = (transport: string, botId: string | number): string => `messenger:${transport}:${botId}`;
export const transportStateStream = (transport: string, agent: string): string => `transport:${transport}:${agent}`;
