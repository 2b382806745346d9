import type { EventData } from '../schemas/index.js';

/** What every machine emits: the actor host records it as an event on the actor's stream. */
export interface Fact<T extends string = string> {
  type: T;
  data: EventData;
}
