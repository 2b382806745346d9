import t from 'tap';
import { join } from 'node:path';
import { startNotifier } from '../../actors/index.js';
import { Bus } from '../../bus/index.js';
import {
  PROJECTIONS,
  SqliteEventLog,
  diffProjections,
  getNotification,
  listNotifications,
  notificationReadModel,
  notificationsProjection,
  rebuildProjections,
  unreadNotificationCount,
  unreadNotificationIds,
} from '../../store/index.js';
import type { NewEvent, Notification } from '../../schemas/index.js';
import { anyEvent, rawCommand } from '../fixtures/any-event.js';
import { adminUser } from '../fixtures/admin-api.js';

const ANYONE = adminUser('alice', 'viewer');

const T0 = Date.parse('2026-11-22T10:00:00.000Z');

type TT = { testdir(): string; teardown(fn: () => void): void };

/** A real log with every projection, a real bus on a settable clock, the real notifier. */
function setup(t: TT, file = join(t.testdir(), 'events.db')) {
  const log = SqliteEventLog.open(file, { projections: PROJECTIONS });
  let now = T0;
  const bus = new Bus({ log, clock: () => now });
  const db = log.projectionDb();
  let n = 0;
  const sub = startNotifier({ bus, readModel: notificationReadModel(db), newId: () => `n${++n}` });
  t.teardown(() => {
    sub.unsubscribe();
    bus.close();
    log.close();
  });
  const create = (data: Record<string, unknown>) => bus.send(rawCommand<{ persisted: boolean; notification?: Notification }>('notification.create'), data);
  const advance = (ms: number) => (now += ms);
  return { log, bus, db, create, advance, file };
}

/** One of each kind, 1 s apart: n1 critical, n2 silent, n3 info, n4 warning, n5 silent, n6 critical. */
async function seed(s: ReturnType<typeof setup>) {
  const rows: Record<string, unknown>[] = [
    { source: 'cron', outcome: 'failed', title: 'backup failed', body: 'exit 2', agent: 'main', source_id: 'cron:backup', status: 'failed' },
    { source: 'cron', outcome: 'success', title: 'report', body: 'weekly report attached', agent: 'main', source_id: 'cron:report', status: 'done' },
    { source: 'webhook', outcome: 'success', title: 'github push', body: '', source_id: 'hook:gh' },
    { source: 'webhook', outcome: 'error', title: 'stripe rejected', body: 'bad signature', source_id: 'hook:stripe' },
    { source: 'task', outcome: 'success', title: 'task done', body: 'refactored 3 files', agent: 'coder', source_id: 'task:7' },
    { source: 'task', outcome: 'failed', title: 'task failed', body: 'timeout', agent: 'coder', source_id: 'task:8', status: 'failed' },
  ];
  for (const r of rows) {
    await s.create(r);
    s.advance(1000);
  }
}

const ids = (list: Notification[]) => list.map((n) => n.id);

await t.test('created notifications fold into rows the queries return', async (t) => {
  const s = setup(t);
  await seed(s);
  const all = listNotifications(s.db);
  t.same(ids(all), ['n6', 'n5', 'n4', 'n3', 'n2', 'n1'], 'newest first; silent ones included by default');
  t.same(getNotification(s.db, 'n1'), {
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
  });
  t.same(getNotification(s.db, 'n3'), { id: 'n3', title: 'github push', body: '', read: false, severity: 'info', type: 'webhook', agent: null, status: null, source_id: 'hook:gh', created_at: '2026-11-22T10:00:02.000Z' });
  t.equal(getNotification(s.db, 'nope'), null);
  t.equal(getNotification(s.db, ''), null);

  t.same(ids(listNotifications(s.db, { limit: 2 })), ['n6', 'n5']);
  t.same(ids(listNotifications(s.db, { severity: ['critical'] })), ['n6', 'n1']);
  t.same(ids(listNotifications(s.db, { severity: ['critical', 'warning', 'info'] })), ['n6', 'n4', 'n3', 'n1'], 'what the UI shows with silent toggled off');
  t.same(ids(listNotifications(s.db, { severity: ['silent'] })), ['n5', 'n2']);
  t.same(ids(listNotifications(s.db, { severity: [] })), [], 'an empty severity list matches nothing');
  t.equal(unreadNotificationCount(s.db), 4, 'silent never counts');
  t.same(unreadNotificationIds(s.db), ['n1', 'n2', 'n3', 'n4', 'n5', 'n6'], 'read-all candidates include silent, oldest first');

  await s.bus.send(rawCommand('notification.mark_read'), { id: 'n4', principal: ANYONE });
  await s.bus.send(rawCommand('notification.mark_read'), { id: 'n2', principal: ANYONE });
  t.equal(getNotification(s.db, 'n4')!.read, true);
  t.equal(unreadNotificationCount(s.db), 3, 'reading a silent one changes no count');
  t.same(ids(listNotifications(s.db, { unread_only: true })), ['n6', 'n5', 'n3', 'n1']);
  t.same(ids(listNotifications(s.db, { unread_only: true, severity: ['critical', 'warning', 'info'] })), ['n6', 'n3', 'n1']);
  t.same(ids(listNotifications(s.db, { unread_only: true, severity: ['warning'] })), []);
  t.same(ids(listNotifications(s.db, { unread_only: true, limit: 1 })), ['n6']);

  await s.bus.send(rawCommand('notification.mark_all_read'), { principal: ANYONE });
  t.equal(unreadNotificationCount(s.db), 0);
  t.same(listNotifications(s.db, { unread_only: true }), []);
  t.same(unreadNotificationIds(s.db), []);
  t.equal(listNotifications(s.db).every((n) => n.read), true);
});

await t.test('query validation refuses bad filters and changes nothing', async (t) => {
  const s = setup(t);
  await seed(s);
  const before = listNotifications(s.db, { limit: 500 });
  for (const limit of [0, -1, 501, 1.5, Number.NaN, Infinity]) {
    t.throws(() => listNotifications(s.db, { limit }), { code: 'invalid-query', message: /limit must be an integer from 1 to 500/ }, `limit ${limit}`);
  }
  t.throws(() => listNotifications(s.db, { severity: ['critical', 'loud' as never] }), { code: 'invalid-query', message: /severity "loud"/ });
  t.equal(listNotifications(s.db, { limit: 500 }).length, 6);
  t.same(listNotifications(s.db, { limit: 500 }), before);
  t.equal(listNotifications(s.db, { limit: 1 }).length, 1);
});

await t.test('the default limit is 50, newest first', async (t) => {
  const s = setup(t);
  const events: NewEvent[] = [];
  for (let i = 1; i <= 60; i++) {
    events.push({ stream: `notification:b${i}`, type: 'notification.created', data: { id: `b${i}`, title: `t${i}`, body: '', read: false, severity: 'info', type: 'webhook', agent: null, status: null, source_id: null, created_at: '2026-11-22T10:00:00.000Z' } });
  }
  await s.bus.publishAll(events);
  const page = listNotifications(s.db);
  t.equal(page.length, 50);
  t.equal(page[0]!.id, 'b60');
  t.equal(page[49]!.id, 'b11');
  t.equal(unreadNotificationCount(s.db), 60);
});

await t.test('the fold tolerates odd events from imported logs without failing the batch', async (t) => {
  const s = setup(t);
  const good = { id: 'g1', title: 'first', body: 'b', read: false, severity: 'warning', type: 'webhook', agent: null, status: null, source_id: null, created_at: '2026-11-22T10:00:00.000Z' };
  await s.bus.publishAll([
    anyEvent({ stream: 'notification:g1', type: 'notification.created', data: good }),
    anyEvent({ stream: 'notification:g1', type: 'notification.created', data: { ...good, title: 'second copy' } }),
    anyEvent({ stream: 'notification:x', type: 'notification.created', data: { title: 'no id', severity: 'info' } }),
    anyEvent({ stream: 'notification:y', type: 'notification.created', data: { id: 'y', title: 'bad severity', severity: 'loud' } }),
    anyEvent({ stream: 'notification:z', type: 'notification.created', data: { id: 'z', severity: 'info' } }),
    anyEvent({ stream: 'notification:zz', type: 'notification.read', data: { id: 'zz' } }),
    anyEvent({ stream: 'notification:zz', type: 'notification.read', data: {} }),
    anyEvent({ stream: 'notifications', type: 'notification.all_read', data: { ids: 'g1' } }),
    anyEvent({ stream: 'notifications', type: 'notification.all_read', data: { ids: [1, null, 'missing'] } }),
  ]);
  t.equal(s.log.lastSeq(), 9, 'every event committed');
  t.same(ids(listNotifications(s.db)), ['z', 'g1']);
  t.equal(getNotification(s.db, 'g1')!.title, 'first', 'a repeated id does not rewrite the first');
  t.equal(getNotification(s.db, 'g1')!.read, false, 'all_read with a non-list ids does nothing');
  t.same(getNotification(s.db, 'z'), { id: 'z', title: '', body: '', read: false, severity: 'info', type: 'system', agent: null, status: null, source_id: null, created_at: s.log.read({ stream: 'notification:z' })[0]!.at }, 'missing fields get neutral values; created_at falls back to the envelope time');
});

await t.test('replay: folding the log again gives the same rows, twice over and across a reopen', async (t) => {
  // testdir() recreates the directory on each call: take it once.
  const dir = t.testdir();
  const s = setup(t, join(dir, 'events.db'));
  await seed(s);
  await s.bus.send(rawCommand('notification.mark_read'), { id: 'n1', principal: ANYONE });
  s.advance(5000);
  await s.create({ source: 'system', outcome: 'error', title: 'config reload failed', body: 'bad json' });
  await s.bus.send(rawCommand('notification.mark_all_read'), { principal: ANYONE });
  await s.create({ source: 'webhook', outcome: 'error', title: 'late', body: 'x', source_id: 'hook:stripe' });
  const live = listNotifications(s.db, { limit: 500 });
  t.equal(live.length, 8);

  const scratch = SqliteEventLog.open(join(dir, 'scratch.db'), { projections: PROJECTIONS });
  t.teardown(() => scratch.close());
  const events = [...s.log.iterate()];
  rebuildProjections(scratch.projectionDb(), PROJECTIONS, events);
  t.same(diffProjections(s.db, scratch.projectionDb(), PROJECTIONS), [], 'a replay matches the live read model');
  rebuildProjections(scratch.projectionDb(), [notificationsProjection], events);
  t.same(diffProjections(s.db, scratch.projectionDb(), [notificationsProjection]), [], 'folding a second time gives the same rows');
  t.same(listNotifications(scratch.projectionDb(), { limit: 500 }), live);

  rebuildProjections(s.db, PROJECTIONS, [...s.log.iterate()]);
  t.same(listNotifications(s.db, { limit: 500 }), live, 'rebuilding the live db in place changes nothing');

  s.log.close();
  const reopened = SqliteEventLog.open(s.file, { projections: PROJECTIONS });
  t.teardown(() => reopened.close());
  t.same(listNotifications(reopened.projectionDb(), { limit: 500 }), live, 'rows survive a reopen');
  t.equal(unreadNotificationCount(reopened.projectionDb()), 1);
});
