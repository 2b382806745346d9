// A daemon killed (-9) while streaming an answer into a Telegram chat: after the restart the chat is
// told once what had arrived and how to ask again, /retry asks the same question again, and a
// further restart says nothing more.
import t, { type Test } from 'tap';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startFakeTelegram } from '../fixtures/fake-telegram.js';
import { exited, readEvents, startSvc, until } from './cli-helpers.js';

const BIN = fileURLToPath(new URL('../fixtures/bin', import.meta.url));
const ALICE = 4242;

/** A fake Bot API, a home whose config points the bot at it, and a way to start the built daemon there (killed at teardown). */
async function boot(t: Test) {
  const fake = await startFakeTelegram();
  t.teardown(() => fake.close());
  const home = join(t.testdir(), 'home');
  mkdirSync(join(home, 'config'), { recursive: true });
  writeFileSync(
    join(home, 'config', 'config.json'),
    JSON.stringify({ interagent_port: 0, telegram_token: fake.token, telegram_api_root: fake.apiRoot, allowed_user_ids: [ALICE], streaming: { min_chars: 1, edit_interval_seconds: 0.3 } }),
  );
  const start = (env: NodeJS.ProcessEnv) => {
    const daemon = startSvc(home, ['start'], { PATH: `${BIN}:${process.env.PATH}`, HOME: home, ...env });
    t.teardown(() => void daemon.kill('SIGKILL'));
    return daemon;
  };
  /** The restart notices the chat has been told. */
  const notices = () => fake.chatMessages(ALICE).filter((m) => m.text.includes('cut off by a restart of svc'));
  return { fake, home, start, notices };
}

await t.test('kill -9 mid-answer: the chat gets the partial answer once after the restart, and /retry asks again', async (t) => {
  const { fake, home, start, notices } = await boot(t);

  const words = Array.from({ length: 80 }, (_, i) => `w${i} `).join('');
  const first = start({ FAKE_CLI_REPLY: words, FAKE_CLI_CHUNKS: '80', FAKE_CLI_DELAY_MS: '150' });
  await fake.waitForCall('the first daemon polling', (c) => c.method === 'getUpdates', 30_000);
  fake.userMessage({ from: { id: ALICE }, text: 'tell me a long story' });
  await fake.waitForCall('the answer to start streaming', () => fake.chatMessages(ALICE).some((m) => m.text.startsWith('w0')), 30_000);
  const db = join(home, 'events.db');
  await until('a checkpoint of the answer', () => readEvents(db).some((e) => e.type === 'turn.progressed'), 20_000);
  first.kill('SIGKILL');
  await exited(first);

  const second = start({});
  await fake.waitForCall('the notice after the restart', () => notices().length > 0, 30_000);
  t.match(notices()[0]!.text, /^w0 w1 /, 'it begins with what had arrived');
  t.match(notices()[0]!.text, /send \/retry to ask again/);

  fake.userMessage({ from: { id: ALICE }, text: '/retry' });
  await fake.waitForCall('the retried answer', () => fake.chatMessages(ALICE).some((m) => m.text === 'echo: tell me a long story'), 30_000);
  second.kill('SIGTERM');
  t.equal(await exited(second), 0);

  const third = start({});
  // An answer from the third daemon: it is up, and anything it would hand over on start has been said.
  fake.userMessage({ from: { id: ALICE }, text: 'ping' });
  await fake.waitForCall('the third daemon answering', () => fake.chatMessages(ALICE).some((m) => m.text === 'echo: ping'), 30_000);
  t.equal(notices().length, 1, 'said once, not again on the next start');
  third.kill('SIGTERM');
  t.equal(await exited(third), 0);
});

await t.test('svc stopped (SIGTERM) mid-answer: it stops at once, and the next start tells the chat once', async (t) => {
  const { fake, start, notices } = await boot(t);
  const words = Array.from({ length: 200 }, (_, i) => `w${i} `).join('');
  const first = start({ FAKE_CLI_REPLY: words, FAKE_CLI_CHUNKS: '200', FAKE_CLI_DELAY_MS: '200' });
  await fake.waitForCall('polling', (c) => c.method === 'getUpdates', 30_000);
  fake.userMessage({ from: { id: ALICE }, text: 'a very long story' });
  await fake.waitForCall('streaming', () => fake.chatMessages(ALICE).some((m) => m.text.startsWith('w0')), 30_000);
  first.kill('SIGTERM');
  t.equal(await exited(first), 0, 'it stopped cleanly without waiting for the answer');
  t.notOk(fake.chatMessages(ALICE).some((m) => m.text.includes('w199')), 'the answer had not finished');

  const second = start({});
  await fake.waitForCall('the notice', () => notices().length > 0, 30_000);
  fake.userMessage({ from: { id: ALICE }, text: 'ping' });
  await fake.waitForCall('an answer after it', () => fake.chatMessages(ALICE).some((m) => m.text === 'echo: ping'), 30_000);
  t.equal(notices().length, 1);
  second.kill('SIGTERM');
  t.equal(await exited(second), 0);
});

await t.test('kill -9 after the answer was computed but before the chat had it: the next start sends it, once', async (t) => {
  const { fake, home, start, notices } = await boot(t);
  // Telegram holds back anything carrying the answer's last word (a 429 asking for two minutes), so svc
  // is still waiting to send it when it dies, though the agent has finished.
  fake.rateLimitNext((method, params) => ['sendMessage', 'editMessageText'].includes(method) && String(params.text ?? '').includes('omega'), 120, 1);
  const first = start({ FAKE_CLI_REPLY: 'alpha beta omega', FAKE_CLI_CHUNKS: '3', FAKE_CLI_DELAY_MS: '300' });
  await fake.waitForCall('polling', (c) => c.method === 'getUpdates', 30_000);
  fake.userMessage({ from: { id: ALICE }, text: 'say something' });
  const db = join(home, 'events.db');
  await until('the turn to complete', () => readEvents(db).some((e) => e.type === 'turn.completed'), 30_000);
  await fake.waitForCall('the held send', (c) => String((c.params as { text?: unknown }).text ?? '').includes('omega') && c.status === 429, 30_000);
  first.kill('SIGKILL');
  await exited(first);
  t.notOk(fake.chatMessages(ALICE).some((m) => m.text.includes('omega')), 'the chat did not have the answer');

  const second = start({});
  await fake.waitForCall('the owed answer', () => fake.chatMessages(ALICE).some((m) => m.text === 'alpha beta omega'), 30_000);
  await until('the answer recorded as delivered', () => readEvents(db).some((e) => e.type === 'messenger.answer_delivered'), 20_000);
  second.kill('SIGTERM');
  t.equal(await exited(second), 0);

  const third = start({});
  fake.userMessage({ from: { id: ALICE }, text: 'ping' });
  await fake.waitForCall('the third daemon answering', () => fake.chatMessages(ALICE).some((m) => m.text === 'echo: ping'), 30_000);
  t.equal(fake.chatMessages(ALICE).filter((m) => m.text.includes('omega')).length, 1, 'sent once, not again on the next start');
  t.equal(notices().length, 0, 'a finished answer is sent, not announced as cut off');
  third.kill('SIGTERM');
  t.equal(await exited(third), 0);
});
