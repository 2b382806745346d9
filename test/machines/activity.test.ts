import t from 'tap';
import {
  activityFromAgentFact,
  activityFromAudit,
  activityFromCronJob,
  activityFromTask,
  activityTitle,
  activityVisibleTo,
  collectActivity,
  describeActivity,
  failedSince,
  filterActivity,
  humanUptime,
  looksLikeCode,
  relativeTime,
  type ActivityItem,
} from '../../machines/index.js';
import { pickLanguage, type Notification, type Principal, type TaskRecord } from '../../schemas/index.js';

const NOW = Date.parse('2026-11-22T10:00:00.000Z');
const principal = (role: Principal['role'], allowed_agents: string[] = []): Principal => ({
  kind: 'user',
  id: 'u',
  acting_for: null,
  role,
  allowed_agents,
  origin: { transport: 'admin', chat_id: null, topic_id: null },
});
const item = (over: Partial<ActivityItem>): ActivityItem => ({ id: 'x', type: 'task_failed', agent: 'coder', at: NOW, severity: 'error', subject: null, source: 'tasks', raw: null, ...over });
const note = (over: Partial<Notification>): Notification => ({
  id: 'n1',
  title: 'Job',
  body: '',
  read: false,
  severity: 'critical',
  type: 'cron',
  agent: 'coder',
  status: 'failed',
  source_id: null,
  created_at: new Date(NOW).toISOString(),
  ...over,
});
const task = (over: Partial<TaskRecord>): TaskRecord => ({
  task_id: 't',
  status: 'done',
  name: 'Job',
  parent_agent: 'coder',
  agent: null,
  provider: null,
  model: null,
  prompt: null,
  description: null,
  result: null,
  created_at: NOW / 1000 - 100,
  finished_at: null,
  elapsed_seconds: null,
  ...over,
});

await t.test('Accept-Language: ru default, en, uk as ru, q-values, garbage', async (t) => {
  const cases: [string | undefined, string][] = [
    [undefined, 'ru'],
    ['', 'ru'],
    ['en', 'en'],
    ['en-GB,en;q=0.8', 'en'],
    ['uk-UA', 'ru'],
    ['de, en;q=0.5', 'en'],
    ['ru;q=0.1, en;q=0.9', 'en'],
    ['en;q=0, ru', 'ru'],
    ['fr', 'ru'],
    [';;;,,,q=', 'ru'],
    ['*', 'ru'],
  ];
  for (const [header, lang] of cases) t.equal(pickLanguage(header), lang, JSON.stringify(header));
});

await t.test('titles: localised per type, fallback for unknown types, machine codes never shown', async (t) => {
  t.equal(activityTitle({ type: 'task_completed', subject: 'Deploy' }, 'en'), 'Task completed: Deploy');
  t.equal(activityTitle({ type: 'task_completed', subject: 'Deploy' }, 'ru'), 'Задача выполнена: Deploy');
  t.equal(activityTitle({ type: 'brand_new_type', subject: null }, 'ru'), 'Событие');
  t.equal(activityTitle({ type: 'brand_new_type', subject: null }, 'en'), 'Event');
  for (const code of ['task.failed', 'cron_failed', 'ECONNRESET', 'config.reload_failed', ' a.b ']) {
    t.ok(looksLikeCode(code), code);
    t.equal(activityTitle({ type: 'task_failed', subject: code }, 'en'), 'Task failed', `${code} left out`);
  }
  for (const words of ['Nightly backup', 'daily-report', 'Отчёт', 'v2 rollout', 'E2E']) t.notOk(looksLikeCode(words), words);
  t.equal(activityTitle({ type: 'cron_fired', subject: 'x'.repeat(500) }, 'en').length, 'Scheduled job ran: '.length + 200, 'subjects are capped');
});

await t.test('relative time and uptime in ru and en', async (t) => {
  t.equal(relativeTime(NOW - 5_000, NOW, 'ru'), 'только что');
  t.equal(relativeTime(NOW + 5_000, NOW, 'en'), 'just now', 'a clock skew into the future is "now"');
  t.equal(relativeTime(NOW - 5 * 60_000, NOW, 'en'), '5 min ago');
  t.equal(relativeTime(NOW - 3 * 3_600_000, NOW, 'ru'), '3 ч назад');
  t.equal(relativeTime(NOW - 2 * 86_400_000, NOW, 'en'), '2 d ago');
  t.equal(humanUptime(42, 'en'), '42s');
  t.equal(humanUptime(42, 'ru'), '42 с');
  t.equal(humanUptime(3 * 3600 + 60, 'en'), '3h 1m');
  t.equal(humanUptime(86_400, 'ru'), '1 д 0 ч 0 мин');
  t.equal(humanUptime(-5, 'en'), '0s');
  const e = describeActivity(item({ agent: null }), NOW, 'en');
  t.equal(e.subtitle, 'just now', 'subtitle is a string even without an agent');
  t.notOk('raw' in e);
});

await t.test('sources: tasks, cron jobs, notifications and sign-ins become events; duplicates and undated records are dropped', async (t) => {
  t.match(activityFromTask(task({ status: 'failed', elapsed_seconds: 40 })), { type: 'task_failed', severity: 'error', at: NOW - 60_000 });
  t.match(activityFromTask(task({ status: 'cancelled', finished_at: NOW / 1000 })), { type: 'task_failed', severity: 'warning', at: NOW });
  t.equal(activityFromTask(task({ status: 'running' })), null, 'a running task is a counter, not an event');
  t.equal(activityFromTask(task({ created_at: null })), null);
  t.match(activityFromCronJob({ id: 'j', title: 'J', schedule: '@daily', agent: 'a', enabled: true, description: '', last_run_at: '2026-11-22T09:00:00Z' }), { type: 'cron_fired', severity: 'success', at: NOW - 3_600_000 });
  t.match(activityFromCronJob({ id: 'j', title: 'J', schedule: '@daily', agent: 'a', enabled: true, description: '', last_run_at: NOW / 1000, last_error: 'boom' }), { type: 'cron_failed' });
  t.equal(activityFromCronJob({ id: 'j', title: 'J', schedule: '@daily', agent: 'a', enabled: true, description: '', last_run_at: 'soon' }), null);
  const login = { id: 7, timestamp: new Date(NOW).toISOString(), actor: 'ann', action: 'auth.login', target: null, status: 200, ip: null, detail: null };
  t.match(activityFromAudit(login), { id: 'audit:7', type: 'auth_login', severity: 'info', subject: 'ann' });
  t.match(activityFromAudit({ ...login, action: 'auth.login_failed', status: 401 }), { severity: 'warning' });
  t.equal(activityFromAudit({ ...login, action: 'DELETE /api/cron/:id' }), null, 'admin actions stay in /api/audit');

  const all = collectActivity({
    notifications: [note({ id: 'n1', type: 'task', source_id: 't1', created_at: new Date(NOW - 1000).toISOString() }), note({ id: 'n2', created_at: 'garbage' })],
    tasks: [task({ task_id: 't1', status: 'failed' }), task({ task_id: 't2', finished_at: NOW / 1000 })],
    cronJobs: [],
    audit: [],
  });
  t.same(all.map((i) => i.id), ['tasks:t2', 'notifications:n1'], 'newest first; t1 is reported by its notification; an undated notification is dropped');
});

await t.test('visibility, severity filter with the ack cutoff, failed_last_24h', async (t) => {
  const coder = item({ agent: 'coder' });
  const none = item({ agent: null });
  const signIn = item({ source: 'audit', agent: null });
  t.ok(activityVisibleTo(principal('viewer'), none), 'unrestricted users see agentless events');
  t.notOk(activityVisibleTo(principal('viewer', ['writer']), coder));
  t.ok(activityVisibleTo(principal('viewer', ['coder']), coder));
  t.notOk(activityVisibleTo(principal('admin', ['coder']), none), 'restricted users do not see agentless events');
  t.ok(activityVisibleTo(principal('admin', ['*']), signIn), 'sign-ins: unrestricted admins');
  t.notOk(activityVisibleTo(principal('operator'), signIn));
  t.notOk(activityVisibleTo(principal('admin', ['coder']), signIn));

  const items = [item({ id: 'e1', at: NOW - 10_000 }), item({ id: 'e2', at: NOW - 30 * 3_600_000 }), item({ id: 'w', severity: 'warning', at: NOW - 20_000 })];
  const ack = (NOW - 15_000) / 1000;
  t.same(filterActivity(items, { severity: null, errorsAckAt: ack }).map((i) => i.id), ['e1', 'e2', 'w'], 'no filter: the ack hides nothing');
  t.same(filterActivity(items, { severity: ['error'], errorsAckAt: ack }).map((i) => i.id), ['e1']);
  t.same(filterActivity(items, { severity: ['error'], errorsAckAt: null }).map((i) => i.id), ['e1', 'e2']);
  t.same(filterActivity(items, { severity: ['warning', 'error'], errorsAckAt: ack }).map((i) => i.id), ['e1', 'w'], 'the ack hides errors only');
  t.equal(failedSince(items, NOW, null), 1, '24 h window');
  t.equal(failedSince(items, NOW, (NOW - 5_000) / 1000), 0, 'an ack later than now − 24 h moves the cutoff');
  t.equal(failedSince(items, NOW, (NOW - 40 * 3_600_000) / 1000), 1, 'an older ack does not widen the window');
});

await t.test('the feed shows webhook_called (from webhook notifications), agent_started and agent_stopped, with localised titles', async (t) => {
  const started = { seq: 11, type: 'agent.started', at: new Date(NOW - 2000).toISOString(), data: { name: 'coder', is_main: false, provider: 'claude', model: 'opus', workspace: '/w' } };
  const stopped = { seq: 12, type: 'agent.stopped', at: new Date(NOW - 1000).toISOString(), data: { name: 'coder', reason: 'removed' } };
  t.match(activityFromAgentFact(started), { id: 'agents:11', type: 'agent_started', agent: 'coder', severity: 'info', source: 'agents', at: NOW - 2000 });
  t.match(activityFromAgentFact(stopped), { id: 'agents:12', type: 'agent_stopped', agent: 'coder' });
  t.equal(activityFromAgentFact({ ...stopped, at: 'never' }), null, 'an undated fact is dropped');
  t.equal(activityFromAgentFact({ ...stopped, type: 'agent.crashed' }), null);

  const items = collectActivity({
    notifications: [note({ id: 'w1', type: 'webhook', severity: 'info', status: 'success', title: 'Webhook "GitHub" (gh) called', source_id: 'gh', created_at: new Date(NOW - 3000).toISOString() })],
    tasks: [],
    cronJobs: [],
    audit: [],
    agents: [started, stopped],
  });
  t.same(items.map((i) => i.type), ['agent_stopped', 'agent_started', 'webhook_called']);
  t.same(items.map((i) => describeActivity(i, NOW, 'en').title), ['Agent stopped: coder', 'Agent started: coder', 'Webhook called: Webhook "GitHub" (gh) called']);
  t.same(items.map((i) => describeActivity(i, NOW, 'ru').title), ['Агент остановлен: coder', 'Агент запущен: coder', 'Вызван вебхук: Webhook "GitHub" (gh) called']);
  t.same(items.filter((i) => activityVisibleTo(principal('operator', ['main']), i)), [], "an operator limited to main sees none of coder's events");
});
