import * as v from 'valibot';
import { typeNames } from './type-names.js';

/** Stream `registry`: the sub-agent registry file as svc reloaded it. */
export const REGISTRY_EVENT_SCHEMAS = {
  'registry.agent_added': v.object({ name: v.string() }),
  'registry.agent_removed': v.object({ name: v.string() }),
  'registry.agent_changed': v.object({ name: v.string(), restart: v.boolean(), fields: v.array(v.string()) }),
  'registry.rejected': v.object({ file: v.string(), errors: v.array(v.string()) }),
};
export const REGISTRY_EVENTS = typeNames(REGISTRY_EVENT_SCHEMAS);
