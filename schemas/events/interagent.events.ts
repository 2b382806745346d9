import * as v from 'valibot';
import { ROLES } from '../config.schema.js';
import { typeNames } from './type-names.js';

/** Stream `interagent:<task id>`: an asynchronous inter-agent call (`/interagent/send_async`). */
const Base = { task_id: v.string(), from: v.string(), to: v.string() };
/** Where the caller wants the result (absent in facts recorded before it existed: the call's chat). */
export const ReplyToSchema = v.object({ transport: v.nullable(v.string()), chat_id: v.number(), topic_id: v.nullable(v.number()) });

export const INTERAGENT_EVENT_SCHEMAS = {
  /** `reply_to`/`silent` say how the task hub delivers the result to `from` (silent: never, the facts are the record). */
  'interagent.requested': v.object({
    ...Base,
    chat_id: v.nullable(v.number()),
    topic_id: v.nullable(v.number()),
    caller_user_id: v.nullable(v.string()),
    /** The caller's authenticated role: the wake turn delivering the reply runs with it (absent in older facts). */
    caller_role: v.optional(v.nullable(v.picklist(ROLES))),
    reply_to: v.optional(v.nullable(ReplyToSchema)),
    silent: v.optional(v.boolean()),
  }),
  'interagent.completed': v.object({ ...Base, success: v.boolean(), text: v.string(), error: v.nullable(v.string()) }),
};
export const INTERAGENT_EVENTS = typeNames(INTERAGENT_EVENT_SCHEMAS);
