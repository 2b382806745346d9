import t from 'tap';
import { join } from 'node:path';
import { startNotifier } from '../../actors/index.js';
import { Bus } from '../../bus/index.js';
import { API_STATUSES, notificationRoutes } from '../../edges/index.js';
import type { Notification } from '../../schemas/index.js';
import { PROJECTIONS, SqliteEventLog, notificationReadModel } from '../../store/index.js';
import { rawCommand } from '../fixtures/any-event.js';
import { serveSurfaces, testBearer } from '../fixtures/http-server.js';
import { adminUser, testAdminJwt } from '../fixtures/admin-api.js';

const TOKEN = 'test-token-0123456789';
const T0 = Date.parse('2026-11-22T10:00:00.000Z');

type TT = { testdir(): string; teardown(fn: () => void): void };

/** The real thing end to end: SQLite log with projections, bus, notifier, routes on uWS, fetch. */
async function serve(t: TT) {
  const log = SqliteEventLog.open(join(t.testdir(), 'events.db'), { projections: PROJECTIONS });
  let now = T0;
  const bus = new Bus({ log, clock: () => now });
  const readModel = notificationReadModel(log.projectionDb());
  let n = 0;
  const notifier = startNotifier({ bus, readModel, newId: () => `n${++n}` });
  const srv = await serveSurfaces(t, [
    { name: 'api', routes: notificationRoutes({ readModel, bus }), statuses: API_STATUSES, authenticators: [testBearer(TOKEN), testAdminJwt({ rita: adminUser('rita', 'viewer', ['ops']) })] },
  ]);
  const { internal } = srv;
  t.teardown(() => {
    notifier.unsubscribe();
    bus.close();
    log.close();
  });
  const base = `http://127.0.0.1:${srv.port}`;
  const call = async (path: string, init: RequestInit & { token?: string | null } = {}) => {
    const { token = TOKEN, ...rest } = init;
    const headers: Record<string, string> = { connection: 'close', ...(rest.headers as Record<string, string>) };
    if (token !== null) headers.authorization = `Bearer ${token}`;
    const r = await fetch(base + path, { ...rest, headers });
    const text = await r.text();
    return { status: r.status, body: text ? (JSON.parse(text) as unknown) : null };
  };
  const create = async (data: Record<string, unknown>) => {
    await bus.send(rawCommand('notification.create'), data);
    now += 1000;
  };
  return { call, create, log, internal };
}

/** n1 critical, n2 silent, n3 info, n4 warning, n5 silent. */
async function seed(s: Awaited<ReturnType<typeof serve>>) {
  await s.create({ source: 'cron', outcome: 'failed', title: 'backup failed', body: 'exit 2', agent: 'main', source_id: 'cron:backup', status: 'failed' });
  await s.create({ source: 'cron', outcome: 'success', title: 'report', body: 'weekly report', source_id: 'cron:report' });
  await s.create({ source: 'webhook', outcome: 'success', title: 'github push', source_id: 'hook:gh' });
  await s.create({ source: 'webhook', outcome: 'error', title: 'stripe rejected', body: 'bad signature', source_id: 'hook:stripe' });
  await s.create({ source: 'task', outcome: 'success', title: 'task done', body: 'refactored', agent: 'coder' });
}

const idsOf = (body: unknown) => (body as Notification[]).map((n) => n.id);

await t.test('GET /api/notifications with each filter', async (t) => {
  const s = await serve(t);
  await seed(s);
  let r = await s.call('/api/notifications');
  t.equal(r.status, 200);
  t.same(idsOf(r.body), ['n5', 'n4', 'n3', 'n2', 'n1'], 'newest first, silent included without a filter');
  t.same((r.body as Notification[])[4], {
    id: 'n1',
    title: 'backup failed',
    body: 'exit 2',
    read: false,
    severity: 'critical',
    type: 'cron',
    agent: 'main',
    status: 'failed',
    source_id: 'cron:backup',
    created_at: '2026-11-22T10:00:00.000Z',
  }, 'SPEC.md fields plus type, agent, status, source_id, severity, created_at');

  t.same(idsOf((await s.call('/api/notifications?limit=2')).body), ['n5', 'n4']);
  t.same(idsOf((await s.call('/api/notifications?limit=500')).body), ['n5', 'n4', 'n3', 'n2', 'n1']);
  t.same(idsOf((await s.call('/api/notifications?severity=critical,warning')).body), ['n4', 'n1']);
  t.same(idsOf((await s.call('/api/notifications?severity=critical,warning,info')).body), ['n4', 'n3', 'n1']);
  t.same(idsOf((await s.call('/api/notifications?severity=silent')).body), ['n5', 'n2']);
  t.same(idsOf((await s.call('/api/notifications?severity=%20info%20,info')).body), ['n3'], 'items are trimmed and deduplicated');
  t.same(idsOf((await s.call('/api/notifications?severity=info&_=123')).body), ['n3'], 'unknown parameters are ignored');

  await s.call('/api/notifications/n4/read', { method: 'PUT' });
  await s.call('/api/notifications/n2/read', { method: 'PUT' });
  for (const v of ['true', '1']) t.same(idsOf((await s.call(`/api/notifications?unread_only=${v}`)).body), ['n5', 'n3', 'n1'], `unread_only=${v}`);
  for (const v of ['false', '0']) t.same(idsOf((await s.call(`/api/notifications?unread_only=${v}`)).body), ['n5', 'n4', 'n3', 'n2', 'n1'], `unread_only=${v}`);
  t.same(idsOf((await s.call('/api/notifications?unread_only=true&severity=critical,warning,info&limit=1')).body), ['n3']);
});

await t.test('bad filters are 400 naming the field, and change nothing', async (t) => {
  const s = await serve(t);
  await seed(s);
  const seq = s.log.lastSeq();
  const cases: [string, RegExp][] = [
    ['limit=0', /^query\.limit: must be an integer from 1 to 500$/],
    ['limit=501', /^query\.limit: must be an integer from 1 to 500$/],
    ['limit=-1', /^query\.limit: /],
    ['limit=1.5', /^query\.limit: /],
    ['limit=abc', /^query\.limit: /],
    ['limit=', /^query\.limit: /],
    ['limit=99999999999999999999', /^query\.limit: /],
    ['limit=1&limit=2', /^query\.limit: given 2 times/],
    ['unread_only=yes', /^query\.unread_only: must be one of true, false, 1, 0$/],
    ['unread_only=TRUE', /^query\.unread_only: /],
    ['unread_only=', /^query\.unread_only: /],
    ['severity=loud', /^query\.severity: must be a comma-separated list of critical, warning, info, silent$/],
    ['severity=critical,,info', /^query\.severity: /],
    ['severity=', /^query\.severity: /],
    ['severity=CRITICAL', /^query\.severity: /],
    ['severity=info&severity=warning', /^query\.severity: given 2 times/],
  ];
  for (const [q, message] of cases) {
    const r = await s.call(`/api/notifications?${q}`);
    t.equal(r.status, 400, q);
    t.match(r.body, { error: message, code: 'invalid-query' }, q);
  }
  t.equal(s.log.lastSeq(), seq, 'no events');
  t.same(s.internal, []);
});

await t.test('unread count excludes silent; read one, unknown, twice, read-all', async (t) => {
  const s = await serve(t);
  t.same((await s.call('/api/notifications/unread-count')).body, { count: 0 });
  await seed(s);
  t.same((await s.call('/api/notifications/unread-count')).body, { count: 3 }, 'critical, info and warning; two silent ones left out');

  let r = await s.call('/api/notifications/n1/read', { method: 'PUT' });
  t.equal(r.status, 200);
  t.match(r.body, { id: 'n1', read: true, severity: 'critical' });
  t.same((await s.call('/api/notifications/unread-count')).body, { count: 2 });
  const seq = s.log.lastSeq();

  r = await s.call('/api/notifications/n1/read', { method: 'PUT' });
  t.equal(r.status, 200, 'reading twice is fine');
  t.match(r.body, { id: 'n1', read: true });
  t.equal(s.log.lastSeq(), seq, 'and records nothing new');

  r = await s.call('/api/notifications/nope/read', { method: 'PUT' });
  t.equal(r.status, 404);
  t.match(r.body, { error: 'notification "nope" does not exist', code: 'not-found' });
  r = await s.call(`/api/notifications/${'x'.repeat(201)}/read`, { method: 'PUT' });
  t.equal(r.status, 400, 'an oversized id is refused');
  t.match(r.body, { code: 'invalid-command' });
  r = await s.call('/api/notifications/a%2Fb/read', { method: 'PUT' });
  t.equal(r.status, 404, 'encoded ids are decoded, then looked up');
  t.equal(s.log.lastSeq(), seq);

  r = await s.call('/api/notifications/n2/read', { method: 'PUT' });
  t.match(r.body, { id: 'n2', read: true, severity: 'silent' });
  t.same((await s.call('/api/notifications/unread-count')).body, { count: 2 }, 'reading a silent one leaves the count');

  r = await s.call('/api/notifications/read-all', { method: 'POST' });
  t.equal(r.status, 200);
  t.same(r.body, { status: 'ok', marked: 3, ids: ['n3', 'n4', 'n5'] }, 'silent n5 is marked too');
  t.same((await s.call('/api/notifications/unread-count')).body, { count: 0 });
  t.same(idsOf((await s.call('/api/notifications?unread_only=1')).body), []);
  const after = s.log.lastSeq();
  r = await s.call('/api/notifications/read-all', { method: 'POST', body: '{}' });
  t.same(r.body, { status: 'ok', marked: 0, ids: [] });
  t.equal(s.log.lastSeq(), after, 'nothing unread: nothing recorded');

  t.equal((await s.call('/api/notifications/read-all', { method: 'GET' })).status, 405);
  t.equal((await s.call('/api/notifications/n1/read', { method: 'POST' })).status, 405);
  t.equal((await s.call('/api/notifications/read-all', { method: 'POST', body: 'x'.repeat(5000) })).status, 413);
  t.same(s.internal, []);
});

await t.test('every endpoint is 401 without the right bearer token, and changes nothing', async (t) => {
  const s = await serve(t);
  await seed(s);
  const seq = s.log.lastSeq();
  const endpoints: [string, string][] = [
    ['GET', '/api/notifications'],
    ['GET', '/api/notifications?limit=0'],
    ['GET', '/api/notifications/unread-count'],
    ['PUT', '/api/notifications/n1/read'],
    ['PUT', '/api/notifications/nope/read'],
    ['POST', '/api/notifications/read-all'],
  ];
  for (const token of [null, 'wrong', '']) {
    for (const [method, path] of endpoints) {
      const r = await s.call(path, { method, token });
      t.equal(r.status, 401, `${method} ${path} with ${JSON.stringify(token)}`);
      t.match(r.body, { error: 'missing or wrong bearer token', code: 'unauthorized' });
    }
  }
  t.equal(s.log.lastSeq(), seq);
  t.same((await s.call('/api/notifications/unread-count')).body, { count: 3 });
});

await t.test('a user limited to some agents sees only notifications about them or about no agent', async (t) => {
  const s = await serve(t);
  await s.create({ source: 'cron', outcome: 'failed', title: 'main failed', body: 'x', agent: 'main', source_id: 'cron:a', status: 'failed' });
  await s.create({ source: 'cron', outcome: 'failed', title: 'ops failed', body: 'x', agent: 'ops', source_id: 'cron:b', status: 'failed' });
  await s.create({ source: 'webhook', outcome: 'failed', title: 'nobody in particular', body: 'x', source_id: 'hook:c', status: 'failed' });
  const rita = { headers: { authorization: 'Bearer as:rita' }, token: null };
  const list = (await s.call('/api/notifications', rita)).body as { title: string }[];
  t.same(list.map((n) => n.title).sort(), ['nobody in particular', 'ops failed']);
  t.same((await s.call('/api/notifications/unread-count', rita)).body, { count: 2 });
  t.same((await s.call('/api/notifications/unread-count')).body, { count: 3 }, 'the owner token sees all three');
});
