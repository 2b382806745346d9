import { decideEditStream, evolveEditStream, initialEditStream, startedEditStream, type EditStreamRules } from '../../machines/index.js';
import type { EditStream, MessageEditor } from '../../schemas/index.js';
import { REAL_CLOCK } from '../../bus/index.js';
import type { ActorClock } from '../host/actor-host.js';

/**
 * Drives machines/edit-stream.logic.ts for one streamed answer: carries out each send or edit it
 * decides, reports how it went, and sleeps on the clock until the next moment it named.
 */
export function startEditStream(editor: MessageEditor, rules: EditStreamRules, clock: { now(): number; timers?: ActorClock }): EditStream {
  const timers = clock.timers ?? REAL_CLOCK;
  let state = initialEditStream(rules);
  let timer: unknown = null;
  let inflight: Promise<void> = Promise.resolve();
  let finished = false;

  const pump = (): void => {
    if (timer !== null) timers.clearTimeout(timer as never);
    timer = null;
    if (finished) return;
    const now = clock.now();
    const action = decideEditStream(state, now, rules);
    if (action.kind === 'wait') {
      timer = timers.setTimeout(pump, Math.max(0, action.until - now));
      return;
    }
    if (action.kind === 'none') return;
    state = startedEditStream(state);
    const { text } = action;
    const type = action.kind === 'send' ? 'sent' : 'edited';
    inflight = (action.kind === 'send' ? editor.send(text) : editor.edit(text)).then(
      () => {
        state = evolveEditStream(state, { type, ok: true, at: clock.now(), text }, rules);
      },
      () => {
        state = evolveEditStream(state, { type, ok: false, at: clock.now(), text }, rules);
      },
    ).then(pump);
  };

  return {
    update(text) {
      if (finished) return;
      state = evolveEditStream(state, { type: 'text', text, at: clock.now() }, rules);
      pump();
    },
    async finish() {
      finished = true;
      if (timer !== null) timers.clearTimeout(timer as never);
      timer = null;
      await inflight;
      return { shown: state.off ? null : state.shown };
    },
  };
}
