import * as v from 'valibot';
import { typeNames } from './type-names.js';

/** On the crashed actor's own stream: the host records the failure, since the actor no longer can. */
export const ACTOR_EVENT_SCHEMAS = {
  'actor.crashed': v.object({ id: v.string(), error: v.string() }),
};
export const ACTOR_EVENTS = typeNames(ACTOR_EVENT_SCHEMAS);
