// Every outcome reaches a person, end to end on the real daemon with the fake CLIs: a task and a
// cron job told to fail raise critical notifications an open `/ws/admin` socket receives and the
// bell lists; a wake webhook with no chat of its own, and a cron job routed to a Telegram chat
// (no messenger runs in this build), have their answers put in main's admin chat, and the log
// records where each went and why.
import t from 'tap';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { prepareCronJobFolder } from '../../actors/index.js';
import { startDaemon } from '../../bin/daemon.js';
import { AUTOMATION_EVENTS, CHAT_DELIVERY_EVENTS, CRON_COMMANDS, type CronJobRecord, type Principal } from '../../schemas/index.js';
import { homePaths, saveCronJobs } from '../../store/index.js';
import { openAdminSocket, type Frame } from '../fixtures/admin-socket-client.js';
import { connectDirect } from '../fixtures/direct-socket-client.js';
import { tempHome } from '../fixtures/temp-home.js';
import { until } from './cli-helpers.js';

const BIN = fileURLToPath(new URL('../fixtures/bin', import.meta.url));
const API_TOKEN = 'e2e-static-token-0123456789abcdef';
const HOOK_TOKEN = 'h'.repeat(40);
const ADMIN: Principal = { kind: 'system', id: null, acting_for: null, role: 'admin', allowed_agents: [], origin: { transport: 'internal', chat_id: null, topic_id: null } };

async function boot(t: Parameters<typeof tempHome>[0]) {
  const scratch = tempHome(t);
  const root = join(scratch.dir, 'home');
  mkdirSync(join(root, 'config'), { recursive: true });
  writeFileSync(
    join(root, 'config', 'config.json'),
    JSON.stringify({ api: { enabled: true, host: '127.0.0.1', port: 0, token: API_TOKEN }, webhooks: { enabled: true, host: '127.0.0.1', token: HOOK_TOKEN } }),
  );
  const paths = homePaths(root);
  const jobs = [
    { id: 'nightly', title: 'Nightly build', schedule: '0 0 1 1 *', agent: 'main', enabled: true, description: '[[fail]] build it' },
    { id: 'tg-report', title: 'Telegram report', schedule: '0 0 1 1 *', agent: 'main', enabled: true, description: 'report', transport: 'telegram', chat_id: 4242 },
    { id: 'api-report', title: 'API report', schedule: '0 0 1 1 *', agent: 'main', enabled: true, description: 'api report', transport: 'api', chat_id: 77 },
  ];
  saveCronJobs(paths, jobs as unknown as CronJobRecord[]);
  for (const j of jobs) prepareCronJobFolder(paths, j.id);
  writeFileSync(join(root, 'webhooks.json'), JSON.stringify([{ id: 'ping', agent: 'main', name: 'Ping', enabled: true, prompt_template: 'ping {{n}}' }]));
  const d = await startDaemon({ paths, logToStderr: false, internalPort: 0, apiPort: 0, webhookPort: 0, killGraceMs: 300, env: { PATH: `${BIN}:${process.env.PATH}`, HOME: root } });
  scratch.beforeRemove(() => d.stop('test'));
  const api = async (path: string) => {
    const r = await fetch(`http://127.0.0.1:${d.apiPort}${path}`, { headers: { authorization: `Bearer ${API_TOKEN}`, connection: 'close' } });
    return { status: r.status, body: (await r.json()) as any };
  };
  const mainToken = (JSON.parse(readFileSync(paths.mainAgentTokenFile, 'utf8')) as { token: string }).token;
  const internal = async (path: string, body: unknown) => {
    const r = await fetch(`http://127.0.0.1:${d.internalPort}${path}`, {
      method: 'POST',
      headers: { connection: 'close', 'content-type': 'application/json', authorization: `Bearer ${mainToken}` },
      body: JSON.stringify(body),
    });
    return { status: r.status, body: (await r.json()) as any };
  };
  const socket = await openAdminSocket(d.apiPort!, { authorization: `Bearer ${API_TOKEN}` });
  t.teardown(() => socket.ws.terminate());
  socket.send({ type: 'auth', token: API_TOKEN });
  await socket.next((f) => f.type === 'auth_ok');
  return { d, api, internal, socket };
}

await t.test('a failed task and a failed cron job each raise a critical notification that reaches an open /ws/admin socket', async (t) => {
  const { d, api, internal, socket } = await boot(t);
  const direct = await connectDirect(d.apiPort!, API_TOKEN);
  t.teardown(() => direct.ws.terminate());

  const created = await internal('/tasks/create', { from: 'main', name: 'Flaky migration', prompt: '[[fail]] migrate' });
  t.equal(created.status, 200, JSON.stringify(created.body));
  const taskId = created.body.task_id as string;
  const taskNote = await socket.next((f: Frame) => f.type === 'notification' && f.data.type === 'task');
  t.match(taskNote.data, { title: `Task "Flaky migration" (${taskId}) failed: exit-code`, severity: 'critical', read: false, agent: 'main', source_id: taskId });
  t.same((await direct.next('notification')).notification, { id: taskNote.data.id, title: taskNote.data.title, body: taskNote.data.body, read: false }, 'the direct API socket gets it too');

  t.same(await d.bus.send(CRON_COMMANDS.run, { principal: ADMIN, id: 'nightly' }), { started: true });
  const cronNote = await socket.next((f: Frame) => f.type === 'notification' && f.data.type === 'cron');
  t.match(cronNote.data, { title: 'Cron job "Nightly build" (nightly) failed: error:exit_1', severity: 'critical', agent: 'main', source_id: 'nightly' });

  const bell = await api('/api/notifications?severity=critical');
  t.equal(bell.status, 200);
  t.same(bell.body.map((n: Frame) => n.id).sort(), [taskNote.data.id, cronNote.data.id].sort(), 'both are in the bell');
  t.ok((await api('/api/notifications/unread-count')).body.count >= 2, 'and count as unread');

  const feed = await fetch(`http://127.0.0.1:${d.apiPort}/api/activity/recent?limit=50`, { headers: { authorization: `Bearer ${API_TOKEN}`, 'accept-language': 'en', connection: 'close' } });
  const events = (await feed.json()) as Frame[];
  t.match(events.find((e) => e.type === 'agent_started'), { title: 'Agent started: main', agent_name: 'main', severity: 'info' }, 'the feed shows the agent starting');
  t.match(events.find((e) => e.type === 'task_failed'), { title: /^Task failed: Task "Flaky migration"/, severity: 'error' });
  t.match(events.find((e) => e.type === 'cron_failed'), { title: /^Scheduled job failed: Cron job "Nightly build"/ });
});

await t.test('nothing computed is dropped: a wake with no chat and a cron result for a Telegram chat go to the admin chat, and the log says where', async (t) => {
  const { d, api, socket } = await boot(t);

  const res = await fetch(`http://127.0.0.1:${d.webhookPort}/hooks/ping`, {
    method: 'POST',
    headers: { connection: 'close', 'content-type': 'application/json', authorization: `Bearer ${HOOK_TOKEN}` },
    body: JSON.stringify({ n: 7 }),
  });
  t.equal(res.status, 202);
  const rerouted = (source: string) => d.log.read({ types: [CHAT_DELIVERY_EVENTS.delivery_rerouted] }).find((e) => e.data.source === source);
  const wake = await until('the wake answer to be rerouted', () => rerouted('webhook:ping'), 20_000);
  // The hook names no chat: the main chat of the configured transport (telegram), chat 1 with no allowed users.
  t.match(wake.data, { transport: 'telegram', chat_id: 1, agent: 'main', to: 'admin', reason: /transport telegram is not running/ });
  const hookNote = await socket.next((f: Frame) => f.type === 'notification' && f.data.type === 'webhook');
  t.match(hookNote.data, { title: 'Webhook "Ping" (ping) called', severity: 'info' }, 'and its notification');

  t.same(await d.bus.send(CRON_COMMANDS.run, { principal: ADMIN, id: 'tg-report' }), { started: true });
  const report = await until('the cron result to be rerouted', () => rerouted('cron:tg-report'), 20_000);
  t.match(report.data, { transport: 'telegram', chat_id: 4242, to: 'admin' });
  const delivered = await until('the cron delivery fact', () => d.log.read({ stream: 'cron:tg-report', types: [AUTOMATION_EVENTS.delivered] })[0]);
  t.match(delivered.data, { attempt: 1, to: 'admin' }, 'delivered on the first attempt, to the admin chat');
  t.same(d.log.read({ stream: 'cron:tg-report', types: [AUTOMATION_EVENTS.delivery_failed] }), [], 'no failed attempts');

  const sessions = await api('/api/chat/sessions?agent=main');
  t.equal(sessions.status, 200);
  const session = sessions.body.find((s: Frame) => s.id === wake.data.session_id);
  t.ok(session, 'the session the fact names is main’s admin chat');
  const messages = (await api(`/api/chat/sessions/${session.id}/messages`)).body as Frame[];
  t.match(
    messages.find((m) => m.meta?.source === 'webhook:ping'),
    { sender: 'agent', content: /^echo: .*ping 7/s, meta: { rerouted_from: { transport: 'telegram', chat_id: 1 } } },
    'the wake answer is in the admin chat',
  );
  t.match(messages.find((m) => m.meta?.source === 'cron:tg-report'), { content: /^TASK: Telegram report\n\necho: report/, meta: { rerouted_from: { transport: 'telegram', chat_id: 4242 } } }, 'so is the cron result');
});

await t.test('the direct API keeps no history: a result for a chat with no connection open goes to the admin chat; an open one gets it live', async (t) => {
  const { d, api } = await boot(t);
  const rerouted = () => d.log.read({ types: [CHAT_DELIVERY_EVENTS.delivery_rerouted] }).filter((e) => e.data.source === 'cron:api-report');
  const delivered = (n: number) => until(`cron delivery ${n}`, () => d.log.read({ stream: 'cron:api-report', types: [AUTOMATION_EVENTS.delivered] })[n - 1]);

  t.same(await d.bus.send(CRON_COMMANDS.run, { principal: ADMIN, id: 'api-report' }), { started: true });
  t.match((await delivered(1)).data, { to: 'admin' }, 'nobody had chat 77 open');
  t.match(rerouted(), [{ data: { transport: 'api', chat_id: 77, to: 'admin', reason: 'no api connection of that chat is open' } }]);
  const session = (await api('/api/chat/sessions?agent=main')).body.find((s: Frame) => s.id === rerouted()[0]!.data.session_id);
  const messages = (await api(`/api/chat/sessions/${session.id}/messages`)).body as Frame[];
  t.match(messages.find((m) => m.meta?.source === 'cron:api-report'), { content: /^TASK: API report\n\necho: api report/ }, 'the result is in the admin chat');

  const direct = await connectDirect(d.apiPort!, API_TOKEN, 77);
  t.teardown(() => direct.ws.terminate());
  t.same(await d.bus.send(CRON_COMMANDS.run, { principal: ADMIN, id: 'api-report' }), { started: true });
  t.match(await direct.next('result', /^TASK: API report/), { type: 'result', stream_fallback: false }, 'an open chat 77 gets it live');
  t.match((await delivered(2)).data, { to: 'api' });
  t.equal(rerouted().length, 1, 'and nothing more was rerouted');
});
