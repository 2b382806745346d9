/** What webhooks.json's run fields lack after a crash, from the hook's facts (given/when/then). */
import t from 'tap';
import { webhookRunFieldsRepair } from '../../machines/index.js';
import { AUTOMATION_EVENTS, type AnyEnvelope } from '../../schemas/index.js';

let seq = 0;
const fact = (type: string, data: Record<string, unknown>): AnyEnvelope => ({ seq: ++seq, at: `2026-05-01T12:00:${String(seq).padStart(2, '0')}.000Z`, stream: `webhook:${String(data.id)}`, type, data: data as AnyEnvelope['data'] });
const call = (id: string, request_id: string) => fact(AUTOMATION_EVENTS.triggered, { id, agent: 'main', mode: 'wake', request_id });
const done = (id: string, request_id: string) => fact(AUTOMATION_EVENTS.completed, { id, agent: 'main', mode: 'wake', request_id, status: 'completed', turn_id: null, task_id: null });
const failed = (id: string, request_id: string) => fact(AUTOMATION_EVENTS.failed, { id, agent: 'main', mode: 'wake', request_id, reason: 'turn-failed', error: 'boom' });

await t.test('a file that says what its facts say needs nothing', async (t) => {
  const facts = [call('a', 'r1'), done('a', 'r1')];
  t.equal(webhookRunFieldsRepair({ id: 'a', trigger_count: 1, last_request_id: 'r1', last_status: 'completed' }, facts), null);
  t.equal(webhookRunFieldsRepair({ id: 'b' }, facts), null, 'another hook\'s facts are not its own');
  t.equal(webhookRunFieldsRepair({ id: 'a' }, []), null, 'no calls, nothing to count');
});

await t.test('calls after the one the file names last are counted, the last one\'s end set', async (t) => {
  const facts = [call('a', 'r1'), done('a', 'r1'), call('a', 'r2'), call('a', 'r3'), done('a', 'r2'), failed('a', 'r3')];
  t.match(webhookRunFieldsRepair({ id: 'a', trigger_count: 7, last_request_id: 'r1', last_status: 'completed' }, facts), {
    trigger_count: 9, last_request_id: 'r3', last_triggered_at: facts[3]!.at, last_status: 'failed', last_error: 'boom', last_finished_at: facts[5]!.at,
  });
  t.match(webhookRunFieldsRepair({ id: 'a' }, facts.slice(0, 4)), { trigger_count: 3, last_request_id: 'r3', last_status: 'running', last_error: null }, 'a record never written: all its calls; the last still running');
});

await t.test('the last call written running whose end the log has is settled', async (t) => {
  const facts = [call('a', 'r1'), done('a', 'r1')];
  t.match(webhookRunFieldsRepair({ id: 'a', trigger_count: 1, last_request_id: 'r1', last_status: 'running' }, facts), { last_status: 'completed', last_error: null, last_finished_at: facts[1]!.at });
  t.notOk(webhookRunFieldsRepair({ id: 'a', trigger_count: 1, last_request_id: 'r1', last_status: 'running' }, facts.slice(0, 1)), 'still running as far as the log knows: left to call recovery');
});

await t.test('a file naming a call the log does not know is left alone; a hook made anew counts from its creation', async (t) => {
  t.equal(webhookRunFieldsRepair({ id: 'a', trigger_count: 4, last_request_id: 'hand-edit' }, [call('a', 'r1')]), null);
  const facts = [call('a', 'old1'), call('a', 'old2'), fact(AUTOMATION_EVENTS.created, { id: 'a', agent: 'main', by: 'admin' }), call('a', 'n1')];
  t.match(webhookRunFieldsRepair({ id: 'a' }, facts), { trigger_count: 1, last_request_id: 'n1' });
});
