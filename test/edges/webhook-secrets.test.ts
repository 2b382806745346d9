// Secrets never echoed, and ductor's webhook file read as it means (issue 21 item 9): every admin
// listing masks fields named like credentials, known or not, nested or not; a `{"hooks": [...]}`
// file with ductor's field names authenticates real calls to the webhook server; its `*_regex`
// fields are refused with a line saying so; a file svc cannot read refuses calls 503 and says so once.
import t from 'tap';
import { createHmac } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { startAutomationRecords } from '../../actors/index.js';
import { Bus, type LogLine } from '../../bus/index.js';
import { startWebhookServer } from '../../edges/index.js';
import { defaultConfig } from '../../schemas/index.js';
import { MemoryEventLog, homePaths } from '../../store/index.js';
import { serveOps } from '../fixtures/admin-ops.js';
import { attachFakeRuntime } from '../fixtures/internal-api.js';

type TT = { testdir(): string; teardown(fn: () => void): void };

const SECRETS = ['ductor-bearer-token-1', 'ductor-hmac-secret-2', 'nested-api-key-3', 'job-token-4', 'HandPassword-5', 'svc-secret-6'];

/** ductor's own shape and field names, as its `webhook add` writes them. */
const DUCTOR_FILE = {
  hooks: [
    {
      id: 'ci', title: 'CI', description: 'ductor bearer', mode: 'wake', prompt_template: 'CI: {{status}}', enabled: true, task_folder: null,
      auth_mode: 'bearer', token: SECRETS[0], hmac_secret: '', hmac_header: '', hmac_algorithm: 'sha256', hmac_encoding: 'hex', hmac_sig_prefix: 'sha256=', hmac_sig_regex: '', hmac_payload_prefix_regex: '',
      created_at: '2026-05-10T00:00:00+00:00', trigger_count: 7, last_triggered_at: null, last_error: null, provider: null, model: null, reasoning_effort: null, cli_parameters: [], quiet_start: null, quiet_end: null, dependency: null,
    },
    {
      id: 'gh', title: 'GitHub', description: 'ductor hmac', mode: 'wake', prompt_template: '', enabled: true, task_folder: null,
      auth_mode: 'hmac', token: '', hmac_secret: SECRETS[1], hmac_header: 'X-Hub-Signature-256', hmac_algorithm: 'sha256', hmac_encoding: 'hex', hmac_sig_prefix: 'sha256=', hmac_sig_regex: '', hmac_payload_prefix_regex: '',
      created_at: '', trigger_count: 0, last_triggered_at: null, last_error: null, quiet_start: 22, quiet_end: 7,
    },
    {
      id: 'stripe', title: 'Stripe', description: 'ductor regex', mode: 'wake', prompt_template: '', enabled: true,
      auth_mode: 'hmac', token: '', hmac_secret: 'whsec_stripe_test', hmac_header: 'Stripe-Signature', hmac_algorithm: 'sha256', hmac_encoding: 'hex', hmac_sig_prefix: '', hmac_sig_regex: 'v1=([a-f0-9]+)', hmac_payload_prefix_regex: 't=(\\d+)',
    },
  ],
};

function writeRaw(file: string, text: string) {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, text);
}

async function webhookServer(t: TT, fileText: string) {
  const paths = homePaths(join(t.testdir(), 'home'));
  writeRaw(paths.webhooksFile, fileText);
  const bus = new Bus({ log: new MemoryEventLog(), clock: () => Date.parse('2026-05-01T12:00:00.000Z') });
  const logs: LogLine[] = [];
  bus.transient$.subscribe((m) => {
    if (m.type === 'log.line') logs.push(m.data as LogLine);
  });
  const rt = attachFakeRuntime(bus);
  const records = startAutomationRecords({
    bus,
    paths,
    registry: () => [],
    webhooks: { globalToken: () => 'global-token-0123456789', config: () => defaultConfig(), timezone: () => 'UTC', oneShot: () => null, newBoundary: () => 'f'.repeat(32) },
  });
  const server = await startWebhookServer({ bus, host: '127.0.0.1', port: 0, maxBodyBytes: 4096, rateLimitPerMinute: () => 1000 });
  t.teardown(() => {
    server.close();
    records.unsubscribe();
    bus.close();
  });
  const post = async (id: string, body: string, headers: Record<string, string> = {}) => {
    const res = await fetch(`http://127.0.0.1:${server.port}/hooks/${id}`, { method: 'POST', headers: { connection: 'close', 'content-type': 'application/json', ...headers }, body });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  return { post, logs, rt, paths };
}

await t.test("ductor's {hooks: [...]} file: its bearer token and its HMAC fields authenticate real calls; its regex fields are refused with a clear line", async (t) => {
  const s = await webhookServer(t, JSON.stringify(DUCTOR_FILE));
  const body = JSON.stringify({ status: 'green' });
  t.same(await s.post('ci', body, { authorization: `Bearer ${SECRETS[0]}` }), { status: 202, body: { accepted: true, hook_id: 'ci' } }, "ductor's per-hook token");
  t.equal((await s.post('ci', body, { authorization: 'Bearer global-token-0123456789' })).status, 401, 'a hook with its own token refuses the global one');
  const sig = 'sha256=' + createHmac('sha256', SECRETS[1]!).update(body).digest('hex');
  t.equal((await s.post('gh', body, { 'x-hub-signature-256': sig })).status, 202, "ductor's hmac_secret, hmac_header, hmac_sig_prefix");
  t.equal((await s.post('gh', body, { 'x-hub-signature-256': 'sha256=' + '0'.repeat(64) })).status, 401, 'a wrong signature still fails');
  const ts = 1777636800;
  const v1 = createHmac('sha256', 'whsec_stripe_test').update(`${ts}.${body}`).digest('hex');
  t.equal((await s.post('stripe', body, { 'stripe-signature': `t=${ts},v1=${v1}` })).status, 401, 'a hook with regex fields is refused');
  t.ok(s.logs.some((l) => l.level === 'warn' && /stripe: .*hmac_sig_regex, hmac_payload_prefix_regex .*not supported by svc.*set signature instead/.test(l.msg)), 'with a line naming the fields and the fix');
});

await t.test('a webhooks.json svc cannot read refuses calls with 503 and one clear log line, not 500', async (t) => {
  for (const [what, text] of [
    ['bad JSON', '{"hooks": [ {"id": '],
    ['wrong shape', JSON.stringify({ hooks: 'none' })],
  ] as const) {
    await t.test(what, async (t) => {
      const s = await webhookServer(t, text);
      for (let i = 0; i < 3; i++) {
        t.match(await s.post('ci', '{}', { authorization: `Bearer ${SECRETS[0]}` }), { status: 503, body: { error: 'webhooks_unavailable', code: 'webhooks-unavailable' } });
      }
      const lines = s.logs.filter((l) => l.level === 'error');
      t.equal(lines.length, 1, 'one line for three calls');
      t.match(lines[0]!.msg, /every call is refused \(503\) until webhooks\.json is fixed: .*webhooks\.json/);
      t.equal(s.rt.received.length, 0);
    });
  }
});

await t.test('admin listings mask every credential-named field: webhooks (ductor and hand-edited), cron jobs, export', async (t) => {
  const s = await serveOps(t);
  const handEdited = {
    id: 'hand', agent: 'main', enabled: true, description: '', secret: SECRETS[5], mode: 'wake',
    integration: { api_key: SECRETS[2], Password: SECRETS[4] },
  };
  writeRaw(s.paths.webhooksFile, JSON.stringify({ hooks: [...DUCTOR_FILE.hooks, handEdited] }));
  writeRaw(s.paths.cronJobsFile, JSON.stringify([{ id: 'job', title: 'J', schedule: '0 9 * * *', agent: 'main', enabled: false, description: '', token: SECRETS[3] }]));

  const hooks = await s.call('/api/webhooks', { lang: 'en' });
  t.equal(hooks.status, 200);
  const cron = await s.call('/api/cron', { lang: 'en' });
  t.equal(cron.status, 200);
  const exported = await s.call('/api/export', { lang: 'en' });
  t.equal(exported.status, 200);
  for (const [name, reply] of [['webhooks', hooks], ['cron', cron], ['export', exported]] as const) {
    const text = JSON.stringify(reply.body);
    for (const secret of SECRETS) t.notOk(text.includes(secret), `${name}: ${secret.replace(/-\d$/, '')} is not shown`);
  }
  const byId = Object.fromEntries((hooks.body as Record<string, any>[]).map((h) => [h.id, h]));
  t.match(byId.ci, { token: '***', secret: '***', auth_mode: 'bearer', url: '/hooks/ci' }, "ductor's token, masked");
  t.match(byId.gh, { hmac_secret: '***', secret: '***' }, "ductor's hmac_secret, masked");
  t.match(byId.hand, { secret: '***', integration: { api_key: '***', Password: '***' } }, 'nested and unknown keys, any case');
  t.match((cron.body as Record<string, unknown>[])[0], { token: '***' });
});
