import * as v from 'valibot';
import { typeNames } from './type-names.js';

/** Stream `config`: the main config file as svc loaded and reloaded it. */
export const CONFIG_EVENT_SCHEMAS = {
  /** `unknown_keys`: keys of the file the schema does not know (kept, ignored, most likely typos); absent when none. */
  'config.loaded': v.object({ file: v.string(), created: v.boolean(), keys_added: v.array(v.string()), unknown_keys: v.optional(v.array(v.string())) }),
  'config.reloaded': v.object({ hot_applied: v.array(v.string()), restart_required: v.array(v.string()), unknown_keys: v.optional(v.array(v.string())) }),
  /** The edited file did not parse or validate; the previous config stays in force. */
  'config.rejected': v.object({ file: v.string(), errors: v.array(v.string()) }),
};
export const CONFIG_EVENTS = typeNames(CONFIG_EVENT_SCHEMAS);
