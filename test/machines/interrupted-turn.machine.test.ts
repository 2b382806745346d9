import t from 'tap';
import { createActor } from 'xstate';
import { interruptedTurnMachine, restoreInterruptedTurn, type InterruptedTurnContext } from '../../machines/index.js';
import type { AnyEnvelope, Fact } from '../../schemas/index.js';

const owing: InterruptedTurnContext = { agent: 'main', sessionKey: 'api:7', prompt: 'q', text: 'half', noticeDelivered: false, retried: false };

function drive(context: InterruptedTurnContext, events: Parameters<ReturnType<typeof createActor<typeof interruptedTurnMachine>>['send']>[0][]) {
  const actor = createActor(interruptedTurnMachine, { input: context, snapshot: interruptedTurnMachine.resolveState({ value: 'owing', context }) });
  const facts: Fact[] = [];
  actor.on('*', (f) => void facts.push(f));
  actor.start();
  for (const e of events) actor.send(e);
  return { facts, status: actor.getSnapshot().status, context: actor.getSnapshot().context };
}

await t.test('given an owing turn, when the notice and the retry are taken, then one fact each and the actor ends', async (t) => {
  const r = drive(owing, [
    { type: 'notice.take', session_key: 'api:7' },
    { type: 'notice.take', session_key: 'api:7' },
    { type: 'retry.take', request_id: 'r1' },
    { type: 'retry.take', request_id: 'r2' },
  ]);
  t.same(r.facts, [
    { type: 'turn.notice_delivered', data: { session_key: 'api:7' } },
    { type: 'turn.retried', data: { request_id: 'r1' } },
  ]);
  t.equal(r.status, 'done');
});

await t.test('given an owing turn, when a newer cut supersedes its retry, then no fact, and the notice alone settles it', async (t) => {
  const r = drive(owing, [{ type: 'retry.superseded' }, { type: 'retry.take', request_id: 'r1' }]);
  t.same(r.facts, [], 'superseding is not a fact of this turn, and it can no longer be retried');
  t.equal(r.status, 'active');
  t.equal(drive({ ...owing, retried: true }, [{ type: 'notice.take', session_key: 'api:7' }]).status, 'done');
});

await t.test('the restore fold: only a cut turn with a prompt that still owes something comes back', async (t) => {
  const env = (seq: number, type: string, data: Record<string, unknown>): AnyEnvelope => ({ seq, at: '2026-11-21T07:00:00.000Z', stream: 'turn:a', type, data: data as AnyEnvelope['data'] });
  const started = env(1, 'turn.started', { agent: 'main', session_key: 'api:7', prompt: 'q' });
  const cut = env(2, 'turn.failed', { reason: 'daemon-restarted', text: 'half' });
  t.same(restoreInterruptedTurn([started, cut]), { value: 'owing', context: owing });
  t.equal(restoreInterruptedTurn([started]), null, 'still open: recovery cuts it, not restore');
  t.equal(restoreInterruptedTurn([started, env(2, 'turn.completed', {})]), null, 'finished normally');
  t.equal(restoreInterruptedTurn([env(1, 'turn.started', { agent: 'main', session_key: 'api:7' }), cut]), null, 'an older svc recorded no prompt: nothing to offer');
  t.equal(restoreInterruptedTurn([started, cut, env(3, 'turn.notice_delivered', {}), env(4, 'turn.retried', {})]), null, 'settled');
  t.same(restoreInterruptedTurn([started, cut, env(3, 'turn.notice_delivered', {})])?.context.noticeDelivered, true);
});
