import * as v from 'valibot';
import { typeNames } from './type-names.js';

/** Stream `agent:<name>`: an agent's runtime coming and going. */
export const AGENT_EVENT_SCHEMAS = {
  'agent.started': v.object({ name: v.string(), is_main: v.boolean(), provider: v.string(), model: v.string(), workspace: v.string() }),
  'agent.stopped': v.object({ name: v.string(), reason: v.string() }),
};
export const AGENT_EVENTS = typeNames(AGENT_EVENT_SCHEMAS);
