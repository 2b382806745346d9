// Issue 14's pure rules (machines/webhook.logic): which accepted webhook calls a stop of svc left
// unsettled, and how each is settled from the log without asking or running anything again.
import t from 'tap';
import { settleCutWebhookCall, unsettledWebhookCalls, webhookCallEvidence } from '../../machines/index.js';
import type { AnyEnvelope } from '../../schemas/index.js';

let seq = 0;
const fact = (stream: string, type: string, data: Record<string, unknown>, correlation?: string): AnyEnvelope =>
  ({ seq: ++seq, at: '2026-01-01T00:00:00.000Z', stream, type, data, ...(correlation ? { correlation } : {}) }) as AnyEnvelope;
const triggered = (id: string, mode: string, request_id: string) => fact(`webhook:${id}`, 'webhook.triggered', { id, agent: 'main', mode, request_id, client: '127.0.0.1', body_bytes: 2, keys: [] }, request_id);

t.test('given triggered calls, only those with no settling fact are open, oldest first', async (t) => {
  const events = [
    triggered('a', 'wake', 'r1'),
    triggered('b', 'cron_task', 'r2'),
    triggered('a', 'wake', 'r3'),
    fact('webhook:a', 'webhook.completed', { id: 'a', agent: 'main', mode: 'wake', request_id: 'r1', status: 'completed', turn_id: 't1', task_id: null }, 'r1'),
    fact('webhook:a', 'webhook.failed', { id: 'a', agent: 'main', mode: 'wake', request_id: 'r3', reason: 'turn-failed', error: 'x' }, 'r3'),
  ];
  t.match(unsettledWebhookCalls(events), [{ id: 'b', mode: 'cron_task', request_id: 'r2', seq: events[1]!.seq }]);
  t.equal(unsettledWebhookCalls(events).length, 1);
});

t.test('when a call was cut, then it is settled from what the log holds, never asked again', async (t) => {
  const calls = [triggered('w', 'wake', 'started'), triggered('w', 'wake', 'done'), triggered('w', 'wake', 'never'), triggered('c', 'cron_task', 'queued'), triggered('c', 'cron_task', 'lost')];
  const open = unsettledWebhookCalls(calls);
  const turns = [
    fact('turn:T1', 'turn.started', { request_id: 'started' }),
    fact('turn:T2', 'turn.started', { request_id: 'done' }),
    fact('turn:T2', 'turn.completed', {}),
    fact('turn:T3', 'turn.started', { request_id: 'someone-else' }),
  ];
  const oneshots = [fact('oneshot:R1', 'oneshot.queued', { run_id: 'R1' }, 'queued'), fact('oneshot:R2', 'oneshot.queued', { run_id: 'R2' }, 'other')];
  const evidence = webhookCallEvidence(open, turns, oneshots);
  const settle = (rid: string) => settleCutWebhookCall(open.find((c) => c.request_id === rid)!, evidence.get(rid)!);
  t.match(settle('started'), { ok: false, reason: 'interrupted', error: /turn T1 was running/ });
  t.same(settle('done'), { ok: true, status: 'completed', turn_id: 'T2', task_id: null });
  t.match(settle('never'), { ok: false, reason: 'interrupted', error: /before the agent was asked; the payload is not kept/ });
  t.same(settle('queued'), { ok: true, status: 'started', turn_id: null, task_id: 'R1' }, 'a queued run is the runner\'s to recover');
  t.match(settle('lost'), { ok: false, reason: 'interrupted', error: /before its one-shot run was queued/ });
});
