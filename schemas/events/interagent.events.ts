import * as v from 'valibot';
import { typeNames } from './type-names.js';

/** Stream `interagent:<task id>`: an asynchronous inter-agent call (`/interagent/send_async`). */
const Base = { task_id: v.string(), from: v.string(), to: v.string() };

export const INTERAGENT_EVENT_SCHEMAS = {
  'interagent.requested': v.object({ ...Base, chat_id: v.nullable(v.number()), topic_id: v.nullable(v.number()), caller_user_id: v.nullable(v.string()) }),
  'interagent.completed': v.object({ ...Base, success: v.boolean(), text: v.string(), error: v.nullable(v.string()) }),
};
export const INTERAGENT_EVENTS = typeNames(INTERAGENT_EVENT_SCHEMAS);
