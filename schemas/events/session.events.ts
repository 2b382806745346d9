import * as v from 'valibot';
import { typeNames } from './type-names.js';

/** Stream `session:<agent>:<key>`: one chat's conversation with one agent (SPEC.md "Session"). */
export const SESSION_EVENT_SCHEMAS = {
  /** A fresh session: the first message, `/new`, `/reset` or an expiry. `created_at` is epoch ms. */
  'session.started': v.object({
    agent: v.string(),
    key: v.string(),
    transport: v.string(),
    chat_id: v.number(),
    topic_id: v.nullable(v.number()),
    created_at: v.number(),
    reason: v.string(),
  }),
  /** A turn finished in the session; `at_ms` is epoch ms. */
  'session.turn_recorded': v.object({
    turn_id: v.string(),
    provider: v.string(),
    session_id: v.nullable(v.string()),
    session_reset: v.boolean(),
    message_count: v.number(),
    count_at_threshold: v.nullable(v.number()),
    at_ms: v.number(),
    /** `session_age_warning_hours` when it was decided, so a replay re-decides `count_at_threshold`; absent in older logs. */
    warning_hours: v.optional(v.number()),
  }),
  /** Ended from outside (`DELETE /api/sessions/{id}`): the chat's next message opens a fresh session. */
  'session.ended': v.object({ reason: v.string(), at_ms: v.number() }),
};
export const SESSION_EVENTS = typeNames(SESSION_EVENT_SCHEMAS);
