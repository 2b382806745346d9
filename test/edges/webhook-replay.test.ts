// Replay of signed webhook calls (issue 21 item 12) over a real webhook server: a signed call that
// was accepted is refused 409 `replayed` when it comes again within the hook's replay window,
// however it is re-dressed (hex case, an unsigned delivery id, an extra bogus candidate), and the
// agent runs once; a new delivery is accepted; after the window (injected clock) it is accepted again.
import t from 'tap';
import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startAutomationRecords, WebhookReplayMemory } from '../../actors/index.js';
import { Bus } from '../../bus/index.js';
import { startWebhookServer } from '../../edges/index.js';
import { AUTOMATION_EVENTS, defaultConfig, type WebhookRecord } from '../../schemas/index.js';
import { MemoryEventLog, homePaths, saveWebhooks } from '../../store/index.js';
import { attachFakeRuntime } from '../fixtures/internal-api.js';
import { until } from '../fixtures/until.js';

const T0 = Date.parse('2026-05-01T12:00:00.000Z');
const GLOBAL = 'global-webhook-token-0123456789';
const GH_SECRET = 'gh-secret-0123';
const STRIPE_SECRET = 'whsec_0123456789';

const HOOKS = [
  { id: 'gh', agent: 'main', enabled: true, description: '', secret: GH_SECRET, auth: 'hmac', signature: { preset: 'github' }, mode: 'wake' },
  { id: 'stripe', agent: 'main', enabled: true, description: '', secret: STRIPE_SECRET, auth: 'hmac', signature: { preset: 'stripe' }, mode: 'wake' },
  { id: 'plain', agent: 'main', enabled: true, description: '', secret: null, mode: 'wake' },
] as unknown as WebhookRecord[];

async function serve(t: { testdir(): string; teardown(fn: () => void): void }, log = new MemoryEventLog()) {
  const paths = homePaths(join(t.testdir(), 'home'));
  saveWebhooks(paths, HOOKS);
  let now = T0;
  const bus = new Bus({ log, clock: () => now });
  const rt = attachFakeRuntime(bus);
  const config = { ...defaultConfig(), transport: 'telegram' as const, allowed_user_ids: [4242] };
  const records = startAutomationRecords({
    bus,
    paths,
    registry: () => [],
    webhooks: { globalToken: () => GLOBAL, config: () => config, timezone: () => 'UTC', oneShot: () => null, newBoundary: () => 'f'.repeat(32) },
  });
  const server = await startWebhookServer({ bus, host: '127.0.0.1', port: 0, maxBodyBytes: 4096, rateLimitPerMinute: () => 1000, clock: () => now });
  t.teardown(() => {
    server.close();
    records.unsubscribe();
    bus.close();
  });
  const post = async (id: string, body: string, headers: Record<string, string>) => {
    const res = await fetch(`http://127.0.0.1:${server.port}/hooks/${id}`, { method: 'POST', headers: { connection: 'close', 'content-type': 'application/json', ...headers }, body });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const settledCalls = () => log.read({}).filter((e) => e.type === AUTOMATION_EVENTS.completed || e.type === AUTOMATION_EVENTS.failed).length;
  /** Every accepted call has run to its end: a fact for each, or the test fails (never falls through). */
  const allSettled = (count: number) => until(() => `${count} calls settled (${settledCalls()} so far)`, () => settledCalls() >= count, 5000);
  const triggerCount = (id: string) => (JSON.parse(readFileSync(paths.webhooksFile, 'utf8')) as Record<string, unknown>[]).find((h) => h.id === id)!.trigger_count;
  return { post, rt, allSettled, triggerCount, advance: (ms: number) => void (now += ms), now: () => now };
}

const github = (body: string) => 'sha256=' + createHmac('sha256', GH_SECRET).update(body).digest('hex');

await t.test('GitHub: the same signed call twice is 202 then 409, the agent runs once; a new delivery is 202; after the window it is accepted again', async (t) => {
  const s = await serve(t);
  const body = JSON.stringify({ action: 'opened', number: 1 });
  const sig = github(body);
  t.same(await s.post('gh', body, { 'x-hub-signature-256': sig, 'x-github-delivery': 'd-1' }), { status: 202, body: { accepted: true, hook_id: 'gh' } });
  await s.allSettled(1);
  t.same(await s.post('gh', body, { 'x-hub-signature-256': sig, 'x-github-delivery': 'd-1' }), {
    status: 409,
    body: { error: 'replayed', message: 'this signed call was already accepted; each delivery must be signed anew', code: 'replayed' },
  });
  t.equal((await s.post('gh', body, { 'x-hub-signature-256': sig.toUpperCase() })).status, 409, 'the same signature in upper case is the same call');
  t.equal((await s.post('gh', body, { 'x-hub-signature-256': sig, 'x-github-delivery': 'd-2' })).status, 409, 'a new, unsigned delivery id does not make it a new call');
  t.equal(s.triggerCount('gh'), 1, 'a refused repeat is not counted');
  t.equal(s.rt.received.length, 1, 'the agent ran once');

  const other = JSON.stringify({ action: 'closed', number: 1 });
  t.equal((await s.post('gh', other, { 'x-hub-signature-256': github(other), 'x-github-delivery': 'd-3' })).status, 202, 'a different delivery is accepted');
  await s.allSettled(2);

  s.advance(300_000 - 1);
  t.equal((await s.post('gh', body, { 'x-hub-signature-256': sig })).status, 409, 'still inside the window');
  s.advance(1);
  t.equal((await s.post('gh', body, { 'x-hub-signature-256': sig })).status, 202, 'after the window it is accepted again');
  await s.allSettled(3);
  t.equal(s.rt.received.length, 3);
});

await t.test('Stripe: a repeat inside its timestamp window is 409, with or without an extra bogus candidate', async (t) => {
  const s = await serve(t);
  const body = JSON.stringify({ type: 'charge.succeeded' });
  const ts = Math.floor(s.now() / 1000);
  const v1 = createHmac('sha256', STRIPE_SECRET).update(`${ts}.${body}`).digest('hex');
  t.equal((await s.post('stripe', body, { 'stripe-signature': `t=${ts},v1=${v1}` })).status, 202);
  await s.allSettled(1);
  s.advance(60_000);
  t.equal((await s.post('stripe', body, { 'stripe-signature': `t=${ts},v1=${v1}` })).status, 409, 'a minute later, still fresh by its timestamp: a replay');
  t.equal((await s.post('stripe', body, { 'stripe-signature': `t=${ts},v1=${'0'.repeat(64)},v1=${v1}` })).status, 409, 'a bogus candidate beside it changes nothing');
  const ts2 = ts + 60;
  const v1b = createHmac('sha256', STRIPE_SECRET).update(`${ts2}.${body}`).digest('hex');
  t.equal((await s.post('stripe', body, { 'stripe-signature': `t=${ts2},v1=${v1b}` })).status, 202, 'the same event signed anew is a new delivery');
  await s.allSettled(2);
  t.equal(s.rt.received.length, 2);
});

await t.test('bearer calls are not remembered: the token binds nothing about one call', async (t) => {
  const s = await serve(t);
  const body = JSON.stringify({ x: 1 });
  t.equal((await s.post('plain', body, { authorization: `Bearer ${GLOBAL}` })).status, 202);
  t.equal((await s.post('plain', body, { authorization: `Bearer ${GLOBAL}` })).status, 202);
  await s.allSettled(2);
});

await t.test('the memory is bounded per hook and expires by window on the injected clock', async (t) => {
  let now = 0;
  const memory = new WebhookReplayMemory(() => now, 3);
  for (const k of ['a', 'b', 'c']) t.ok(memory.admit('h', k, 1000), `${k} fresh`);
  t.notOk(memory.admit('h', 'a', 1000), 'a remembered');
  t.ok(memory.admit('h', 'd', 1000), 'a fourth key');
  t.ok(memory.admit('h', 'a', 1000), 'over the cap the oldest (a) was forgotten');
  t.notOk(memory.admit('h', 'd', 1000), 'd is still remembered');
  t.ok(memory.admit('other', 'd', 1000), 'per hook');
  now = 1000;
  t.ok(memory.admit('h', 'd', 1000), 'after its window d is fresh again');
});

await t.test('a signed call that was not accepted after all (its fact could not be recorded) is no replay when the sender redelivers it', async (t) => {
  // An event log whose disk fails once, on the call's `webhook.triggered`: an in-memory store, not a mock.
  class FailingOnce extends MemoryEventLog {
    failures = 1;
    override append(...args: Parameters<MemoryEventLog['append']>) {
      if (this.failures > 0 && args[0].some((e) => e.type === AUTOMATION_EVENTS.triggered)) {
        this.failures--;
        throw new Error('disk full');
      }
      return super.append(...args);
    }
  }
  const s = await serve(t, new FailingOnce());
  const body = JSON.stringify({ action: 'opened', number: 9 });
  const headers = { 'x-hub-signature-256': github(body), 'x-github-delivery': 'd-9' };
  t.not((await s.post('gh', body, headers)).status, 202, 'the first try is not accepted');
  t.equal(s.rt.received.length, 0);
  t.same(await s.post('gh', body, headers), { status: 202, body: { accepted: true, hook_id: 'gh' } }, "GitHub's redelivery of the same call gets in");
  await s.allSettled(1);
  t.equal(s.rt.received.length, 1, 'and the agent runs once');
  t.equal((await s.post('gh', body, headers)).status, 409, 'a repeat of the accepted call is a replay');
});
