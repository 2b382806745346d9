import * as v from 'valibot';
import { ReplySchema } from '../agent-commands.schema.js';
import { typeNames } from './type-names.js';

/** Stream `agent:<name>`: an agent's runtime coming and going. */
export const AGENT_EVENT_SCHEMAS = {
  'agent.started': v.object({ name: v.string(), is_main: v.boolean(), provider: v.string(), model: v.string(), workspace: v.string() }),
  'agent.stopped': v.object({ name: v.string(), reason: v.string() }),
};
export const AGENT_EVENTS = typeNames(AGENT_EVENT_SCHEMAS);

/** Transient on `request:<id>`: ends one agent request's stream with its Reply (bus/agents.ts). */
export const AGENT_CHUNK_SCHEMAS = {
  'agent.replied': ReplySchema,
};
export const AGENT_CHUNKS = typeNames(AGENT_CHUNK_SCHEMAS);
