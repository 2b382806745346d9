// A person on Telegram talks to the real daemon (fake CLIs, a fake Bot API on loopback): the agent's
// answer arrives in their chat, a voice note goes through the transcription chain, a cron job routed to that chat has its result said there, and so
// does main's reply to a task delegated from it.
import t from 'tap';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { prepareCronJobFolder } from '../../actors/index.js';
import { startDaemon } from '../../bin/daemon.js';
import { statusCommand } from '../../bin/status-command.js';
import { CHAT_DELIVERY_COMMANDS, CHAT_DELIVERY_EVENTS, CRON_COMMANDS, SYSTEM_COMMANDS, type CronJobRecord, type Principal } from '../../schemas/index.js';
import { homePaths, saveCronJobs, type HomePaths } from '../../store/index.js';
import { startFakeTelegram } from '../fixtures/fake-telegram.js';
import { tempHome } from '../fixtures/temp-home.js';
import { until } from '../fixtures/until.js';

const BIN = fileURLToPath(new URL('../fixtures/bin', import.meta.url));
const ALICE = 4242;
const ADMIN: Principal = { kind: 'system', id: null, acting_for: null, role: 'admin', allowed_agents: [], origin: { transport: 'internal', chat_id: null, topic_id: null } };

function status(paths: HomePaths): string {
  let out = '';
  statusCommand([], paths, Date.now(), (s) => (out += s));
  return out;
}

await t.test('a Telegram user chats with the agent, and a cron result for their chat is said there', async (t) => {
  const fake = await startFakeTelegram();
  t.teardown(() => fake.close());
  const scratch = tempHome(t);
  const root = join(scratch.dir, 'home');
  mkdirSync(join(root, 'config'), { recursive: true });
  const transcriber = join(scratch.dir, 'transcribe.sh');
  writeFileSync(transcriber, '#!/bin/sh\necho "turn on the lights"\n', { mode: 0o755 });
  writeFileSync(
    join(root, 'config', 'config.json'),
    JSON.stringify({
      telegram_token: fake.token,
      telegram_api_root: fake.apiRoot,
      allowed_user_ids: [ALICE],
      streaming: { min_chars: 1, edit_interval_seconds: 0.2 },
      transcription: { command: transcriber },
    }),
  );
  const paths = homePaths(root);
  const jobs = [{ id: 'report', title: 'Daily report', schedule: '0 0 1 1 *', agent: 'main', enabled: true, description: 'summarise the day', transport: 'telegram', chat_id: ALICE }];
  saveCronJobs(paths, jobs as unknown as CronJobRecord[]);
  prepareCronJobFolder(paths, 'report');
  const d = await startDaemon({ paths, logToStderr: false, internalPort: 0, killGraceMs: 300, env: { PATH: `${BIN}:${process.env.PATH}`, HOME: root } });
  scratch.beforeRemove(() => d.stop('test'));
  await fake.waitForCall('the bot polling', (c) => c.method === 'getUpdates');
  t.match(status(paths), /\n {2}transport {3}telegram {6}running: as @svc_fake_bot\n/, 'svc status shows the bot');

  fake.userMessage({ from: { id: ALICE, first_name: 'Alice' }, text: 'hello there' });
  await fake.waitForCall('the answer', () => fake.chatMessages(ALICE).some((m) => m.text.includes('echo: hello there')));

  fake.userMessage({ from: { id: ALICE }, voice: { bytes: Buffer.from('OggS voice'), duration: 1 } });
  await fake.waitForCall('the answer to the voice note', () => fake.chatMessages(ALICE).some((m) => m.text.includes('turn on the lights')));

  await d.bus.send(CRON_COMMANDS.run, { id: 'report', principal: ADMIN });
  await fake.waitForCall('the cron result in the chat', () => fake.chatMessages(ALICE).some((m) => m.text.includes('summarise the day')));

  // A task delegated from this chat: its result is told to main in the chat, and main's reply is said there.
  const mainToken = (JSON.parse(readFileSync(paths.mainAgentTokenFile, 'utf8')) as { token: string }).token;
  const r = await fetch(`http://127.0.0.1:${d.internalPort}/tasks/create`, {
    method: 'POST',
    headers: { connection: 'close', 'content-type': 'application/json', authorization: `Bearer ${mainToken}` },
    body: JSON.stringify({ from: 'main', name: 'Research', prompt: 'find the answer', chat_id: ALICE, transport: 'telegram' }),
  });
  t.equal(r.status, 200, await r.clone().text());
  await fake.waitForCall('the parent reply in the chat', () => fake.chatMessages(ALICE).some((m) => m.text.includes('Task') && m.text.includes('Research')));
  t.equal(fake.rateLimitReport().unanswered, 0);
});

await t.test('a bot token Telegram refuses: the daemon runs on, svc status says why, and what was for the chat goes to the admin chat', async (t) => {
  const fake = await startFakeTelegram();
  t.teardown(() => fake.close());
  const scratch = tempHome(t);
  const root = join(scratch.dir, 'home');
  mkdirSync(join(root, 'config'), { recursive: true });
  writeFileSync(join(root, 'config', 'config.json'), JSON.stringify({ telegram_token: `12345:${'r'.repeat(35)}`, telegram_api_root: fake.apiRoot, allowed_user_ids: [ALICE] }));
  const paths = homePaths(root);
  const d = await startDaemon({ paths, logToStderr: false, internalPort: 0, killGraceMs: 300, messengerRetry: { firstMs: 20, maxMs: 50 }, env: { PATH: `${BIN}:${process.env.PATH}`, HOME: root } });
  scratch.beforeRemove(() => d.stop('test'));
  await fake.waitForCall('a few attempts', () => fake.callsOf('getMe').length >= 3);
  const summary = await d.bus.send(SYSTEM_COMMANDS.summary, { principal: ADMIN, lang: 'en' });
  t.match(summary.transports.find((x) => x.name === 'telegram'), { state: 'retrying', detail: /refused the bot token/ }, 'the dashboard shows it too');
  t.match(status(paths), /transport {3}telegram {6}retrying: Telegram refused the bot token \(401 Unauthorized\): check telegram_token/);
  const r = await d.bus.send(CHAT_DELIVERY_COMMANDS.deliver, { transport: 'telegram', chat_id: ALICE, topic_id: null, text: 'disk almost full', source: 'test' });
  t.same(r, { delivered: true, to: 'admin' });
  t.match(d.log.read({ types: [CHAT_DELIVERY_EVENTS.delivery_rerouted] }).at(-1)?.data, { reason: /transport telegram is reconnecting \(Telegram refused the bot token/ });
  const lines = readFileSync(join(paths.logsDir, 'svc.log'), 'utf8').split('\n').filter((l) => l.includes('telegram bot of main: cannot run'));
  t.equal(lines.length, 1, 'one log line, however many attempts');
});

await t.test("a sub-agent's own bot runs with the agent: it answers as that agent, shows in status, and stops when the agent is removed", async (t) => {
  const mainBot = await startFakeTelegram();
  const coderBot = await startFakeTelegram({ token: '7000000002:CoderBotTokenForTests_abcdefghijklmnop', botUsername: 'coder_bot' });
  t.teardown(async () => {
    await mainBot.close();
    await coderBot.close();
  });
  const scratch = tempHome(t);
  const root = join(scratch.dir, 'home');
  mkdirSync(join(root, 'config'), { recursive: true });
  mkdirSync(join(root, '_secrets'), { recursive: true, mode: 0o700 });
  writeFileSync(join(root, 'config', 'config.json'), JSON.stringify({ telegram_token: mainBot.token, telegram_api_root: mainBot.apiRoot, allowed_user_ids: [ALICE] }));
  // The sub-agent's own config layer points its bot at its own (fake) Bot API server.
  mkdirSync(join(root, 'agents', 'coder', 'config'), { recursive: true });
  writeFileSync(join(root, 'agents', 'coder', 'config', 'config.json'), JSON.stringify({ telegram_api_root: coderBot.apiRoot }));
  const paths = homePaths(root);
  writeFileSync(paths.agentsRegistry, JSON.stringify([{ name: 'coder', telegram_token: coderBot.token, allowed_user_ids: [ALICE] }]));
  const d = await startDaemon({ paths, logToStderr: false, internalPort: 0, killGraceMs: 300, env: { PATH: `${BIN}:${process.env.PATH}`, HOME: root } });
  scratch.beforeRemove(() => d.stop('test'));
  await coderBot.waitForCall("coder's bot polling", (c) => c.method === 'getUpdates');
  await mainBot.waitForCall("main's bot polling", (c) => c.method === 'getUpdates');

  coderBot.userMessage({ from: { id: ALICE }, text: 'review this' });
  await coderBot.waitForCall("coder's answer", () => coderBot.chatMessages(ALICE).some((m) => m.text.includes('echo: review this')));
  const turn = d.log.read({ types: ['turn.started'] }).map((e) => e.data as { agent: string; session_key: string }).find((x) => x.session_key === `telegram:${ALICE}`);
  t.equal(turn?.agent, 'coder', 'the turn ran on the sub-agent');
  t.same(mainBot.chatMessages(ALICE), [], "main's bot said nothing");
  await until(() => `status to show both bots:\n${status(paths)}`, () => /telegram \(coder\) running: as @coder_bot/.test(status(paths)) && /telegram {6}running: as @svc_fake_bot/.test(status(paths)));

  // A delivery for coder goes through coder's own bot.
  await d.bus.send(CHAT_DELIVERY_COMMANDS.deliver, { transport: 'telegram', chat_id: ALICE, topic_id: null, text: 'build green', agent: 'coder', source: 'test' });
  await coderBot.waitForCall('the delivery through coder', () => coderBot.chatMessages(ALICE).some((m) => m.text === 'build green'));

  writeFileSync(paths.agentsRegistry, JSON.stringify([]));
  await until("coder's bot to stop with the agent", () => /telegram \(coder\) stopped/.test(status(paths)), 20_000);
  t.match(status(paths), /telegram {6}running/, "main's bot runs on");
});
