import * as v from 'valibot';
import type { Json } from '../event.schema.js';
import { typeNames } from './type-names.js';

/** A journaled actor's inputs, as the host delivered them: what replay re-drives its machine from (DESIGN.md §8). */
const AnyJson = v.custom<Json>(() => true);
const Snapshot = v.object({ value: AnyJson, context: v.record(v.string(), AnyJson) });

export const ACTOR_EVENT_SCHEMAS = {
  /** On the crashed actor's own stream: the host records the failure, since the actor no longer can. */
  'actor.crashed': v.object({ id: v.string(), error: v.string() }),
  /** The actor was created: which machine at which version, from an input or a state rebuilt from the log. */
  'actor.started': v.object({ id: v.string(), machine: v.string(), version: v.number(), input: v.optional(AnyJson), snapshot: v.optional(Snapshot) }),
  /** An event it was sent: by the host's `send`, or by a child it invoked (`from`). */
  'actor.input': v.object({ event: v.objectWithRest({ type: v.string() }, AnyJson), from: v.optional(v.string()) }),
  /** Its n-th scheduled delay (counted from its start) fired. */
  'actor.timer': v.object({ n: v.number() }),
};
export const ACTOR_EVENTS = typeNames(ACTOR_EVENT_SCHEMAS);
