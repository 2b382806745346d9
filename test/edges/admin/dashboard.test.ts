import t from 'tap';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { NOTIFICATION_COMMANDS, SYSTEM_EVENTS, TASK_EVENTS, type UserRecordInput } from '../../../schemas/index.js';
import { PROJECTIONS, diffProjections, rebuildProjections, saveUsers } from '../../../store/index.js';
import { STATIC_TOKEN, T0, serveOps } from '../../fixtures/admin-ops.js';
import * as v from 'valibot';
import { UsersSchema } from '../../../schemas/index.js';

type Ops = Awaited<ReturnType<typeof serveOps>>;

function writeJson(path: string, data: unknown) {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, JSON.stringify(data));
}

function users(s: Ops, rows: UserRecordInput[]) {
  saveUsers(s.paths, v.parse(UsersSchema, rows));
}

const NO_RUN = { provider: null, model: null, session_id: null };

/** A task as the task hub records it: created (seconds since the epoch), then where it got to, if anywhere. */
async function task(s: Ops, id: string, parent: string, name: string, createdS: number, then?: 'waiting' | { done: number } | { failed: number } | { cancelled: number }) {
  const created = { task_id: id, name, parent_agent: parent, agent: parent, transport: 'api', chat_id: 7, topic_id: null, caller_user: null, caller_role: null, prompt: name, provider: null, model: null, created_at: createdS };
  await s.bus.publish({ stream: `task:${id}`, type: TASK_EVENTS.created, data: created });
  const next =
    then === undefined ? null
    : then === 'waiting' ? { type: TASK_EVENTS.question_asked, data: { question: 'which one?', at: createdS + 1 } }
    : 'done' in then ? { type: TASK_EVENTS.completed, data: { result: 'ok', ...NO_RUN, at: then.done } }
    : 'failed' in then ? { type: TASK_EVENTS.failed, data: { reason: 'error', result: 'boom', ...NO_RUN, at: then.failed } }
    : { type: TASK_EVENTS.cancelled, data: { at: then.cancelled } };
  if (next) await s.bus.publish({ stream: `task:${id}`, ...next });
}

/** A notification from `source`, `ageS` seconds before now, through the notifier. */
async function notify(s: Ops, over: { source: 'cron' | 'task' | 'webhook' | 'system'; outcome: 'success' | 'failed' | 'error'; title: string; agent?: string; body?: string; source_id?: string }) {
  await s.bus.send(NOTIFICATION_COMMANDS.create, { body: 'details', ...over });
}

await t.test('GET /api/system/status: WIRE.md shape, host figures, daemon uptime, localised; instance name is durable', async (t) => {
  const s = await serveOps(t);
  s.advance(3 * 86_400_000 + 4 * 3_600_000 + 5 * 60_000);
  let r = await s.call('/api/system/status', { as: 'viewer' });
  t.equal(r.status, 200);
  t.same(Object.keys(r.body).sort(), ['cpu_percent', 'disk_percent', 'instance_name', 'ram_percent', 'uptime_human', 'uptime_seconds', 'version']);
  t.match(r.body, { cpu_percent: 75, ram_percent: 42.5, disk_percent: 61.2, uptime_seconds: 273_900, uptime_human: '3 д 4 ч 5 мин', version: '9.9.9-test' });
  t.type(r.body.instance_name, 'string');
  r = await s.call('/api/system/status', { lang: 'en-US,en;q=0.9' });
  t.equal(r.body.uptime_human, '3d 4h 5m');
  r = await s.call('/api/system/status', { lang: 'uk' });
  t.equal(r.body.uptime_human, '3 д 4 ч 5 мин', 'uk is served as ru');

  r = await s.call('/api/system/instance-name', { method: 'PUT', body: { instance_name: '  Prod box  ' } });
  t.same(r, { status: 200, body: { instance_name: 'Prod box' } });
  t.equal((await s.call('/api/system/status')).body.instance_name, 'Prod box');
  const facts = s.log.read({ stream: 'system' }).filter((e) => e.type === SYSTEM_EVENTS.instance_renamed);
  t.same(facts.map((e) => e.data), [{ instance_name: 'Prod box', by: 'admin' }], 'stored as a fact, so it survives restarts and replays');

  const seq = s.log.lastSeq();
  for (const who of ['operator', 'viewer']) {
    r = await s.call('/api/system/instance-name', { method: 'PUT', as: who, body: { instance_name: 'x' } });
    t.equal(r.status, 403, `${who} may not rename`);
  }
  for (const [body, code, re] of [
    [{ instance_name: '' }, 'invalid-body', /^body\.instance_name: must not be empty/],
    [{ instance_name: 7 }, 'invalid-body', /^body\.instance_name: must be a string/],
    [{ instance_name: 'a\u0007b' }, 'invalid-body', /control characters/],
    [{ instance_name: 'x'.repeat(101) }, 'invalid-body', /at most 100/],
    [{ instance_name: 'ok', extra: 1 }, 'invalid-body', /^body\.extra: /],
  ] as [unknown, string, RegExp][]) {
    r = await s.call('/api/system/instance-name', { method: 'PUT', body });
    // Russian by default (WIRE.md §2), the English specifics in `detail`.
    t.match(r, { status: 400, body: { code, error: 'Некорректные данные в теле запроса', detail: re } }, JSON.stringify(body));
  }
  r = await s.call('/api/system/instance-name', { method: 'PUT', raw: '{"instance_name":' });
  t.match(r, { status: 400, body: { code: 'invalid-json' } });
  r = await s.call('/api/system/instance-name', { method: 'PUT', raw: JSON.stringify({ instance_name: 'x'.repeat(5000) }) });
  t.equal(r.status, 413);
  t.equal((await s.call('/api/system/status')).body.instance_name, 'Prod box', 'nothing changed');
  t.equal(s.log.read({ stream: 'system' }).length, 1, 'no new rename fact');
  t.ok(s.log.lastSeq() > seq, 'the refusals were audited');
  t.equal((await s.call('/api/system/status', { as: null })).status, 401);
  t.same(s.internal, []);
});

await t.test('dashboard summary: shape, counters per ACL bucket, 10 latest visible events, localised titles', async (t) => {
  const s = await serveOps(t, { online: ['main', 'coder'] });
  await task(s, 't1', 'coder', 'Build', T0 / 1000 - 60);
  await task(s, 't2', 'writer', 'Draft', T0 / 1000 - 60, 'waiting');
  await task(s, 't3', 'writer', 'Essay', T0 / 1000 - 600, { failed: T0 / 1000 - 570 });
  await task(s, 't4', 'coder', 'Tests', T0 / 1000 - 300, { done: T0 / 1000 - 120 });
  // What tasks.json holds beside the facts is not a task: the dashboard reads the log's projection.
  writeJson(s.paths.tasksFile, [{ task_id: 'ghost', status: 'running', parent_agent: 'coder', name: 'Ghost', created_at: T0 / 1000 - 5 }]);
  writeJson(s.paths.cronJobsFile, [{ id: 'nightly', title: 'Nightly', schedule: '0 3 * * *', agent: 'coder', running: true, last_run_at: T0 / 1000 - 3600, last_status: 'failed' }]);
  await notify(s, { source: 'webhook', outcome: 'success', title: 'GitHub push', agent: 'writer' });
  await notify(s, { source: 'system', outcome: 'error', title: 'config.reload_failed' });

  let r = await s.call('/api/dashboard/summary', { as: 'admin' });
  t.equal(r.status, 200);
  t.same(Object.keys(r.body).sort(), ['counters', 'recent_activity', 'system', 'transports']);
  t.same(Object.keys(r.body.system).sort(), ['cpu_percent', 'disk_percent', 'ram_percent', 'uptime_human', 'uptime_seconds']);
  t.same(r.body.counters, { agents_total: 3, agents_online: 2, active_tasks: 2, running_crons: 1, failed_last_24h: 2 });
  const types = r.body.recent_activity.map((e: { type: string }) => e.type);
  t.same(types, ['system', 'webhook_called', 'task_completed', 'task_failed', 'cron_failed'], 'newest first');
  const byType = Object.fromEntries(r.body.recent_activity.map((e: { type: string }) => [e.type, e]));
  t.match(byType.webhook_called, { title: 'Вызван вебхук: GitHub push', subtitle: 'только что · writer', agent_name: 'writer', severity: 'info' });
  t.match(byType.system, { title: 'Событие', severity: 'warning', agent_name: null }, 'unknown type: fallback title, and the raw code is left out');
  t.match(byType.cron_failed, { title: 'Ошибка задания по расписанию: Nightly', subtitle: '1 ч назад · coder', severity: 'error' });
  for (const e of r.body.recent_activity) {
    t.type(e.subtitle, 'string');
    t.notMatch(e.title, /[a-z]+[._][a-z]+/, 'no machine code in a title');
    t.equal(e.timestamp, new Date(Date.parse(e.timestamp)).toISOString());
  }

  r = await s.call('/api/dashboard/summary', { as: 'coderViewer', lang: 'en' });
  t.same(r.body.counters, { agents_total: 1, agents_online: 1, active_tasks: 1, running_crons: 1, failed_last_24h: 1 }, 'a restricted user counts its agents only');
  t.same(
    r.body.recent_activity.map((e: { title: string; agent_name: string }) => [e.title, e.agent_name]),
    [
      ['Task completed: Tests', 'coder'],
      ['Scheduled job failed: Nightly', 'coder'],
    ],
    'and sees only their events, in English',
  );

  for (let i = 0; i < 12; i++) await notify(s, { source: 'cron', outcome: 'success', title: `Run ${i}`, body: 'real output', agent: 'coder' });
  s.advance(5_000);
  r = await s.call('/api/dashboard/summary');
  t.equal(r.body.recent_activity.length, 10, 'the 10 latest');
  t.equal(r.body.recent_activity[0].title, 'Задание по расписанию выполнено: Run 11');
  t.same(s.internal, []);
});

await t.test('summary cache: 5 s per language and ACL bucket on the injected clock; errors_ack_at moves the cutoff', async (t) => {
  const s = await serveOps(t);
  users(s, [
    { username: 'viewer', role: 'viewer' },
    { username: 'admin', role: 'admin' },
  ]);
  await notify(s, { source: 'task', outcome: 'failed', title: 'Old failure', agent: 'coder' });
  s.advance(2 * 3_600_000);
  await notify(s, { source: 'task', outcome: 'failed', title: 'New failure', agent: 'coder' });

  let r = await s.call('/api/dashboard/summary', { as: 'viewer' });
  t.equal(r.body.counters.failed_last_24h, 2);
  const reads = s.hostReads();
  await notify(s, { source: 'task', outcome: 'failed', title: 'Third', agent: 'coder' });
  s.advance(4_999);
  r = await s.call('/api/dashboard/summary', { as: 'viewer' });
  t.equal(r.body.counters.failed_last_24h, 2, 'cached within 5 s');
  t.equal(s.hostReads(), reads, 'the host was not read again');
  r = await s.call('/api/dashboard/summary', { as: 'operator' });
  t.equal(r.body.counters.failed_last_24h, 2, 'same language and bucket (every agent): the same entry');
  r = await s.call('/api/dashboard/summary', { as: 'viewer', lang: 'en' });
  t.equal(r.body.counters.failed_last_24h, 3, 'another language is another entry');
  r = await s.call('/api/dashboard/summary', { as: 'coderViewer' });
  t.equal(r.body.counters.failed_last_24h, 3, 'another ACL bucket is another entry');
  s.advance(1);
  r = await s.call('/api/dashboard/summary', { as: 'viewer' });
  t.equal(r.body.counters.failed_last_24h, 3, 'expired after 5 s');

  // The viewer acknowledges errors now (as the auth helper's endpoint writes it); one more fails after.
  const ackAt = Math.floor(s.now() / 1000);
  users(s, [
    { username: 'viewer', role: 'viewer', errors_ack_at: ackAt },
    { username: 'admin', role: 'admin' },
  ]);
  s.advance(1000);
  await notify(s, { source: 'task', outcome: 'failed', title: 'After ack', agent: 'coder' });
  r = await s.call('/api/dashboard/summary', { as: 'viewer' });
  t.equal(r.body.counters.failed_last_24h, 1, 'cutoff is max(now − 24 h, errors_ack_at), at once: the ack is part of the cache key');
  r = await s.call('/api/dashboard/summary', { as: 'admin' });
  t.equal(r.body.counters.failed_last_24h, 4, 'per user: the admin did not acknowledge');
  r = await s.call('/api/activity/recent?severity=error', { as: 'viewer' });
  t.same(r.body.map((e: { title: string }) => e.title), ['Задача завершилась с ошибкой: After ack'], 'severity=error hides errors older than the ack');
  r = await s.call('/api/activity/recent', { as: 'viewer' });
  t.equal(r.body.length, 4, 'without the error filter they are all shown');

  s.advance(23 * 3_600_000);
  r = await s.call('/api/dashboard/summary', { as: 'admin' });
  t.equal(r.body.counters.failed_last_24h, 3, 'older than 24 h no longer counts');
});

await t.test('activity: recent with limit and severity, by id with verbose, legacy raw feed; ACL and bad input', async (t) => {
  const s = await serveOps(t);
  await task(s, 'T-9', 'writer', 'Stopped', T0 / 1000 - 10, { cancelled: T0 / 1000 - 10 });
  await notify(s, { source: 'cron', outcome: 'failed', title: 'Backup', agent: 'coder', source_id: 'backup' });
  s.advance(60_000);
  await notify(s, { source: 'webhook', outcome: 'error', title: 'Hook', agent: 'writer' });

  let r = await s.call('/api/activity/recent?limit=2', { lang: 'en' });
  t.same(r.body.map((e: { type: string; severity: string }) => [e.type, e.severity]), [
    ['webhook_called', 'warning'],
    ['cron_failed', 'error'],
  ]);
  r = await s.call('/api/activity/recent?severity=warning,error&limit=20', { lang: 'en' });
  t.same(r.body.map((e: { title: string }) => e.title), ['Webhook called: Hook', 'Scheduled job failed: Backup', 'Task failed: Stopped']);
  const id = r.body[1].id;
  r = await s.call(`/api/activity/${encodeURIComponent(id)}`, { lang: 'en' });
  t.match(r, { status: 200, body: { id, type: 'cron_failed', title: 'Scheduled job failed: Backup', subtitle: '1 min ago · coder' } });
  t.notOk('raw' in r.body || 'source' in r.body, 'raw only with verbose');
  r = await s.call(`/api/activity/${encodeURIComponent(id)}?verbose=1`);
  t.match(r.body, { source: 'notifications', raw: { title: 'Backup', severity: 'critical', type: 'cron', source_id: 'backup' } });
  r = await s.call(`/api/activity/tasks%3AT-9?verbose=1`);
  t.match(r.body, { source: 'tasks', raw: { task_id: 'T-9', status: 'cancelled' }, type: 'task_failed', severity: 'warning' });

  r = await s.call('/api/activity?limit=5');
  t.same(r.body, [
    { type: 'webhook_called', message: 'Hook' },
    { type: 'cron_failed', message: 'Backup' },
    { type: 'task_failed', message: 'Stopped' },
  ]);

  // A restricted viewer sees coder's events only; another agent's event by id is "not found".
  r = await s.call('/api/activity/recent', { as: 'coderViewer' });
  t.same(r.body.map((e: { agent_name: string }) => e.agent_name), ['coder']);
  r = await s.call('/api/activity', { as: 'coderViewer' });
  t.same(r.body, [{ type: 'cron_failed', message: 'Backup' }]);
  r = await s.call('/api/activity/tasks%3AT-9', { as: 'coderViewer' });
  t.match(r, { status: 404, body: { code: 'not-found' } });
  r = await s.call('/api/activity/nope');
  t.match(r, { status: 404, body: { code: 'not-found' } });

  for (const q of ['limit=0', 'limit=201', 'limit=abc', 'limit=-1', 'severity=fatal', 'severity=error,', 'limit=1e3']) {
    r = await s.call(`/api/activity/recent?${q}`);
    t.match(r, { status: 400, body: { code: 'invalid-query' } }, q);
  }
  r = await s.call(`/api/activity/${'x'.repeat(301)}`);
  t.match(r, { status: 400, body: { code: 'invalid-path', detail: /^path\.id: / } });
  t.equal((await s.call('/api/activity/recent', { as: null })).status, 401);
  t.same(s.internal, []);
});

await t.test('audit: every mutating admin request, done or refused, is a fact; /api/audit lists them (admin only); replay rebuilds it', async (t) => {
  const s = await serveOps(t);
  users(s, [{ username: 'admin', role: 'admin' }]);
  const before = s.log.lastSeq();
  await s.call('/api/system/instance-name', { method: 'PUT', body: { instance_name: 'Box' } });
  await s.call('/api/system/instance-name', { method: 'PUT', as: 'viewer', body: { instance_name: 'Nope' } });
  await s.call('/api/cron/x%2F..', { method: 'DELETE', as: 'admin' });
  await s.call('/api/webhooks', { method: 'POST', body: { agent: 'coder', name: 'Hook', secret: 'super-secret-value' } });
  await s.call('/api/cron', { method: 'POST', token: STATIC_TOKEN, body: { title: 'By token', schedule: '@daily', agent: 'main' } });
  await s.call('/api/system/instance-name', { method: 'PUT', as: null, body: { instance_name: 'anon' } });
  await s.call('/api/dashboard/summary');

  const r = await s.call('/api/audit?limit=10');
  t.equal(r.status, 200);
  const hook = (await s.call('/api/webhooks')).body.find((h: { name: string }) => h.name === 'Hook');
  const job = (await s.call('/api/cron')).body.find((j: { title: string }) => j.title === 'By token');
  t.same(
    r.body.map((e: { actor: string; action: string; target: string; status: number; detail: unknown }) => [e.actor, e.action, e.target, e.status, e.detail]),
    [
      [null, 'POST /api/cron', job.id, 201, { agent: 'main', fields: 'agent,schedule,title' }],
      ['admin', 'POST /api/webhooks', hook.id, 201, { agent: 'coder', fields: 'agent,name,secret' }],
      ['admin', 'DELETE /api/cron/:id', 'x/..', 400, null],
      ['viewer', 'PUT /api/system/instance-name', 'instance_name', 403, { fields: 'instance_name' }],
      ['admin', 'PUT /api/system/instance-name', 'instance_name', 200, { fields: 'instance_name' }],
    ],
    'newest first, each naming what it changed (the ids the daemon chose too); reads and anonymous requests are not recorded',
  );
  t.match(r.body[0], { id: Number, timestamp: new Date(T0).toISOString(), ip: /127\.0\.0\.1/ });
  const facts = JSON.stringify(s.log.read({ after: before }));
  for (const secret of ['super-secret-value']) t.notOk(facts.includes(secret), `no secret in any fact (${secret.slice(0, 5)}…)`);
  t.equal((await s.call('/api/audit?limit=1')).body.length, 1);
  for (const who of ['operator', 'viewer']) t.equal((await s.call('/api/audit', { as: who })).status, 403, `${who} may not read the audit log`);
  t.match(await s.call('/api/audit?limit=1001'), { status: 400, body: { code: 'invalid-query' } });

  // `svc events replay`: the projection rebuilt from the log equals the live one.
  const scratch = new Database(':memory:');
  rebuildProjections(scratch, PROJECTIONS, s.log.read());
  t.same(diffProjections(s.log.projectionDb(), scratch, PROJECTIONS), []);
  scratch.close();
  t.same(s.internal, []);
});
