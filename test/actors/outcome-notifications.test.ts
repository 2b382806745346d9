// Outcome facts → notifications, seen the way the panel sees them: the real notifier and outcome
// actor on a SQLite log, the admin surface on a real uWS server, `ws` clients of several people.
import t from 'tap';
import { startNotifier, startOutcomeNotifications } from '../../actors/index.js';
import { NOTIFICATION_EVENTS } from '../../schemas/index.js';
import { notificationReadModel, tasksReadModel } from '../../store/index.js';
import { serveAdminChat } from '../fixtures/admin-chat.js';
import { openAdminSocket, type AdminSocketClient } from '../fixtures/admin-socket-client.js';

async function stand(t: Parameters<typeof serveAdminChat>[0] & { teardown(fn: () => void): void }) {
  const s = await serveAdminChat(t);
  let n = 0;
  const notifier = startNotifier({ bus: s.bus, readModel: notificationReadModel(s.log.projectionDb()), newId: () => `n${++n}` });
  const outcomes = startOutcomeNotifications({ bus: s.bus, tasks: tasksReadModel(s.log.projectionDb()) });
  const clients: AdminSocketClient[] = [];
  t.teardown(() => {
    for (const c of clients) c.ws.terminate();
    outcomes.unsubscribe();
    notifier.unsubscribe();
  });
  const login = async (as: string) => {
    const c = await openAdminSocket(s.port, { authorization: `Bearer as:${as}` });
    clients.push(c);
    c.send({ type: 'auth', token: `as:${as}` });
    await c.next((f) => f.type === 'auth_ok');
    return c;
  };
  /** Resolves once the notifier has recorded `count` notifications in all. */
  const created = (count: number) =>
    new Promise<void>((resolve) => {
      const check = () => s.log.read({ types: [NOTIFICATION_EVENTS.created] }).length >= count;
      if (check()) return resolve();
      const sub = s.bus.events$.subscribe(() => {
        if (check()) {
          sub.unsubscribe();
          resolve();
        }
      });
    });
  return { ...s, login, created };
}

await t.test('task, cron and webhook outcomes reach the bell, the unread count and each socket allowed to see the agent', async (t) => {
  const s = await stand(t);
  const admin = await s.login('admin');
  const anna = await s.login('anna'); // operator limited to `coder`
  const bob = await s.login('bob'); // operator, every agent

  await s.bus.publish({
    stream: 'task:t1', type: 'task.created',
    data: { task_id: 't1', name: 'Refactor parser', parent_agent: 'main', agent: 'coder', transport: 'internal', chat_id: 0, topic_id: null, caller_user: null, prompt: 'p', provider: null, model: null, created_at: 1 },
  });
  await s.bus.publish({ stream: 'task:t1', type: 'task.failed', data: { reason: 'exit-code', result: 'compiler crashed', provider: null, model: null, session_id: null, at: 2 } });
  await s.created(1);
  for (const c of [admin, anna, bob]) {
    t.match(await c.next((f) => f.type === 'notification'), { type: 'notification', data: { id: 'n1', title: 'Task "Refactor parser" (t1) failed: exit-code', body: 'compiler crashed', severity: 'critical', type: 'task', agent: 'coder', read: false } });
  }

  await s.bus.publish({ stream: 'cron:daily', type: 'cron.run_finished', data: { id: 'daily', agent: 'main', fire_id: 'daily@x', run_id: null, status: 'error:exit_1', duration_ms: 5, result: 'no disk', deliver: true, name: 'Daily digest' } });
  await s.bus.publish({ stream: 'cron:daily', type: 'cron.run_finished', data: { id: 'daily', agent: 'main', fire_id: 'daily@y', run_id: null, status: 'success', duration_ms: 5, result: 'done', deliver: true, name: 'Daily digest' } });
  await s.bus.publish({ stream: 'cron:daily', type: 'cron.run_finished', data: { id: 'daily', agent: 'main', fire_id: 'daily@z', run_id: null, status: 'success', duration_ms: 5, result: '3 new issues', deliver: true, name: 'Daily digest' } });
  await s.bus.publish({ stream: 'webhook:gh', type: 'webhook.completed', data: { id: 'gh', agent: 'main', mode: 'wake', request_id: 'r1', status: 'completed', turn_id: 'u1', task_id: null } });
  await s.bus.publish({ stream: 'webhook:gh', type: 'webhook.failed', data: { id: 'gh', agent: 'main', mode: 'wake', request_id: 'r2', reason: 'turn-failed', error: 'the turn ended failed' } });
  await s.created(5);

  // The read model GET /api/notifications answers from (its routes: test/edges/notifications.test.ts).
  const bell = notificationReadModel(s.log.projectionDb());
  const list = bell.list();
  t.same(
    list.map((n) => [n.severity, n.type, n.title]),
    [
      ['warning', 'webhook', 'Webhook gh failed'],
      ['info', 'webhook', 'Webhook gh called'],
      ['silent', 'cron', 'Cron job "Daily digest" (daily) finished'],
      ['critical', 'cron', 'Cron job "Daily digest" (daily) failed: error:exit_1'],
      ['critical', 'task', 'Task "Refactor parser" (t1) failed: exit-code'],
    ],
    'newest first; the success whose body is only "done" was not kept',
  );
  t.equal(bell.unreadCount(), 4, 'the silent one does not count');
  t.equal(bell.unreadCount(['coder']), 1, "anna's count: coder's only");

  for (const c of [admin, bob]) {
    await c.next((f) => f.type === 'notification' && f.data.type === 'webhook' && f.data.severity === 'warning');
    t.same(c.frames.filter((f) => f.type === 'notification').map((f) => f.data.id), ['n1', 'n2', 'n3', 'n4', 'n5'], 'every notification, once');
  }
  t.same(anna.frames.filter((f) => f.type === 'notification').map((f) => f.data.id), ['n1'], "anna's socket gets coder's notification and none of main's");
});
