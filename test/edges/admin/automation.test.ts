import t from 'tap';
import { createHmac } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { SimulatedClock } from 'xstate';
import { CronScheduler, OneShotRuns } from '../../../actors/index.js';
import { AUTOMATION_EVENTS, TASK_EVENTS, USER_EVENTS, defaultConfig } from '../../../schemas/index.js';
import { T0, serveOps } from '../../fixtures/admin-ops.js';

type Ops = Awaited<ReturnType<typeof serveOps>>;

const fileText = (path: string) => (existsSync(path) ? readFileSync(path, 'utf8') : null);
function writeJson(path: string, data: unknown) {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, JSON.stringify(data));
}
/** What a refused request must leave alone: the files and the log (audit facts aside). */
function snapshot(s: Ops) {
  const facts = s.log.read().filter((e) => !e.type.startsWith('audit.')).length;
  return { cron: fileText(s.paths.cronJobsFile), hooks: fileText(s.paths.webhooksFile), users: fileText(s.paths.usersFile), facts };
}

await t.test('cron: create, list, update, delete in WIRE.md shape; facts; atomic 0600 file; run is 503 no-scheduler', async (t) => {
  const s = await serveOps(t, { lang: 'en' });
  t.same((await s.call('/api/cron', { as: 'viewer' })).body, [], 'no file is no jobs');
  let r = await s.call('/api/cron', { method: 'POST', body: { title: 'Daily report', schedule: '0 9 * * 1-5', agent: 'coder', description: 'Summarise', enabled: true, timezone: 'Europe/Moscow' } });
  t.equal(r.status, 201);
  t.match(r.body, {
    id: 'id1',
    title: 'Daily report',
    name: 'Daily report',
    schedule: '0 9 * * 1-5',
    agent: 'coder',
    enabled: true,
    status: 'active',
    last_run_at: null,
    next_run: null,
    description: 'Summarise',
    execution_count: 0,
    avg_duration: null,
    timezone: 'Europe/Moscow',
    provider: null,
    model: null,
  });
  r = await s.call('/api/cron', { method: 'POST', body: { id: 'backup', title: 'Backup', schedule: '@daily', agent: 'writer', enabled: false } });
  t.match(r, { status: 201, body: { id: 'backup', status: 'paused' } });
  t.equal(statSync(s.paths.cronJobsFile).mode & 0o777, 0o600);
  t.same(JSON.parse(readFileSync(s.paths.cronJobsFile, 'utf8')).map((j: { id: string }) => j.id), ['id1', 'backup'], 'a top-level array');

  r = await s.call('/api/cron/backup', { method: 'PUT', body: { enabled: true, schedule: '30 2 * * *', model: 'sonnet' } });
  t.match(r, { status: 200, body: { id: 'backup', enabled: true, status: 'active', schedule: '30 2 * * *', model: 'sonnet', title: 'Backup' } });
  r = await s.call('/api/cron', { as: 'viewer' });
  t.same(r.body.map((j: { id: string; status: string }) => [j.id, j.status]), [['id1', 'active'], ['backup', 'active']]);

  r = await s.call('/api/cron/backup/run', { method: 'POST', as: 'operator' });
  t.match(r, { status: 503, body: { code: 'no-scheduler', error: /not run: the cron scheduler is not running/ } });
  r = await s.call('/api/cron/backup', { method: 'DELETE' });
  t.same(r, { status: 200, body: { id: 'backup', deleted: true } });
  t.same((await s.call('/api/cron')).body.map((j: { id: string }) => j.id), ['id1']);
  t.same(
    s.log.read().filter((e) => e.stream.startsWith('cron:')).map((e) => [e.type, e.stream, e.data]),
    [
      [AUTOMATION_EVENTS.job_created, 'cron:id1', { id: 'id1', agent: 'coder', by: 'admin' }],
      [AUTOMATION_EVENTS.job_created, 'cron:backup', { id: 'backup', agent: 'writer', by: 'admin' }],
      [AUTOMATION_EVENTS.job_updated, 'cron:backup', { id: 'backup', agent: 'writer', fields: ['enabled', 'model', 'schedule'], by: 'admin' }],
      [AUTOMATION_EVENTS.job_deleted, 'cron:backup', { id: 'backup', agent: 'writer', by: 'admin' }],
    ],
  );
  t.match(await s.call('/api/cron/nope', { method: 'PUT', body: { enabled: false } }), { status: 404, body: { code: 'not-found' } });
  t.match(await s.call('/api/cron/nope/run', { method: 'POST' }), { status: 404 });
  t.match(await s.call('/api/cron', { method: 'POST', body: { id: 'id1', title: 'Again', schedule: '@hourly', agent: 'main' } }), { status: 409, body: { code: 'cron-job-exists' } });
  t.same(s.internal, []);
});

await t.test('cron: schedules and zones are checked with croner, naming the field; run-now goes to the scheduler', async (t) => {
  const ran: string[] = [];
  const s = await serveOps(t, { lang: 'en', cron: () => ({ runNow: async (id) => (ran.push(id), { started: true, fire_id: `${id}@manual` }) }) });
  const before = snapshot(s);
  for (const schedule of ['0 25 * * *', '61 * * * *', '* * 32 * *', '* * * 13 *']) {
    const r = await s.call('/api/cron', { method: 'POST', body: { title: 'Bad', schedule, agent: 'main' } });
    t.match(r, { status: 400, body: { code: 'invalid-body', error: /body\.schedule/ } }, schedule);
  }
  t.match(await s.call('/api/cron', { method: 'POST', body: { title: 'Bad', schedule: '@daily', agent: 'main', timezone: 'Mars/Olympus' } }), { status: 400, body: { error: /timezone/ } });
  // Standard cron has 5 fields: a seconds field would let a job fire every second.
  for (const schedule of ['* * * * * *', '0 0 9 * * 1-5']) {
    const r = await s.call('/api/cron', { method: 'POST', body: { title: 'Every second', schedule, agent: 'main' } });
    t.match(r, { status: 400, body: { code: 'invalid-body', error: /^body\.schedule: must be a cron expression of 5 fields/ } }, `${schedule} is not creatable`);
  }
  t.same(snapshot(s), before, 'nothing was written');
  t.match(await s.call('/api/cron', { method: 'POST', body: { id: 'j', title: 'Good', schedule: '0 9 * * MON-FRI', agent: 'main', timezone: 'Europe/Berlin', silent_on_success: true, chat_id: 5, transport: 'telegram' } }), { status: 201, body: { silent_on_success: true, chat_id: 5 } });
  t.ok(existsSync(`${s.paths.workspace}/cron_tasks/j/j_MEMORY.md`), 'the job folder and its memory file are made with the job');
  t.match(await s.call('/api/cron/j', { method: 'PUT', body: { schedule: '0 9 * * FUNDAY' } }), { status: 400, body: { error: /body\.schedule/ } });
  t.match(await s.call('/api/cron/j', { method: 'PUT', body: { schedule: '* * * * * *' } }), { status: 400, body: { error: /^body\.schedule: .*a seconds field is not accepted/ } }, 'nor can a job be changed to it');
  t.match(await s.call('/api/cron/j/run', { method: 'POST', as: 'viewer' }), { status: 403 }, 'roles stay as they were');
  t.same(ran, []);
  t.match(await s.call('/api/cron/j/run', { method: 'POST', as: 'operator' }), { status: 202, body: { started: true } });
  t.same(ran, ['j']);
});

await t.test('cron: run-now of a job whose record on disk is not valid is 409 cron-job-invalid, and runs nothing', async (t) => {
  let scheduler: CronScheduler | null = null;
  const s = await serveOps(t, { lang: 'en', cron: () => scheduler });
  writeJson(s.paths.cronJobsFile, [{ id: 'bad', title: 'Bad', schedule: '@daily', agent: 'main', quiet_start: 'soon' }]);
  const clock = new SimulatedClock();
  clock.set(s.now());
  const runner = new OneShotRuns({ bus: s.bus, log: s.log, paths: s.paths, config: defaultConfig, timezone: () => 'UTC' });
  const cron = new CronScheduler({ bus: s.bus, log: s.log, paths: s.paths, runner, defaultZone: () => 'UTC', clock });
  await cron.start('start:1');
  scheduler = cron;
  t.teardown(() => {
    cron.stop();
    runner.stop();
  });
  t.match(await s.call('/api/cron/bad/run', { method: 'POST', as: 'operator' }), { status: 409, body: { code: 'cron-job-invalid', error: /not valid \(quiet_start: / } });
  t.same(s.log.read().filter((e) => e.type === AUTOMATION_EVENTS.fired), [], 'no fire');
});

await t.test('cron: roles, allowed_agents, bad input and traversal are refused and change nothing', async (t) => {
  const s = await serveOps(t, { lang: 'en' });
  writeJson(s.paths.cronJobsFile, [
    { id: 'c1', title: 'Coder job', schedule: '@daily', agent: 'coder' },
    { id: 'w1', title: 'Writer job', schedule: '@daily', agent: 'writer' },
  ]);
  const before = snapshot(s);
  const create = { title: 'X', schedule: '@daily', agent: 'coder' };
  for (const who of ['operator', 'viewer']) {
    t.equal((await s.call('/api/cron', { method: 'POST', as: who, body: create })).status, 403, `${who} may not create`);
    t.equal((await s.call('/api/cron/c1', { method: 'PUT', as: who, body: { enabled: false } })).status, 403, `${who} may not update`);
    t.equal((await s.call('/api/cron/c1', { method: 'DELETE', as: who })).status, 403, `${who} may not delete`);
  }
  t.equal((await s.call('/api/cron/c1/run', { method: 'POST', as: 'viewer' })).status, 403, 'a viewer may not run');

  // coderAdmin may use coder only.
  t.same((await s.call('/api/cron', { as: 'coderViewer' })).body.map((j: { id: string }) => j.id), ['c1'], 'filtered by the job agent');
  for (const [path, method, body] of [
    ['/api/cron', 'POST', { ...create, agent: 'writer' }],
    ['/api/cron/w1', 'PUT', { enabled: false }],
    ['/api/cron/c1', 'PUT', { agent: 'writer' }],
    ['/api/cron/w1', 'DELETE', undefined],
  ] as [string, string, unknown][]) {
    const r = await s.call(path, { method, as: 'coderAdmin', body });
    t.match(r, { status: 403, body: { code: 'agent-not-allowed' } }, `${method} ${path} ${JSON.stringify(body)}`);
  }
  t.match(await s.call('/api/cron/w1/run', { method: 'POST', as: 'coderOperator' }), { status: 403, body: { code: 'agent-not-allowed' } });
  // A cron job's runs work in cron_tasks/<id>, a cron_task webhook's in cron_tasks/webhook_<hook id>:
  // a job named after someone else's hook would read and rewrite that hook's memory file.
  for (const id of ['webhook_deploy', 'WebHook_deploy']) {
    const r = await s.call('/api/cron', { method: 'POST', as: 'coderAdmin', body: { ...create, id } });
    t.match(r, { status: 400, body: { code: 'invalid-body', error: /^body\.id: must not start with webhook_/ } }, `id ${id} refused`);
  }
  t.notOk(existsSync(join(s.paths.workspace, 'cron_tasks', 'webhook_deploy')), 'no folder made for a refused id');

  const bad: [unknown, RegExp][] = [
    [{ ...create, schedule: 'every day' }, /^body\.schedule: must be a cron expression/],
    [{ ...create, schedule: '* * *' }, /^body\.schedule: /],
    [{ ...create, agent: '../etc' }, /^body\.agent: must be an agent name/],
    [{ ...create, agent: 'ghost' }, /^body\.agent: no agent named "ghost"/],
    [{ ...create, id: '../../x' }, /^body\.id: must be letters, digits/],
    [{ ...create, id: 'a'.repeat(65) }, /^body\.id: must be at most 64/],
    [{ ...create, title: '' }, /^body\.title: must not be empty/],
    [{ ...create, enabled: 'yes' }, /^body\.enabled: must be true or false/],
    [{ ...create, timezone: 'Mars/Olympus' }, /^body\.timezone: must be an IANA time zone/],
    [{ ...create, quiet_start: '25:00' }, /^body\.quiet_start: must be HH:MM/],
    [{ ...create, reasoning_effort: 'max' }, /^body\.reasoning_effort: must be one of/],
    [{ ...create, cli_parameters: { claude: [1] } }, /^body\.cli_parameters\.claude\.0: must be a string/],
    [{ ...create, surprise: 1 }, /^body\.surprise: /],
    [{ title: 'X', agent: 'coder' }, /^body\.schedule: /],
    [[create], /^body\./],
  ];
  for (const [body, re] of bad) {
    const r = await s.call('/api/cron', { method: 'POST', body });
    t.match(r, { status: 400, body: { code: 'invalid-body', error: re } }, JSON.stringify(body).slice(0, 60));
  }
  t.match(await s.call('/api/cron/c1', { method: 'PUT', body: { id: 'other' } }), { status: 400, body: { error: /^body\.id: / } }, 'the id cannot be changed');
  t.match(await s.call('/api/cron', { method: 'POST', raw: '{"title":' }), { status: 400, body: { code: 'invalid-json' } });
  t.equal((await s.call('/api/cron', { method: 'POST', raw: JSON.stringify({ ...create, description: 'x'.repeat(70_000) }) })).status, 413);
  // (`..` and `%2E%2E` never reach the server: the client normalises them away.)
  for (const id of ['a%2F..%2Fb', '..%2Fx', 'a.b', 'x%00', '%2e%2e%2f']) {
    const r = await s.call(`/api/cron/${id}`, { method: 'DELETE' });
    t.match(r, { status: 400, body: { code: 'invalid-path', error: /^path\.id: / } }, id);
  }
  t.same(snapshot(s), before, 'files and log unchanged');

  // A broken file is refused with a generic 500 and left as it was.
  writeFileSync(s.paths.cronJobsFile, '{"jobs": [1]}');
  t.match(await s.call('/api/cron'), { status: 500, body: { error: 'internal error' } });
  t.match(await s.call('/api/cron', { method: 'POST', body: create }), { status: 500 });
  t.equal(readFileSync(s.paths.cronJobsFile, 'utf8'), '{"jobs": [1]}');
});

await t.test('webhooks: CRUD with masked secrets, a generated secret shown once, "***" keeps it; HMAC verify', async (t) => {
  const s = await serveOps(t, { lang: 'en' });
  let r = await s.call('/api/webhooks', { method: 'POST', body: { name: 'GitHub', agent: 'coder', mode: 'cron_task', secret: 'hook-secret-123' } });
  t.equal(r.status, 201);
  t.match(r.body, { id: 'id1', name: 'GitHub', title: 'GitHub', url: '/hooks/id1', method: 'POST', agent: 'coder', status: 'active', enabled: true, last_triggered: null, trigger_count: 0, mode: 'cron_task', secret: '***' });
  r = await s.call('/api/webhooks', { method: 'POST', body: { id: 'stripe', title: 'Stripe', agent: 'writer' } });
  t.match(r.body, { id: 'stripe', secret: 'generated-secret-1', mode: 'wake' }, 'a generated secret is shown in the create reply only');
  r = await s.call('/api/webhooks', { as: 'viewer' });
  t.same(r.body.map((h: { id: string; secret: string }) => [h.id, h.secret]), [['id1', '***'], ['stripe', '***']], 'masked in the listing');
  t.equal(statSync(s.paths.webhooksFile).mode & 0o777, 0o600);

  r = await s.call('/api/webhooks/id1', { method: 'PUT', body: { secret: '***', description: 'push events' } });
  t.match(r, { status: 200, body: { description: 'push events', secret: '***' } });
  const sign = (secret: string, payload: string) => createHmac('sha256', secret).update(payload).digest();
  const payload = '{"ref":"main"}';
  for (const signature of [sign('hook-secret-123', payload).toString('hex'), `sha256=${sign('hook-secret-123', payload).toString('hex')}`, sign('hook-secret-123', payload).toString('base64')]) {
    r = await s.call('/api/webhooks/id1/verify', { method: 'POST', as: 'operator', body: { payload, signature } });
    t.same(r, { status: 200, body: { valid: true } }, `"***" kept the secret: ${signature.slice(0, 12)}`);
  }
  for (const signature of [sign('wrong', payload).toString('hex'), 'abc', 'sha256=', '0'.repeat(64), sign('hook-secret-123', payload).toString('hex').slice(0, 62)]) {
    r = await s.call('/api/webhooks/id1/verify', { method: 'POST', as: 'operator', body: { payload, signature: signature || 'x' } });
    t.same(r, { status: 200, body: { valid: false } }, `bad signature ${signature.slice(0, 12)}`);
  }
  r = await s.call('/api/webhooks/id1', { method: 'PUT', body: { secret: 'rotated-secret' } });
  r = await s.call('/api/webhooks/id1/verify', { method: 'POST', body: { payload, signature: sign('rotated-secret', payload).toString('hex') } });
  t.same(r.body, { valid: true }, 'a new secret replaces the old');
  t.notMatch(JSON.stringify(s.log.read()), /hook-secret-123|rotated-secret|generated-secret/, 'no secret in the log');

  r = await s.call('/api/webhooks/stripe', { method: 'DELETE' });
  t.same(r, { status: 200, body: { id: 'stripe', deleted: true } });
  t.same((await s.call('/api/webhooks')).body.map((h: { id: string }) => h.id), ['id1']);
  t.same(
    s.log.read().filter((e) => e.stream.startsWith('webhook:')).map((e) => e.type),
    [AUTOMATION_EVENTS.created, AUTOMATION_EVENTS.created, AUTOMATION_EVENTS.updated, AUTOMATION_EVENTS.updated, AUTOMATION_EVENTS.deleted],
  );
  t.same(s.internal, []);
});

await t.test('webhooks: roles, allowed_agents, no secret, bad input change nothing', async (t) => {
  const s = await serveOps(t, { lang: 'en' });
  writeJson(s.paths.webhooksFile, [
    { id: 'c1', name: 'Coder hook', agent: 'coder', secret: 'coder-secret-1' },
    { id: 'w1', name: 'Writer hook', agent: 'writer', secret: 'writer-secret-1' },
    { id: 'bare', name: 'No secret', agent: 'coder' },
  ]);
  const before = snapshot(s);
  const verify = { payload: '{}', signature: 'sha256=00' };
  for (const who of ['operator', 'viewer']) {
    t.equal((await s.call('/api/webhooks', { method: 'POST', as: who, body: { agent: 'coder', name: 'x' } })).status, 403);
    t.equal((await s.call('/api/webhooks/c1', { method: 'PUT', as: who, body: { enabled: false } })).status, 403);
    t.equal((await s.call('/api/webhooks/c1', { method: 'DELETE', as: who })).status, 403);
  }
  t.equal((await s.call('/api/webhooks/c1/verify', { method: 'POST', as: 'viewer', body: verify })).status, 403, 'a viewer may not verify');
  t.same((await s.call('/api/webhooks', { as: 'coderViewer' })).body.map((h: { id: string }) => h.id), ['c1', 'bare']);
  t.match(await s.call('/api/webhooks/w1/verify', { method: 'POST', as: 'coderOperator', body: verify }), { status: 403, body: { code: 'agent-not-allowed' } });
  t.match(await s.call('/api/webhooks/w1', { method: 'DELETE', as: 'coderAdmin' }), { status: 403, body: { code: 'agent-not-allowed' } });
  t.match(await s.call('/api/webhooks', { method: 'POST', as: 'coderAdmin', body: { agent: 'writer', name: 'x' } }), { status: 403, body: { code: 'agent-not-allowed' } });
  t.match(await s.call('/api/webhooks/bare/verify', { method: 'POST', body: verify }), { status: 409, body: { code: 'webhook-no-secret' } });
  t.match(await s.call('/api/webhooks/c1', { method: 'POST', body: verify }), { status: 405 });
  for (const [body, re] of [
    [{ agent: 'coder', secret: 'short' }, /^body\.secret: must be at least 8/],
    [{ agent: 'coder', mode: 'push' }, /^body\.mode: must be one of wake, cron_task/],
    [{ agent: 'coder', id: 'a/b' }, /^body\.id: /],
    [{ name: 'x' }, /^body\.agent: /],
    [{ agent: 'coder', url: 'http://evil' }, /^body\.url: /],
  ] as [unknown, RegExp][]) {
    t.match(await s.call('/api/webhooks', { method: 'POST', body }), { status: 400, body: { code: 'invalid-body', error: re } }, JSON.stringify(body));
  }
  t.match(await s.call('/api/webhooks/c1', { method: 'PUT', body: { secret: '**' } }), { status: 400, body: { error: /^body\.secret: / } });
  t.match(await s.call('/api/webhooks/c1/verify', { method: 'POST', body: { payload: 1, signature: 'x' } }), { status: 400, body: { error: /^body\.payload: must be a string/ } });
  t.match(await s.call('/api/webhooks/c1/verify', { method: 'POST', body: { payload: '', signature: '' } }), { status: 400, body: { error: /^body\.signature: must not be empty/ } });
  t.equal((await s.call('/api/webhooks/c1/verify', { method: 'POST', raw: JSON.stringify({ payload: 'x'.repeat(400_000), signature: 'x' }) })).status, 413);
  t.match(await s.call('/api/webhooks/..%2Fc1', { method: 'PUT', body: {} }), { status: 400, body: { code: 'invalid-path' } });
  t.same(snapshot(s), before, 'nothing changed');
});

await t.test('webhooks: an HMAC scheme that reads a signing time it does not sign is refused, naming body.signature.signed_payload', async (t) => {
  const s = await serveOps(t, { lang: 'en' });
  writeJson(s.paths.webhooksFile, [{ id: 'c1', name: 'Coder hook', agent: 'coder', secret: 'coder-secret-1', auth: 'bearer', signature: { header: 'X-Sig', timestamp_header: 'X-Ts' } }]);
  const before = snapshot(s);
  const unsound = [
    { header: 'X-Sig', timestamp_header: 'X-Ts' },
    { header: 'X-Sig', signature_key: 'v1', timestamp_key: 't', signed_payload: 'v1:' },
    { preset: 'stripe', signed_payload: '' },
    { preset: 'slack', signed_payload: 'v0:' },
  ];
  for (const signature of unsound) {
    const r = await s.call('/api/webhooks', { method: 'POST', body: { agent: 'coder', auth: 'hmac', secret: 'hook-secret-123', signature } });
    t.match(r, { status: 400, body: { code: 'invalid-body', error: /^body\.signature\.signed_payload: must contain \{timestamp\}/ } }, `create ${JSON.stringify(signature)}`);
  }
  t.match(await s.call('/api/webhooks', { method: 'POST', body: { agent: 'coder', auth: 'hmac', secret: 'hook-secret-123', signature: { header: 'X-Sig', signed_payload: '{timestamp}.' } } }), {
    status: 400,
    body: { error: /^body\.signature\.signed_payload: signs \{timestamp\} but neither timestamp_key nor timestamp_header/ },
  });
  t.match(await s.call('/api/webhooks/c1', { method: 'PUT', body: { signature: unsound[0] } }), { status: 400, body: { error: /^body\.signature\.signed_payload: / } }, 'update');
  t.match(await s.call('/api/webhooks/c1', { method: 'PUT', body: { auth: 'hmac' } }), { status: 400, body: { error: /^body\.signature\.signed_payload: / } }, 'switching to hmac puts the stored block to use');
  const imported = await s.call('/api/import', { method: 'POST', body: { webhooks: [{ id: 'h', agent: 'coder', auth: 'hmac', signature: unsound[0] }] } });
  t.match(imported, { status: 400, body: { code: 'invalid-body', error: /^body\.webhooks\[0\]\.signature\.signed_payload: must contain/ } }, 'import');
  t.same(snapshot(s), before, 'nothing changed');

  // The presets, and sound custom schemes, are taken.
  for (const signature of [{ preset: 'github' }, { preset: 'stripe' }, { preset: 'slack' }, { header: 'X-Sig', timestamp_header: 'X-Ts', signed_payload: '{timestamp}:' }]) {
    t.equal((await s.call('/api/webhooks', { method: 'POST', body: { agent: 'coder', auth: 'hmac', secret: 'hook-secret-123', signature } })).status, 201, JSON.stringify(signature));
  }
  t.match(await s.call('/api/webhooks/c1', { method: 'PUT', body: { description: 'still bearer' } }), { status: 200 }, 'an edit that leaves the block alone is not refused for it');
  t.match(await s.call('/api/webhooks/c1', { method: 'PUT', body: { auth: 'hmac', signature: { preset: 'github' } } }), { status: 200, body: { auth: 'hmac' } }, 'fixed with the switch');
});

await t.test('tasks: list and details from the tasks projection in WIRE.md shape, ACL-filtered; create and cancel are 503 after the checks', async (t) => {
  const s = await serveOps(t, { lang: 'en' });
  t.same((await s.call('/api/tasks', { as: 'viewer' })).body, [], 'no task facts is an empty list');
  writeJson(s.paths.tasksFile, [{ task_id: 'stale', status: 'running', parent_agent: 'coder' }]);
  const created = (task_id: string, parent_agent: string, agent: string, created_at: number, more: { name?: string; prompt?: string; provider?: string; model?: string } = {}) =>
    s.bus.publish({
      stream: `task:${task_id}`,
      type: TASK_EVENTS.created,
      data: { task_id, name: more.name ?? task_id, parent_agent, agent, transport: 'internal', chat_id: 0, topic_id: null, caller_user: null, prompt: more.prompt ?? 'p', provider: more.provider ?? null, model: more.model ?? null, created_at },
    });
  await created('a1', 'coder', 'coder', T0 / 1000 - 90, { name: 'Refactor', prompt: 'do it', provider: 'claude', model: 'opus' });
  await created('b2', 'writer', 'writer', T0 / 1000 - 500, { name: 'Essay' });
  await s.bus.publish({ stream: 'task:b2', type: TASK_EVENTS.completed, data: { result: 'ok', provider: null, model: null, session_id: null, at: T0 / 1000 - 200 } });
  await created('c3', 'coder', 'writer', T0 / 1000 - 1000);
  await s.bus.publish({ stream: 'task:c3', type: TASK_EVENTS.failed, data: { reason: 'error', result: 'no', provider: null, model: null, session_id: null, at: T0 / 1000 - 900 } });
  let r = await s.call('/api/tasks?limit=50', { as: 'viewer' });
  t.same(r.body[0], {
    task_id: 'a1',
    name: 'Refactor',
    status: 'running',
    parent_agent: 'coder',
    agent: 'coder',
    provider: 'claude',
    model: 'opus',
    created_at: T0 / 1000 - 90,
    elapsed_seconds: 90,
    prompt: 'do it',
    description: null,
    result: null,
  });
  t.same(r.body.map((x: { task_id: string }) => x.task_id), ['a1', 'b2', 'c3'], 'newest first, and nothing of what tasks.json holds beside the facts');
  t.equal(r.body[1].elapsed_seconds, 300);
  t.same((await s.call('/api/tasks?status=running')).body.map((x: { task_id: string }) => x.task_id), ['a1']);
  t.same((await s.call('/api/tasks?limit=1')).body.length, 1);
  t.same((await s.call('/api/tasks', { as: 'coderViewer' })).body.map((x: { task_id: string }) => x.task_id), ['a1'], 'c3 also names writer, so coder-only users do not see it');
  t.match(await s.call('/api/tasks/b2', { as: 'viewer' }), { status: 200, body: { task_id: 'b2', result: 'ok' } });
  t.match(await s.call('/api/tasks/b2', { as: 'coderViewer' }), { status: 403, body: { code: 'agent-not-allowed' } });
  t.match(await s.call('/api/tasks/zz'), { status: 404, body: { code: 'not-found' } });

  const create = { name: 'New', agent: 'coder', prompt: 'hello' };
  t.match(await s.call('/api/tasks', { method: 'POST', body: create }), { status: 503, body: { code: 'no-task-hub' } });
  t.equal((await s.call('/api/tasks', { method: 'POST', as: 'operator', body: create })).status, 403, 'creating needs an admin');
  t.match(await s.call('/api/tasks', { method: 'POST', as: 'coderAdmin', body: { ...create, agent: 'writer' } }), { status: 403, body: { code: 'agent-not-allowed' } }, 'ACL before the hub');
  t.match(await s.call('/api/tasks', { method: 'POST', body: { ...create, agent: 'ghost' } }), { status: 400, body: { error: /^body\.agent: no agent named/ } });
  t.match(await s.call('/api/tasks/a1/cancel', { method: 'POST', as: 'coderOperator' }), { status: 503, body: { code: 'no-task-hub', error: /not cancelled: the task hub is not running/ } });
  t.equal((await s.call('/api/tasks/a1/cancel', { method: 'POST', as: 'viewer' })).status, 403);
  t.match(await s.call('/api/tasks/b2/cancel', { method: 'POST', as: 'coderOperator' }), { status: 403, body: { code: 'agent-not-allowed' } });
  t.match(await s.call('/api/tasks/zz/cancel', { method: 'POST' }), { status: 404 });

  for (const [path, code] of [
    ['/api/tasks?status=bogus', 'invalid-query'],
    ['/api/tasks?limit=0', 'invalid-query'],
    ['/api/tasks?limit=501', 'invalid-query'],
    ['/api/tasks/..%2F..%2Fetc', 'invalid-path'],
    ['/api/tasks/a%2Fb', 'invalid-path'],
  ] as [string, string][]) {
    t.match(await s.call(path), { status: 400, body: { code } }, path);
  }
  for (const [body, re] of [
    [{ ...create, prompt: '' }, /^body\.prompt: must not be empty/],
    [{ ...create, name: 3 }, /^body\.name: must be a string/],
    [{ ...create, agent: '../x' }, /^body\.agent: /],
    [{ ...create, parent: 'x' }, /^body\.parent: /],
  ] as [unknown, RegExp][]) {
    t.match(await s.call('/api/tasks', { method: 'POST', body }), { status: 400, body: { code: 'invalid-body', error: re } });
  }
  t.same(s.internal, []);
});

await t.test('export/import: users without secrets, masked webhook secrets; merge adds new, skips existing; imported users have no password', async (t) => {
  const s = await serveOps(t, { lang: 'en' });
  writeJson(s.paths.cronJobsFile, [{ id: 'c1', title: 'Coder job', schedule: '@daily', agent: 'coder', execution_count: 4 }]);
  writeJson(s.paths.webhooksFile, [{ id: 'h1', name: 'Hook', agent: 'writer', secret: 'very-secret-1' }]);
  writeJson(s.paths.usersFile, [{ username: 'admin', role: 'admin', password_hash: 'scrypt$abc', totp_secret: 'TOTPSECRET', totp_enabled: true, token_version: 3 }]);

  let r = await s.call('/api/export');
  t.equal(r.status, 200);
  t.match(r.body, { version: '9.9.9-test', exported_at: new Date(T0).toISOString(), cron_jobs: [{ id: 'c1' }], webhooks: [{ id: 'h1', secret: '***' }] });
  t.same(r.body.users, [{ username: 'admin', role: 'admin', display_name: '', allowed_agents: [], telegram_user_ids: [], active: true, created_at: 0, totp_enabled: true, avatar: null }]);
  t.notMatch(JSON.stringify(r.body), /scrypt|TOTPSECRET|very-secret/);
  for (const who of ['operator', 'viewer']) {
    t.equal((await s.call('/api/export', { as: who })).status, 403);
    t.equal((await s.call('/api/import', { method: 'POST', as: who, body: {} })).status, 403);
  }

  const exported = r.body;
  const data = {
    ...exported,
    cron_jobs: [...exported.cron_jobs, { id: 'c2', title: 'New job', schedule: '0 * * * *', agent: 'main', status: 'active', next_run: null }],
    webhooks: [...exported.webhooks, { id: 'h2', name: 'Other', agent: 'coder', secret: '***', url: '/hooks/h2' }],
    users: [...exported.users, { username: 'newbie', role: 'viewer', allowed_agents: ['coder'], totp_enabled: true }],
  };
  r = await s.call('/api/import', { method: 'POST', body: data });
  t.same(r, { status: 200, body: { cron_jobs_added: 1, webhooks_added: 1, users_added: 1, skipped: 3 } });
  const users = JSON.parse(readFileSync(s.paths.usersFile, 'utf8'));
  t.match(users[0], { username: 'admin', password_hash: 'scrypt$abc', totp_secret: 'TOTPSECRET', token_version: 3 }, 'an existing user is left exactly as it was');
  t.match(users[1], { username: 'newbie', role: 'viewer', allowed_agents: ['coder'], password_hash: '', totp_enabled: false, totp_secret: null });
  t.equal(statSync(s.paths.usersFile).mode & 0o777, 0o600);
  const hooks = JSON.parse(readFileSync(s.paths.webhooksFile, 'utf8'));
  t.match(hooks, [{ id: 'h1', secret: 'very-secret-1' }, { id: 'h2', secret: null }], 'a masked secret imports as none');
  t.notOk('url' in hooks[1], 'derived fields are not stored');
  t.same(JSON.parse(readFileSync(s.paths.cronJobsFile, 'utf8')).map((j: { id: string }) => j.id), ['c1', 'c2']);
  t.same(
    s.log.read().filter((e) => e.type === USER_EVENTS.created).map((e) => e.data),
    [{ username: 'newbie', role: 'viewer', by: 'admin' }],
  );
  t.same(
    s.log.read().filter((e) => e.type === AUTOMATION_EVENTS.job_created || e.type === AUTOMATION_EVENTS.created).map((e) => e.stream),
    ['cron:c2', 'webhook:h2'],
    'imported records are facts too',
  );
  t.ok(existsSync(`${s.paths.workspace}/cron_tasks/c2/c2_MEMORY.md`), 'an imported job gets its folder, as a created one does');
  r = await s.call('/api/import', { method: 'POST', body: data });
  t.same(r.body, { cron_jobs_added: 0, webhooks_added: 0, users_added: 0, skipped: 6 }, 'a second import adds nothing');
  t.same(s.internal, []);
});

await t.test('import: bad or hostile input is refused whole and changes nothing', async (t) => {
  const s = await serveOps(t, { lang: 'en' });
  writeJson(s.paths.usersFile, [{ username: 'admin', role: 'admin' }]);
  const before = snapshot(s);
  const job = { id: 'j1', title: 'J', schedule: '@daily', agent: 'coder' };
  const bad: [unknown, string, RegExp][] = [
    [{ users: [{ username: 'x', role: 'admin', password_hash: 'scrypt$x' }] }, 'invalid-body', /^body\.users\.0\.password_hash: /],
    [{ users: [{ username: 'x', role: 'root' }] }, 'invalid-body', /^body\.users\.0\.role: must be one of/],
    [{ users: [{ username: '../x', role: 'viewer' }] }, 'invalid-body', /^body\.users\.0\.username: /],
    [{ cron_jobs: [job, { ...job, id: '../../etc/passwd' }] }, 'invalid-body', /^body\.cron_jobs\.1\.id: /],
    [{ cron_jobs: [{ ...job, id: 'webhook_deploy' }] }, 'invalid-body', /^body\.cron_jobs\.0\.id: must not start with webhook_/],
    [{ cron_jobs: [{ ...job, agent: 'ghost' }] }, 'invalid-body', /^body\.cron_jobs\[0\]\.agent: no agent named/],
    [{ cron_jobs: [{ ...job, schedule: 'nope' }] }, 'invalid-body', /^body\.cron_jobs\.0\.schedule: /],
    [{ cron_jobs: [{ ...job, schedule: '* * * * * *' }] }, 'invalid-body', /^body\.cron_jobs\.0\.schedule: must be a cron expression of 5 fields/],
    [{ webhooks: [{ id: 'h', agent: 'coder', mode: 'x' }] }, 'invalid-body', /^body\.webhooks\.0\.mode: /],
    [{ cron_jobs: 'all' }, 'invalid-body', /^body\.cron_jobs: /],
    [{ settings: {} }, 'invalid-body', /^body\.settings: /],
  ];
  for (const [body, code, re] of bad) {
    const r = await s.call('/api/import', { method: 'POST', body });
    t.match(r, { status: 400, body: { code, error: re } }, JSON.stringify(body).slice(0, 70));
  }
  t.match(await s.call('/api/import', { method: 'POST', as: 'coderAdmin', body: { cron_jobs: [job, { ...job, id: 'j2', agent: 'writer' }] } }), { status: 403, body: { code: 'agent-not-allowed' } });
  t.match(await s.call('/api/import', { method: 'POST', as: 'coderAdmin', body: { users: [{ username: 'wide', role: 'admin' }] } }), { status: 403, body: { code: 'agent-not-allowed', error: /users\[0\]\.allowed_agents/ } }, 'a restricted admin cannot mint an unrestricted user');
  t.match(await s.call('/api/import', { method: 'POST', raw: '{"users": [' }), { status: 400, body: { code: 'invalid-json' } });
  t.equal((await s.call('/api/import', { method: 'POST', raw: JSON.stringify({ users: [], pad: 'x'.repeat(5 * 1024 * 1024) }) })).status, 413);
  t.same(snapshot(s), before, 'nothing changed');
});

await t.test('run history: a cron job\'s and a webhook\'s runs folded from their facts, newest first; ACL as the record; bad limit and unknown id', async (t) => {
  const s = await serveOps(t, { lang: 'en' });
  t.equal((await s.call('/api/cron', { method: 'POST', body: { id: 'job', title: 'Report', schedule: '@daily', agent: 'coder' } })).status, 201);
  t.equal((await s.call('/api/webhooks', { method: 'POST', body: { id: 'hook', name: 'Hook', agent: 'coder', mode: 'cron_task', secret: 'hook-secret-123' } })).status, 201);
  t.same((await s.call('/api/cron/job/runs')).body, [], 'no runs yet');
  const cron = (type: string, data: object) => s.bus.publish({ stream: 'cron:job', type, data: { id: 'job', ...data } } as never);
  await cron(AUTOMATION_EVENTS.fired, { agent: 'coder', fire_id: 'job@1', scheduled_at: '2026-11-22T09:00:00.000Z', trigger: 'schedule' });
  await cron(AUTOMATION_EVENTS.run_finished, { agent: 'coder', fire_id: 'job@1', run_id: 'r1', status: 'success', duration_ms: 1500, result: 'All good', deliver: true });
  await cron(AUTOMATION_EVENTS.delivered, { fire_id: 'job@1', attempt: 1 });
  await cron(AUTOMATION_EVENTS.fire_skipped, { agent: 'coder', fire_id: 'job@2', scheduled_at: '2026-11-23T09:00:00.000Z', status: 'skipped:missed' });
  await cron(AUTOMATION_EVENTS.fired, { agent: 'coder', fire_id: 'job@3', scheduled_at: '2026-11-24T09:00:00.000Z', trigger: 'manual' });
  let r = await s.call('/api/cron/job/runs', { as: 'viewer' });
  t.equal(r.status, 200);
  t.match(r.body, [
    { fire_id: 'job@3', trigger: 'manual', status: 'running', finished_at: null, duration_ms: null, result: null, delivered: false },
    { fire_id: 'job@2', status: 'skipped:missed', scheduled_at: '2026-11-23T09:00:00.000Z' },
    { fire_id: 'job@1', trigger: 'schedule', status: 'success', duration_ms: 1500, result: 'All good', delivered: true, fired_at: String, finished_at: String },
  ]);
  t.same((await s.call('/api/cron/job/runs?limit=1')).body.map((x: { fire_id: string }) => x.fire_id), ['job@3']);

  const hook = (type: string, data: object) => s.bus.publish({ stream: 'webhook:hook', type, data: { id: 'hook', agent: 'coder', ...data } } as never);
  await hook(AUTOMATION_EVENTS.triggered, { mode: 'cron_task', request_id: 'q1', client: '10.0.0.1', body_bytes: 12, keys: ['action'] });
  await hook(AUTOMATION_EVENTS.completed, { mode: 'cron_task', request_id: 'q1', status: 'queued', turn_id: null, task_id: 'run-1' });
  await hook(AUTOMATION_EVENTS.run_ended, { request_id: 'q1', run_id: 'run-1', status: 'success', result: 'Done' });
  await hook(AUTOMATION_EVENTS.triggered, { mode: 'cron_task', request_id: 'q2', client: '10.0.0.2', body_bytes: 3, keys: [] });
  await hook(AUTOMATION_EVENTS.failed, { mode: 'cron_task', request_id: 'q2', reason: 'no-runner', error: 'no runner' });
  r = await s.call('/api/webhooks/hook/runs', { as: 'viewer' });
  t.match(r, {
    status: 200,
    body: [
      { request_id: 'q2', status: 'failed', error: 'no runner', client: '10.0.0.2' },
      { request_id: 'q1', status: 'success', result: 'Done', body_bytes: 12, keys: ['action'], finished_at: String },
    ],
  });

  for (const path of ['/api/cron/job/runs', '/api/webhooks/hook/runs']) {
    t.match(await s.call(path, { as: 'coderViewer' }), { status: 200 }, `${path}: a viewer allowed coder`);
    t.match(await s.call(path, { as: null }), { status: 401 }, `${path}: no credential`);
    t.match(await s.call(`${path}?limit=0`), { status: 400, body: { code: 'invalid-query', error: /limit/ } });
    t.match(await s.call(`${path}?limit=abc`), { status: 400, body: { code: 'invalid-query' } });
    t.match(await s.call(`${path}?limit=201`), { status: 400, body: { code: 'invalid-query' } });
  }
  t.match(await s.call('/api/cron/nope/runs'), { status: 404, body: { code: 'not-found' } });
  t.match(await s.call('/api/webhooks/nope/runs'), { status: 404, body: { code: 'not-found' } });
  t.match(await s.call('/api/cron/..%2Fx/runs'), { status: 400, body: { code: 'invalid-path' } });
  // A job of an agent the user may not use is refused as its record is.
  t.equal((await s.call('/api/cron', { method: 'POST', body: { id: 'wjob', title: 'W', schedule: '@daily', agent: 'writer' } })).status, 201);
  t.match(await s.call('/api/cron/wjob/runs', { as: 'coderViewer' }), { status: 403, body: { code: 'agent-not-allowed' } });
  t.equal((await s.call('/api/webhooks', { method: 'POST', body: { id: 'whook', agent: 'writer', secret: 'hook-secret-123' } })).status, 201);
  t.match(await s.call('/api/webhooks/whook/runs', { as: 'coderViewer' }), { status: 403, body: { code: 'agent-not-allowed' } });
});
