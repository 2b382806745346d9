/**
 * webhooks.json's run fields follow each call's fact: a burst of calls is counted in memory and
 * written once the injected clock says so, and at stop; a crash between fact and file is repaired
 * from the log at the next start.
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SimulatedClock } from 'xstate';
import { FLUSH_DELAY_MS, recoverWebhookCalls, startAutomationRecords } from '../../actors/index.js';
import { Bus, serveAgents, type TimerClock } from '../../bus/index.js';
import { startWebhookServer } from '../../edges/index.js';
import { AUTOMATION_EVENTS, defaultConfig, webhookStream, type WebhookRecord } from '../../schemas/index.js';
import { MemoryEventLog, homePaths, loadWebhooks, saveWebhooks } from '../../store/index.js';
import { until } from '../fixtures/until.js';

const TOKEN = 'run-fields-token-0123456789';
const HOOK = { id: 'burst', agent: 'main', name: 'Burst', enabled: true, description: '', secret: null, mode: 'wake' } as unknown as WebhookRecord;

async function serve(t: { testdir(): string; teardown(fn: () => void): void }) {
  const paths = homePaths(join(t.testdir(), 'home'));
  saveWebhooks(paths, [HOOK]);
  const log = new MemoryEventLog();
  const bus = new Bus({ log });
  // Each turn ends at once with nothing to say, so a call settles with no chat to deliver to.
  serveAgents(bus, 'quiet-runtime', {
    accept: (m) => ({
      outcome: Promise.resolve({
        request_id: m.request_id, turn_id: 't', agent: m.agent, session_key: 'k', status: 'completed' as const, text: '', is_error: false, stream_fallback: false,
        files: [], provider: null, model: null, session_id: null, usage: null, cost_usd: null, duration_ms: 0, reason: null,
      }),
    }),
    abort: () => ({ killed: 0 }),
    list: () => [],
  });
  const clock = new SimulatedClock();
  const config = defaultConfig();
  const records = startAutomationRecords({ bus, paths, registry: () => [], webhooks: { globalToken: () => TOKEN, config: () => config, timezone: () => 'UTC', clock: clock as unknown as TimerClock } });
  const server = await startWebhookServer({ bus, host: '127.0.0.1', port: 0, maxBodyBytes: 65_536, rateLimitPerMinute: () => 1e6, log: () => undefined });
  let stopped = false;
  const stop = () => {
    if (stopped) return;
    stopped = true;
    server.close();
    records.unsubscribe();
  };
  t.teardown(() => {
    stop();
    bus.close();
  });
  const post = (body: string) =>
    fetch(`http://127.0.0.1:${server.port}/hooks/burst`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` }, body }).then((r) => r.status);
  const onFile = () => (JSON.parse(readFileSync(paths.webhooksFile, 'utf8')) as Record<string, unknown>[])[0]!;
  const facts = (type: string) => log.read({ streamPrefix: 'webhook:', types: [type] });
  return { paths, log, bus, clock, post, onFile, facts, stop };
}

await t.test('a burst of calls: each 202 follows its fact; the file is written once the clock says so, every call counted', async (t) => {
  const s = await serve(t);
  const statuses = await Promise.all(Array.from({ length: 40 }, (_, i) => s.post(JSON.stringify({ n: i }))));
  t.same(new Set(statuses), new Set([202]), 'every call accepted');
  t.equal(s.facts(AUTOMATION_EVENTS.triggered).length, 40, 'each accepted call is a fact');
  t.notOk(s.onFile().trigger_count, 'the file is not written on the calls\' path');
  t.match(loadWebhooks(s.paths)[0], { trigger_count: 40, last_status: 'running' }, 'svc\'s own view has them all at once');
  await until('every call settled', () => s.facts(AUTOMATION_EVENTS.completed).length === 40);
  s.clock.increment(FLUSH_DELAY_MS - 1);
  t.notOk(s.onFile().trigger_count, 'not before the delay');
  s.clock.increment(1);
  const last = s.facts(AUTOMATION_EVENTS.triggered).at(-1)!;
  t.match(s.onFile(), { trigger_count: 40, last_request_id: last.data.request_id, last_status: 'completed', last_error: null }, 'one write, every call counted, the last call\'s end');
});

await t.test('stop writes what is pending; a call settling after it writes at once', async (t) => {
  const s = await serve(t);
  t.equal(await s.post('{"a":1}'), 202);
  await until('the call settled', () => s.facts(AUTOMATION_EVENTS.completed).length === 1);
  t.notOk(s.onFile().trigger_count);
  s.stop();
  t.match(s.onFile(), { trigger_count: 1, last_status: 'completed' }, 'stop flushed, with no clock advance');
});

await t.test('a crash between the facts and the file: the next start puts the calls the log holds on the record', async (t) => {
  const s = await serve(t);
  for (let i = 0; i < 3; i++) t.equal(await s.post(JSON.stringify({ i })), 202);
  await until('the calls settled', () => s.facts(AUTOMATION_EVENTS.completed).length === 3);
  s.clock.increment(FLUSH_DELAY_MS);
  t.match(s.onFile(), { trigger_count: 3, last_status: 'completed' });
  // Two more calls whose facts are committed, then the process dies before the file is written.
  const written = readFileSync(s.paths.webhooksFile, 'utf8');
  const lastWritten = s.onFile().last_request_id;
  for (let i = 0; i < 2; i++) t.equal(await s.post(JSON.stringify({ i })), 202);
  await until('the calls settled', () => s.facts(AUTOMATION_EVENTS.completed).length === 5);
  // What the crashed process held in memory is gone: the next start reads the file as the crash left it.
  const home = homePaths(join(t.testdir(), 'restarted'));
  saveWebhooks(home, JSON.parse(written) as WebhookRecord[]);
  const bus = new Bus({ log: s.log });
  t.teardown(() => bus.close());
  const logs: string[] = [];
  bus.transient$.subscribe((m) => {
    if (m.type === 'log.line') logs.push((m.data as { msg: string }).msg);
  });
  const dispatch = { globalToken: () => TOKEN, config: () => defaultConfig(), timezone: () => 'UTC' };
  const out = await recoverWebhookCalls({ bus, log: s.log, paths: home, dispatch });
  t.same(out, { settled: [], dispatched: [] }, 'every call had ended: none to run again');
  const triggered = s.facts(AUTOMATION_EVENTS.triggered);
  const after = (JSON.parse(readFileSync(home.webhooksFile, 'utf8')) as Record<string, unknown>[])[0]!;
  t.not(lastWritten, triggered.at(-1)!.data.request_id);
  t.match(after, { trigger_count: 5, last_request_id: triggered.at(-1)!.data.request_id, last_triggered_at: triggered.at(-1)!.at, last_status: 'completed', last_error: null });
  t.ok(logs.some((l) => /webhook burst: webhooks\.json was behind its facts/.test(l)), 'the log says so');
  const again = readFileSync(home.webhooksFile, 'utf8');
  await recoverWebhookCalls({ bus, log: s.log, paths: home, dispatch });
  t.equal(readFileSync(home.webhooksFile, 'utf8'), again, 'a second start finds nothing to repair');
});

await t.test('a crash after the call\'s fact, before its end reached the file: settled from the log', async (t) => {
  const paths = homePaths(join(t.testdir(), 'home'));
  saveWebhooks(paths, [{ ...HOOK, trigger_count: 1, last_request_id: 'r1', last_status: 'running' } as WebhookRecord]);
  const log = new MemoryEventLog();
  const bus = new Bus({ log });
  t.teardown(() => bus.close());
  const stream = webhookStream('burst');
  await bus.publish({ stream, type: AUTOMATION_EVENTS.triggered, data: { id: 'burst', agent: 'main', mode: 'wake', request_id: 'r1', client: '127.0.0.1', body_bytes: 2, keys: [], prompt: 'p' } });
  const failed = await bus.publish({ stream, type: AUTOMATION_EVENTS.failed, data: { id: 'burst', agent: 'main', mode: 'wake', request_id: 'r1', reason: 'turn-failed', error: 'the turn ended failed' } });
  await recoverWebhookCalls({ bus, log, paths, dispatch: { globalToken: () => TOKEN, config: () => defaultConfig(), timezone: () => 'UTC' } });
  t.match((JSON.parse(readFileSync(paths.webhooksFile, 'utf8')) as Record<string, unknown>[])[0], { trigger_count: 1, last_request_id: 'r1', last_status: 'failed', last_error: 'the turn ended failed', last_finished_at: failed.at });
});
