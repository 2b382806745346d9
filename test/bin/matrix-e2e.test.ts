// The real daemon (fake CLIs) with `transports: ["telegram", "matrix"]`: both run side by side, a person in an
// encrypted Matrix room and one on Telegram each chat with the agent, a cron job routed to the Matrix room has its
// result said there, and the Matrix session and keys are kept, private, under the home for the next start.
import t from 'tap';
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MsgType } from 'matrix-js-sdk';
import { prepareCronJobFolder } from '../../actors/index.js';
import { startDaemon } from '../../bin/daemon.js';
import { statusCommand } from '../../bin/status-command.js';
import { CRON_COMMANDS, SYSTEM_COMMANDS, matrixChatId, type CronJobRecord, type Principal } from '../../schemas/index.js';
import { homePaths, saveCronJobs, type HomePaths } from '../../store/index.js';
import { startFakeMatrix, unrefSdkRequestTimers } from '../fixtures/fake-matrix.js';
import { startFakeTelegram } from '../fixtures/fake-telegram.js';
import { knowsDevice, messagesFrom, quietSdkConsole, startMatrixClient } from '../fixtures/matrix-client.js';
import { tempHome } from '../fixtures/temp-home.js';
import { until } from '../fixtures/until.js';

t.teardown(quietSdkConsole());
t.teardown(unrefSdkRequestTimers());

const BIN = fileURLToPath(new URL('../fixtures/bin', import.meta.url));
const ALICE_TG = 4242;
const ADMIN: Principal = { kind: 'system', id: null, acting_for: null, role: 'admin', allowed_agents: [], origin: { transport: 'internal', chat_id: null, topic_id: null } };

function status(paths: HomePaths): string {
  let out = '';
  statusCommand([], paths, Date.now(), (s) => (out += s));
  return out;
}

await t.test('Telegram and Matrix run at once; an encrypted Matrix room chats with the agent and gets a cron result', async (t) => {
  const tg = await startFakeTelegram();
  const mx = await startFakeMatrix();
  t.teardown(async () => {
    await tg.close();
    await mx.close();
  });
  const bot = mx.registerUser('svcbot', 'bot-pw');
  const alice = mx.registerUser('alice', 'alice-pw');
  const room = mx.createRoom(alice, { encrypted: true, members: [alice, bot], name: 'alice and svc' });
  const aliceClient = await startMatrixClient(mx, 'alice', 'alice-pw');
  t.teardown(() => aliceClient.stopClient());

  const scratch = tempHome(t);
  const root = join(scratch.dir, 'home');
  mkdirSync(join(root, 'config'), { recursive: true });
  writeFileSync(
    join(root, 'config', 'config.json'),
    JSON.stringify({
      transports: ['telegram', 'matrix'],
      telegram_token: tg.token,
      telegram_api_root: tg.apiRoot,
      allowed_user_ids: [ALICE_TG],
      matrix: { homeserver: mx.baseUrl, user_id: bot, password: 'bot-pw', allowed_users: [alice] },
      streaming: { min_chars: 1, edit_interval_seconds: 0.2 },
    }),
  );
  const paths = homePaths(root);
  saveCronJobs(paths, [{ id: 'report', title: 'Daily report', schedule: '0 0 1 1 *', agent: 'main', enabled: true, description: 'summarise the day', transport: 'matrix', chat_id: matrixChatId(room) }] as unknown as CronJobRecord[]);
  prepareCronJobFolder(paths, 'report');
  const d = await startDaemon({ paths, logToStderr: false, internalPort: 0, killGraceMs: 300, env: { PATH: `${BIN}:${process.env.PATH}`, HOME: root } });
  scratch.beforeRemove(() => d.stop('test'));

  await until(() => `both transports to run: ${status(paths)}`, () => /transport {3}telegram {6}running/.test(status(paths)) && /transport {3}matrix {8}running: as @svcbot/.test(status(paths)), 30_000);
  const summary = await d.bus.send(SYSTEM_COMMANDS.summary, { principal: ADMIN, lang: 'en' });
  t.match(summary.transports.map((x) => [x.name, x.state]).sort(), [['admin', 'running'], ['matrix', 'running'], ['telegram', 'running']], 'the dashboard shows both beside the admin chat');

  const store = join(root, 'matrix_store');
  const creds = JSON.parse(readFileSync(join(store, 'credentials.json'), 'utf8')) as { device_id: string; access_token: string };
  t.equal(statSync(join(store, 'credentials.json')).mode & 0o777, 0o600);
  await knowsDevice(aliceClient, bot, creds.device_id);

  await aliceClient.sendMessage(room, { msgtype: MsgType.Text, body: 'hello from matrix' });
  tg.userMessage({ from: { id: ALICE_TG, first_name: 'Alice' }, text: 'hello from telegram' });
  const saysInRoom = (text: string) => until(`the room to show ${text}`, async () => (await messagesFrom(aliceClient, room, bot)).some((e) => String(e.getContent().body).includes(text)), 30_000);
  await saysInRoom('echo: hello from matrix');
  await tg.waitForCall('the Telegram answer', () => tg.chatMessages(ALICE_TG).some((m) => m.text.includes('echo: hello from telegram')));

  await d.bus.send(CRON_COMMANDS.run, { id: 'report', principal: ADMIN });
  await saysInRoom('summarise the day');
  t.notOk(JSON.stringify(mx.roomEvents(room)).includes('summarise'), 'the server saw only ciphertext');

  await d.stop('test');
  t.equal(statSync(join(store, 'crypto.bin')).mode & 0o777, 0o600, 'the keys are kept, private, for the next start');
  t.equal(mx.requests.filter((q) => q.path.endsWith('/login') && q.method === 'POST' && q.status === 200).length, 2, 'the bot logged in once (alice once)');
});

await t.test("a sub-agent's own Matrix account runs with the agent, keeps its session under the agent's home, and answers as that agent", async (t) => {
  const mx = await startFakeMatrix();
  t.teardown(() => mx.close());
  const mainBot = mx.registerUser('svcbot', 'bot-pw');
  const coderBot = mx.registerUser('coderbot', 'coder-pw');
  const alice = mx.registerUser('alice', 'alice-pw');
  const room = mx.createRoom(alice, { encrypted: true, members: [alice, coderBot], name: 'alice and coder' });
  const aliceClient = await startMatrixClient(mx, 'alice', 'alice-pw');
  t.teardown(() => aliceClient.stopClient());

  const scratch = tempHome(t);
  const root = join(scratch.dir, 'home');
  mkdirSync(join(root, 'config'), { recursive: true });
  mkdirSync(join(root, '_secrets'), { recursive: true, mode: 0o700 });
  writeFileSync(join(root, 'config', 'config.json'), JSON.stringify({ transports: ['matrix'], matrix: { homeserver: mx.baseUrl, user_id: mainBot, password: 'bot-pw', allowed_users: [alice] }, streaming: { min_chars: 1 } }));
  const paths = homePaths(root);
  writeFileSync(paths.agentsRegistry, JSON.stringify([{ name: 'coder', transport: 'matrix', matrix: { homeserver: mx.baseUrl, user_id: coderBot, password: 'coder-pw', allowed_users: [alice] } }]));
  const d = await startDaemon({ paths, logToStderr: false, internalPort: 0, killGraceMs: 300, env: { PATH: `${BIN}:${process.env.PATH}`, HOME: root } });
  scratch.beforeRemove(() => d.stop('test'));

  await until(() => `both accounts to run:\n${status(paths)}`, () => /matrix \(coder\) running: as @coderbot/.test(status(paths)) && /matrix {8}running: as @svcbot/.test(status(paths)), 30_000);
  const coderStore = join(root, 'agents', 'coder', 'matrix_store', 'credentials.json');
  const creds = JSON.parse(readFileSync(coderStore, 'utf8')) as { device_id: string };
  t.equal(statSync(coderStore).mode & 0o777, 0o600, "the sub-agent's session is kept under its own home");
  await knowsDevice(aliceClient, coderBot, creds.device_id);

  await aliceClient.sendMessage(room, { msgtype: MsgType.Text, body: 'review this' });
  await until('coder to answer', async () => (await messagesFrom(aliceClient, room, coderBot)).some((e) => String(e.getContent().body).includes('echo: review this')), 30_000);
  const turn = d.log.read({ types: ['turn.started'] }).map((e) => e.data as { agent: string; session_key: string }).find((x) => x.session_key === `matrix:${matrixChatId(room)}`);
  t.equal(turn?.agent, 'coder', 'the turn ran on the sub-agent');

  writeFileSync(paths.agentsRegistry, JSON.stringify([]));
  await until("coder's account to stop with the agent", () => /matrix \(coder\) stopped/.test(status(paths)), 20_000);
  t.match(status(paths), /matrix {8}running/, "main's account runs on");
});
