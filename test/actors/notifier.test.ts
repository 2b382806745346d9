import t from 'tap';
import { join } from 'node:path';
import { MAX_NOTIFICATION_BODY_CHARS, TRUNCATION_MARK } from '../../machines/index.js';
import { startNotifier } from '../../actors/index.js';
import { Bus, type LogLine } from '../../bus/index.js';
import { PROJECTIONS, SqliteEventLog, listNotifications, notificationReadModel } from '../../store/index.js';
import { rawCommand } from '../fixtures/any-event.js';
import type { Notification } from '../../schemas/index.js';
import { adminUser } from '../fixtures/admin-api.js';

/** An unrestricted caller: marking is theirs for every notification. */
const ANYONE = adminUser('alice', 'viewer');

const T0 = Date.parse('2026-11-22T10:00:00.000Z');

type TT = { testdir(): string; teardown(fn: () => void): void };

function setup(t: TT, opts: { newId?: () => string } = {}) {
  const log = SqliteEventLog.open(join(t.testdir(), 'events.db'), { projections: PROJECTIONS });
  let now = T0;
  const bus = new Bus({ log, clock: () => now });
  const db = log.projectionDb();
  let n = 0;
  const sub = startNotifier({ bus, readModel: notificationReadModel(db), newId: opts.newId ?? (() => `n${++n}`) });
  const logs: LogLine[] = [];
  const logSub = bus.transient$.subscribe((m) => {
    if (m.type === 'log.line') logs.push(m.data as LogLine);
  });
  t.teardown(() => {
    logSub.unsubscribe();
    sub.unsubscribe();
    bus.close();
    log.close();
  });
  const send = <R = unknown>(type: string, data: unknown, by?: string) => bus.send(rawCommand<R>(type), data, by ? { by } : {});
  const create = (data: Record<string, unknown>, by?: string) =>
    send<{ persisted: boolean; notification?: Notification; throttled?: boolean }>('notification.create', data, by);
  return { log, bus, db, send, create, logs, advance: (ms: number) => (now += ms) };
}

await t.test('create: classifies, publishes notification.created on notification:<id> with the full record', async (t) => {
  const s = setup(t);
  const r = await s.create({ source: 'cron', outcome: 'failed', title: '  nightly backup  ', body: 'exit 2', agent: 'main', source_id: 'cron:backup', status: 'failed' }, 'system');
  const want = {
    id: 'n1',
    title: 'nightly backup',
    body: 'exit 2',
    read: false,
    severity: 'critical',
    type: 'cron',
    agent: 'main',
    status: 'failed',
    source_id: 'cron:backup',
    created_at: '2026-11-22T10:00:00.000Z',
  };
  t.same(r, { persisted: true, notification: want, throttled: false });
  const events = s.log.read();
  t.equal(events.length, 1);
  t.match(events[0], { stream: 'notification:n1', type: 'notification.created', data: want, by: 'system' });

  const minimal = await s.create({ source: 'webhook', outcome: 'success', title: 'hook ok' });
  t.match(minimal.notification, { id: 'n2', body: '', severity: 'info', type: 'webhook', agent: null, status: null, source_id: null });
});

await t.test('empty success bodies are logged only, never persisted', async (t) => {
  const s = setup(t);
  for (const body of ['', ' OK ', 'Done', 'completed', 'success']) {
    t.same(await s.create({ source: 'task', outcome: 'success', title: 'task', body }), { persisted: false });
  }
  t.same(await s.create({ source: 'cron', outcome: 'success', title: 'cron' }), { persisted: false });
  t.equal(s.log.lastSeq(), 0, 'nothing appended');
  t.equal(s.logs.filter((l) => /not persisted/.test(l.msg)).length, 6);
  const silent = await s.create({ source: 'cron', outcome: 'success', title: 'cron', body: 'rotated 3 logs' });
  t.equal(silent.notification?.severity, 'silent');
});

await t.test('the throttle is only logged: repeated warnings are all delivered', async (t) => {
  const s = setup(t);
  const hook = { source: 'webhook', outcome: 'error', title: 'stripe rejected', source_id: 'hook:stripe' };
  const a = await s.create(hook);
  s.advance(59_900);
  const b = await s.create(hook);
  s.advance(60_000);
  const c = await s.create(hook);
  const d = await s.create({ source: 'cron', outcome: 'failed', title: 'x', source_id: 'hook:stripe' });
  const e = await s.create({ source: 'task', outcome: 'success', title: 'y', body: 'real', source_id: 'task:1' });
  t.same([a, b, c, d, e].map((r) => r.throttled), [false, true, false, false, true]);
  t.same([a, b, c, d, e].map((r) => r.persisted), [true, true, true, true, true], 'throttled ones are still persisted');
  t.equal(s.log.lastSeq(), 5);
  const lines = s.logs.filter((l) => l.throttled !== undefined);
  t.same(lines.map((l) => [l.notification, l.throttled]), [['n1', false], ['n2', true], ['n3', false], ['n4', false], ['n5', true]]);
  t.match(lines[1]!.msg, /would be throttled; delivered either way/);
});

await t.test('mark_read: unknown id is not-found; read once publishes, twice returns the state', async (t) => {
  const s = setup(t);
  await s.create({ source: 'webhook', outcome: 'error', title: 'w', source_id: 'h' });
  await t.rejects(s.send('notification.mark_read', { id: 'missing', principal: ANYONE }), { code: 'not-found', message: 'notification "missing" does not exist' });
  const first = await s.send<Notification>('notification.mark_read', { id: 'n1', principal: ANYONE }, 'alice');
  t.equal(first.read, true);
  const read = s.log.read({ types: ['notification.read'] });
  t.match(read, [{ stream: 'notification:n1', data: { id: 'n1' }, by: 'alice' }]);
  const seq = s.log.lastSeq();
  const again = await s.send<Notification>('notification.mark_read', { id: 'n1', principal: ANYONE });
  t.same(again, first);
  t.equal(s.log.lastSeq(), seq, 'no second event');

  // Two racing requests for one id: commands run one at a time, so only one fact.
  await s.create({ source: 'webhook', outcome: 'error', title: 'w2' });
  await Promise.all([s.send('notification.mark_read', { id: 'n2', principal: ANYONE }), s.send('notification.mark_read', { id: 'n2', principal: ANYONE })]);
  t.equal(s.log.read({ types: ['notification.read'] }).length, 2);
});

await t.test('a caller limited to some agents marks only what their list shows', async (t) => {
  const s = setup(t);
  const coderOnly = adminUser('carol', 'admin', ['coder']);
  await s.create({ source: 'webhook', outcome: 'error', title: 'main', agent: 'main' });
  await s.create({ source: 'webhook', outcome: 'error', title: 'coder', agent: 'coder' });
  await s.create({ source: 'system', outcome: 'error', title: 'about no agent' });
  await t.rejects(s.send('notification.mark_read', { id: 'n1', principal: coderOnly }), { code: 'not-found' }, "main's is hidden from them, so absent");
  t.same(await s.send('notification.mark_all_read', { principal: coderOnly }), { ids: ['n2', 'n3'] });
  t.same(listNotifications(s.db).filter((n) => !n.read).map((n) => n.id), ['n1'], "main's stays unread for everyone else");
});

await t.test('mark_all_read: one event naming the unread ones, silent included; none when nothing is unread', async (t) => {
  const s = setup(t);
  await t.resolves(s.send('notification.mark_all_read', { principal: ANYONE }));
  t.equal(s.log.lastSeq(), 0, 'empty: no event');
  await s.create({ source: 'webhook', outcome: 'error', title: 'a' });
  await s.create({ source: 'task', outcome: 'success', title: 'b', body: 'real' });
  await s.create({ source: 'cron', outcome: 'failed', title: 'c' });
  await s.send('notification.mark_read', { id: 'n1', principal: ANYONE });
  t.same(await s.send('notification.mark_all_read', { principal: ANYONE }), { ids: ['n2', 'n3'] });
  t.match(s.log.read({ types: ['notification.all_read'] }), [{ stream: 'notifications', data: { ids: ['n2', 'n3'] } }]);
  const seq = s.log.lastSeq();
  t.same(await s.send('notification.mark_all_read', { principal: ANYONE }), { ids: [] });
  t.equal(s.log.lastSeq(), seq, 'nothing unread: no event');
  t.ok(listNotifications(s.db).every((n) => n.read));
});

await t.test('bad commands are refused with the field named, and change nothing', async (t) => {
  const s = setup(t);
  const ok = { source: 'cron', outcome: 'failed', title: 't' };
  const cases: [unknown, RegExp][] = [
    [undefined, /notification\.create data\.source: /],
    [{ ...ok, source: 'mail' }, /data\.source: must be one of cron, task, webhook, system/],
    [{ ...ok, outcome: 'ok' }, /data\.outcome: must be one of success, failed, error/],
    [{ ...ok, title: '   ' }, /data\.title: must not be empty/],
    [{ ...ok, title: 42 }, /data\.title: must be a string/],
    [{ ...ok, title: 'x'.repeat(501) }, /data\.title: must be at most 500 characters/],
    [{ ...ok, body: { text: 'x' } }, /data\.body: must be a string/],
    [{ ...ok, agent: 7 }, /data\.agent: agent must be a string/],
    [{ ...ok, source_id: 'x'.repeat(201) }, /data\.source_id: source_id must be at most 200 characters/],
    [{ ...ok, severity: 'critical' }, /data\.severity: /],
    ['a string', /notification\.create data: /],
  ];
  for (const [data, message] of cases) {
    await t.rejects(s.send('notification.create', data), { code: 'invalid-command', message }, JSON.stringify(data)?.slice(0, 60));
  }
  await t.rejects(s.send('notification.mark_read', { principal: ANYONE }), { code: 'invalid-command', message: /mark_read data\.id: / });
  await t.rejects(s.send('notification.mark_read', { id: '', principal: ANYONE }), { code: 'invalid-command', message: /data\.id: must not be empty/ });
  await t.rejects(s.send('notification.mark_read', { id: 5, principal: ANYONE }), { code: 'invalid-command', message: /data\.id: must be a string/ });
  await t.rejects(s.send('notification.mark_read', { id: 'x'.repeat(201), principal: ANYONE }), { code: 'invalid-command' });
  await t.rejects(s.send('notification.mark_all_read', { principal: ANYONE, all: true }), { code: 'invalid-command', message: /mark_all_read data\.all: / });
  t.equal(s.log.lastSeq(), 0, 'no event from any of them');
  const after = await s.create(ok);
  t.match(after, { persisted: true, notification: { id: 'n1', severity: 'critical' } }, 'the notifier still works after refusals');
});

await t.test('oversized bodies are cut, not refused', async (t) => {
  const s = setup(t);
  const r = await s.create({ source: 'task', outcome: 'failed', title: 'huge', body: 'e'.repeat(MAX_NOTIFICATION_BODY_CHARS * 3) });
  t.equal(r.notification!.body.length, MAX_NOTIFICATION_BODY_CHARS);
  t.ok(r.notification!.body.endsWith(TRUNCATION_MARK));
  t.equal(listNotifications(s.db)[0]!.body, r.notification!.body);
});

await t.test('a broken id generator is caught before anything is published', async (t) => {
  const seq = ['dup', 'dup', '', 'x'.repeat(201)];
  const s = setup(t, { newId: () => seq.shift()! });
  await s.create({ source: 'cron', outcome: 'failed', title: 'a' });
  await t.rejects(s.create({ source: 'cron', outcome: 'failed', title: 'b' }), { code: 'notification-exists' });
  await t.rejects(s.create({ source: 'cron', outcome: 'failed', title: 'c' }), { code: 'invalid-id' });
  await t.rejects(s.create({ source: 'cron', outcome: 'failed', title: 'd' }), { code: 'invalid-id' });
  t.equal(s.log.lastSeq(), 1);
  t.equal(listNotifications(s.db)[0]!.title, 'a');
});

await t.test('stopping the notifier releases its commands', async (t) => {
  const log = SqliteEventLog.open(join(t.testdir(), 'events.db'), { projections: PROJECTIONS });
  const bus = new Bus({ log, clock: () => T0 });
  t.teardown(() => {
    bus.close();
    log.close();
  });
  const readModel = notificationReadModel(log.projectionDb());
  const sub = startNotifier({ bus, readModel });
  t.throws(() => startNotifier({ bus, readModel }), { code: 'handler-exists' });
  const r = await bus.send(rawCommand<{ notification: Notification }>('notification.create'), { source: 'system', outcome: 'success', title: 'hi' });
  t.match(r.notification.id, /^[0-9a-f-]{36}$/, 'default ids are UUIDs');
  sub.unsubscribe();
  await t.rejects(bus.send(rawCommand('notification.create'), {}), { code: 'no-handler' });
  t.doesNotThrow(() => startNotifier({ bus, readModel }).unsubscribe());
});
