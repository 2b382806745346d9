// Issue 14's pure rules (machines/webhook.logic): which accepted webhook calls a stop of svc left
// unsettled, and what the restart does with each: run one the agent never saw from the prompt its
// fact holds, settle the rest from the log, never ask or queue anything twice.
import t from 'tap';
import { recoverCutWebhookCall, unsettledWebhookCalls, webhookCallEvidence } from '../../machines/index.js';
import type { AnyEnvelope } from '../../schemas/index.js';

let seq = 0;
const fact = (stream: string, type: string, data: Record<string, unknown>, correlation?: string): AnyEnvelope =>
  ({ seq: ++seq, at: '2026-01-01T00:00:00.000Z', stream, type, data, ...(correlation ? { correlation } : {}) }) as AnyEnvelope;
const triggered = (id: string, mode: string, request_id: string, prompt?: string) =>
  fact(`webhook:${id}`, 'webhook.triggered', { id, agent: 'main', mode, request_id, client: '127.0.0.1', body_bytes: 2, keys: [], ...(prompt === undefined ? {} : { prompt }) }, request_id);

await t.test('given triggered calls, only those with no settling fact are open, oldest first', async (t) => {
  const events = [
    triggered('a', 'wake', 'r1'),
    triggered('b', 'cron_task', 'r2'),
    triggered('a', 'wake', 'r3'),
    fact('webhook:a', 'webhook.completed', { id: 'a', agent: 'main', mode: 'wake', request_id: 'r1', status: 'completed', turn_id: 't1', task_id: null }, 'r1'),
    fact('webhook:a', 'webhook.failed', { id: 'a', agent: 'main', mode: 'wake', request_id: 'r3', reason: 'turn-failed', error: 'x' }, 'r3'),
  ];
  t.match(unsettledWebhookCalls(events), [{ id: 'b', mode: 'cron_task', request_id: 'r2', seq: events[1]!.seq, prompt: null }]);
  t.equal(unsettledWebhookCalls(events).length, 1);
});

function cut(calls: AnyEnvelope[]) {
  const open = unsettledWebhookCalls(calls);
  const turns = [
    fact('turn:T1', 'turn.started', { request_id: 'started' }),
    fact('turn:T2', 'turn.started', { request_id: 'done' }),
    fact('turn:T2', 'turn.completed', {}),
    fact('turn:T3', 'turn.started', { request_id: 'someone-else' }),
  ];
  const oneshots = [fact('oneshot:R1', 'oneshot.queued', { run_id: 'R1' }, 'queued'), fact('oneshot:R2', 'oneshot.queued', { run_id: 'R2' }, 'other')];
  const evidence = webhookCallEvidence(open, turns, oneshots);
  return (rid: string) => recoverCutWebhookCall(open.find((c) => c.request_id === rid)!, evidence.get(rid)!);
}

await t.test('when a call was cut after the agent or the runner had it, then it is settled from the log, never asked again', async (t) => {
  const next = cut([triggered('w', 'wake', 'started', 'P'), triggered('w', 'wake', 'done', 'P'), triggered('c', 'cron_task', 'queued', 'P')]);
  t.match(next('started'), { action: 'settle', result: { ok: false, reason: 'interrupted', error: /turn T1 was running/ } }, 'a started turn is turn recovery\'s, not asked twice');
  t.same(next('done'), { action: 'settle', result: { ok: true, status: 'completed', turn_id: 'T2', task_id: null } });
  t.same(next('queued'), { action: 'settle', result: { ok: true, status: 'started', turn_id: null, task_id: 'R1' } }, "a queued run is the runner's to restart or end");
});

await t.test('when a call was cut before the agent saw it, then it is dispatched from the prompt its fact holds', async (t) => {
  const prompt = '[Webhook "w" (id w) was called.]\n<<<WEBHOOK-PAYLOAD-0123456789abcdef\nhi\nWEBHOOK-PAYLOAD-0123456789abcdef>>>';
  const next = cut([triggered('w', 'wake', 'never', prompt), triggered('c', 'cron_task', 'lost', prompt)]);
  t.same(next('never'), { action: 'dispatch', prompt }, 'the wake is asked after the restart, fenced as it was at the 202');
  t.same(next('lost'), { action: 'dispatch', prompt }, 'the one-shot run is queued after the restart');
});

await t.test('when a call an older svc accepted (no prompt kept) was cut before the agent saw it, then it is recorded failed, naming why', async (t) => {
  const next = cut([triggered('w', 'wake', 'never'), triggered('c', 'cron_task', 'lost'), triggered('w', 'wake', 'started')]);
  t.match(next('never'), { action: 'settle', result: { ok: false, reason: 'interrupted', error: /before the agent was asked; its prompt was not kept/ } });
  t.match(next('lost'), { action: 'settle', result: { ok: false, reason: 'interrupted', error: /before its one-shot run was queued; its prompt was not kept/ } });
  t.match(next('started'), { action: 'settle', result: { ok: false, reason: 'interrupted' } }, 'evidence of a started turn wins over a missing prompt');
});
