import t, { type Test } from 'tap';
import { readFileSync, readdirSync } from 'node:fs';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { join } from 'node:path';
import sharp from 'sharp';
import { normaliseImage, startEditStream } from '../../actors/index.js';
import { acceptedUpTo, owedAnswersOf } from '../../bin/messengers.js';
import { Bus } from '../../bus/index.js';
import { TelegramTransport, datedUploadFolder } from '../../edges/index.js';
import { MESSENGER_EVENTS, defaultConfig, type AgentConfig } from '../../schemas/index.js';
import { MemoryEventLog } from '../../store/index.js';
import { startFakeTelegram, type FakeTelegram } from '../fixtures/fake-telegram.js';
import { scriptedAgent } from '../fixtures/scripted-agent.js';
import { until } from '../fixtures/until.js';
import { bareTelegram } from '../fixtures/bare-telegram.js';

const ALICE = 111;
const STRANGER = 666;
const GROUP = -100_200;

type Cfg = ReturnType<typeof defaultConfig>;

interface RigOptions {
  config?: Partial<Cfg>;
  enforceLimits?: boolean;
  fake?: FakeTelegram;
  log?: MemoryEventLog;
}

async function rig(t: Test, opts: RigOptions = {}) {
  const fake = opts.fake ?? (await startFakeTelegram({ enforceLimits: opts.enforceLimits ?? true }));
  const log = opts.log ?? new MemoryEventLog();
  const bus = new Bus({ log });
  const agent = scriptedAgent(bus);
  const base = defaultConfig();
  const config: Cfg = {
    ...base,
    telegram_token: fake.token,
    telegram_api_root: fake.apiRoot,
    allowed_user_ids: [ALICE],
    streaming: { ...base.streaming, min_chars: 1, idle_ms: 30, edit_interval_seconds: 0.3 },
    ...opts.config,
  };
  const logs: string[] = [];
  const mediaRoot = join(t.testdir(), 'telegram_files');
  const mediaDir = join(mediaRoot, '2026-11-28');
  const tg = new TelegramTransport({
    bus,
    agent: 'main',
    config: () => config,
    sender: (id) => (id === ALICE ? { id: 'alice', role: 'operator', allowed_agents: ['main'] } : null),
    streams: (editor) => startEditStream(editor, config.streaming, { now: () => Date.now() }),
    acceptedUpTo: (botId) => acceptedUpTo(log, 'telegram', botId),
    owed: (botId) => owedAnswersOf(log, 'telegram', botId),
    log: (level, msg) => logs.push(`${level} ${msg}`),
    retry: { firstMs: 20, maxMs: 100 },
    media: {
      destination: () => datedUploadFolder(mediaRoot, '2026-11-28'),
      normaliseImage: async (path) => (await normaliseImage(path, config.image)).path,
      transcribe: async (path) => {
        const bytes = readFileSync(path, 'utf8');
        if (bytes.includes('mumble')) throw new Error('no transcription backend worked: install whisper (pip install openai-whisper)');
        return `transcript of ${bytes.length} bytes`;
      },
    },
  });
  tg.start();
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await tg.stop();
  };
  t.teardown(async () => {
    await stop();
    if (!opts.fake) await fake.close();
    bus.close();
  });
  await fake.waitForCall('the bot to start polling', (c) => c.method === 'getUpdates');
  return { fake, bus, log, agent, tg, logs, config, stop, mediaDir };
}

/** The bot's messages in a chat once the chat shows `text` as its last one. */
async function shown(fake: FakeTelegram, chatId: number, text: string) {
  await fake.waitForCall(`chat ${chatId} to show ${JSON.stringify(text.slice(0, 40))}`, () => fake.chatMessages(chatId).at(-1)?.text.includes(text) === true);
  return fake.chatMessages(chatId);
}

await t.test('a private message is asked as the sender, streams into one message by edits, and ends as the whole answer', async (t) => {
  const s = await rig(t);
  s.fake.userMessage({ from: { id: ALICE, first_name: 'Alice' }, text: 'hello' });
  const turn = await s.agent.next();
  t.match(turn.msg, { agent: 'main', transport: 'telegram', chat_id: ALICE, topic_id: null, text: 'hello', kind: 'foreground' });
  t.match(turn.msg.principal, { kind: 'user', id: 'alice', role: 'operator', origin: { transport: 'telegram', chat_id: ALICE, topic_id: null } }, 'the role comes from the user record listing the sender');
  turn.say('Thinking about');
  await s.fake.waitForCall('the first preview', (c) => c.method === 'sendMessage' && c.status === 200);
  turn.say(' it. ');
  await s.fake.waitForCall('an edit', (c) => c.method === 'editMessageText' && c.status === 200);
  turn.end('Thinking about it. **Done.**');
  const msgs = await shown(s.fake, ALICE, 'Done');
  t.equal(msgs.length, 1, 'one message: the preview became the answer');
  t.equal(msgs[0]!.text, 'Thinking about it. <b>Done.</b>', 'Markdown rendered as Telegram HTML');
  t.equal(msgs[0]!.parse_mode, 'HTML');
  t.match(s.log.read({ types: [MESSENGER_EVENTS.update_accepted] }), [{ stream: `messenger:telegram:${s.fake.botId}`, data: { transport: 'telegram', chat_id: ALICE, topic_id: null, agent: 'main' } }]);
  t.ok(s.fake.callsOf('setMyCommands').some((c) => JSON.stringify(c.params).includes('"tasks"')), 'the chat commands are the bot commands');
  t.equal(s.fake.rateLimitReport().given, 0, 'never faster than Telegram allows');
});

await t.test('strangers, unlisted groups and channels get nothing, and each is logged once; groups answer mentions when mention-only', async (t) => {
  const s = await rig(t, { config: { allowed_group_ids: [GROUP], group_mention_only: true } });
  s.fake.userMessage({ from: { id: STRANGER }, text: 'let me in' });
  s.fake.userMessage({ from: { id: STRANGER }, text: 'please' });
  s.fake.userMessage({ from: { id: ALICE }, chat: { id: -999, type: 'supergroup', title: 'elsewhere' }, text: `@${'svc_fake_bot'} hi` });
  s.fake.userMessage({ from: { id: ALICE }, chat: { id: GROUP, type: 'supergroup', title: 'team' }, text: 'just chatting' });
  s.fake.userMessage({ from: { id: STRANGER }, chat: { id: GROUP, type: 'supergroup', title: 'team' }, text: `@${s.fake.botUsername} run rm -rf` });
  s.fake.userMessage({ from: { id: ALICE }, chat: { id: GROUP, type: 'supergroup', title: 'team' }, text: `@${s.fake.botUsername} deploy please` });
  const turn = await s.agent.next();
  t.match(turn.msg, { chat_id: GROUP, text: 'deploy please' }, 'the mention is taken off what the agent reads');
  t.equal(s.agent.calls.length, 1, 'nothing else reached the agent');
  turn.end('deployed');
  await shown(s.fake, GROUP, 'deployed');
  t.same(s.fake.chatMessages(STRANGER), [], 'a stranger gets no reply at all');
  t.same(s.fake.chatMessages(-999), []);
  t.equal(s.logs.filter((l) => l.includes(`user ${STRANGER} is not in allowed_user_ids`) && l.includes(`chat ${STRANGER}`)).length, 1, 'two messages, one log line');
  t.ok(s.logs.some((l) => l.includes('group -999 is not in allowed_group_ids')));
  t.ok(s.logs.some((l) => l.includes('group_mention_only')));
});

await t.test('a forum topic is its own session, and the answer goes to that topic', async (t) => {
  const s = await rig(t, { config: { allowed_group_ids: [GROUP] } });
  s.fake.userMessage({ from: { id: ALICE }, chat: { id: GROUP, type: 'supergroup', is_forum: true, title: 'forum' }, message_thread_id: 42, text: 'status?' });
  const turn = await s.agent.next();
  t.match(turn.msg, { chat_id: GROUP, topic_id: 42 });
  turn.end('all green');
  const msgs = await shown(s.fake, GROUP, 'all green');
  t.equal(msgs.at(-1)!.message_thread_id, 42);
});

await t.test('an update Telegram hands out again after a crash runs once', async (t) => {
  const fake = await startFakeTelegram();
  t.teardown(() => fake.close());
  const log = new MemoryEventLog();
  const first = await rig(t, { fake, log });
  const id = fake.userMessage({ from: { id: ALICE }, text: 'charge the card' });
  const turn = await first.agent.next();
  turn.end('charged');
  await shown(fake, ALICE, 'charged');
  await first.stop();
  // The same update again, as after a crash before its offset reached Telegram; then a new one.
  const update = { update_id: id, message: { message_id: 1, date: 1, chat: { id: ALICE, type: 'private', first_name: 'A' }, from: { id: ALICE, is_bot: false, first_name: 'A' }, text: 'charge the card' } };
  fake.pushUpdate(update);
  fake.userMessage({ from: { id: ALICE }, text: 'thanks' });
  const second = await rig(t, { fake, log });
  const next = await second.agent.next();
  t.equal(next.msg.text, 'thanks', 'the replayed update was skipped');
  t.equal(second.agent.calls.length, 1);
  next.end('ok');
  await shown(fake, ALICE, 'ok');
});

await t.test('a long answer is cut at paragraphs into messages Telegram accepts; buttons ride on the last; a pressed one is the next message', async (t) => {
  const s = await rig(t);
  s.fake.userMessage({ from: { id: ALICE }, text: '/tasks' });
  const turn = await s.agent.next();
  const para = (n: number) => `Paragraph ${n}. ${'word '.repeat(300).trim()}`;
  const long = Array.from({ length: 6 }, (_, i) => para(i)).join('\n\n');
  turn.end(long, { buttons: [{ label: 'Refresh', data: 'tsc:refresh' }] });
  const msgs = await shown(s.fake, ALICE, 'Paragraph 5.');
  t.ok(msgs.length >= 3, `${msgs.length} messages`);
  for (const m of msgs) t.ok(m.text.length <= 4096, `a message of ${m.text.length} characters`);
  t.ok(msgs.every((m) => /^Paragraph \d\./.test(m.text)), 'every cut falls between paragraphs');
  t.same(msgs.at(-1)!.reply_markup, { inline_keyboard: [[{ text: 'Refresh', callback_data: 'tsc:refresh' }]] });
  t.notOk(msgs[0]!.reply_markup, 'only the last part has the buttons');
  s.fake.callback({ from: { id: ALICE }, chat_id: ALICE, message_id: msgs.at(-1)!.message_id, data: 'tsc:refresh' });
  const pressed = await s.agent.next();
  t.match(pressed.msg, { text: 'tsc:refresh', chat_id: ALICE });
  await s.fake.waitForCall('the button press answered', (c) => c.method === 'answerCallbackQuery' && c.status === 200);
  s.fake.callback({ from: { id: STRANGER }, chat_id: ALICE, message_id: msgs.at(-1)!.message_id, data: 'tsc:cancel_all' });
  pressed.end('refreshed');
  await shown(s.fake, ALICE, 'refreshed');
  t.equal(s.agent.calls.length, 2, "a stranger's press of the same button reached nothing");
});

await t.test('429s with retry_after are waited out, and the final text still arrives', async (t) => {
  const s = await rig(t);
  s.fake.rateLimitNext((m) => m === 'sendMessage', 1, 2);
  s.fake.userMessage({ from: { id: ALICE }, text: 'go' });
  const turn = await s.agent.next();
  turn.end('made it through');
  await shown(s.fake, ALICE, 'made it through');
  t.match(s.fake.rateLimitReport(), { given: 2, unanswered: 0 });
  t.equal(s.fake.rateLimitReport().honoured, 2, 'each retry came after retry_after');
});

await t.test('ten answers streaming at once in ten chats: no 429 at all, every final text delivered once', async (t) => {
  const users = Array.from({ length: 10 }, (_, i) => 500 + i);
  const s = await rig(t, { config: { allowed_user_ids: users } });
  for (const u of users) s.fake.userMessage({ from: { id: u }, text: `job ${u}` });
  const turns = await Promise.all(users.map(() => s.agent.next()));
  // Deltas faster than any chat may be edited: the streams coalesce, Telegram's limits hold.
  for (let i = 0; i < 20; i++) {
    for (const turn of turns) turn.say(`part ${i}. `);
    await new Promise((r) => setTimeout(r, 25));
  }
  for (const turn of turns) turn.end(`final answer for ${turn.msg.chat_id}`);
  for (const u of users) {
    const msgs = await shown(s.fake, u, `final answer for ${u}`);
    t.equal(msgs.length, 1, `chat ${u}: one message`);
  }
  t.equal(s.fake.rateLimitReport().given, 0, 'no 429 was needed');
  const edits = s.fake.callsOf('editMessageText').length;
  t.ok(edits < 10 * 20, `${edits} edits for 200 deltas: coalesced`);
});

await t.test('deliver sends what svc says outside a turn into the chat and topic; a bad token is retried, said once, and never thrown', async (t) => {
  const s = await rig(t, { config: { allowed_group_ids: [GROUP] } });
  t.equal(s.tg.health().state, 'running');
  t.ok(s.tg.reaches({ chat_id: GROUP, topic_id: 7 }));
  await s.tg.deliver({ chat_id: GROUP, topic_id: 7, text: 'Cron job **backup** failed', source: 'cron:backup', agent: 'main', correlation: 'c1' });
  const msgs = await shown(s.fake, GROUP, 'backup');
  t.match(msgs.at(-1), { text: 'Cron job <b>backup</b> failed', message_thread_id: 7 });

  const bad = await startFakeTelegram({ token: '1:wrong' });
  t.teardown(() => bad.close());
  const logs: string[] = [];
  const bus = new Bus({ log: new MemoryEventLog() });
  t.teardown(() => bus.close());
  const cfg: AgentConfig = { ...s.config, telegram_token: '2:not-the-one', telegram_api_root: bad.apiRoot };
  const broken = bareTelegram(bus, cfg, (line) => logs.push(line));
  broken.start();
  await until('a third attempt, then the backoff', () => bad.callsOf('getMe').length >= 3 && broken.health().state === 'retrying');
  t.match(broken.health(), { state: 'retrying', detail: /refused the bot token.*check telegram_token/ });
  t.notOk(broken.reaches({ chat_id: 1, topic_id: null }));
  t.equal(logs.filter((l) => l.startsWith('error')).length, 1, 'one line for the same problem, however many attempts');
  await broken.stop();
  t.equal(broken.health().state, 'stopped');
});

await t.test('hostile input: captions-only media, empty text, edited messages and bots are not asked; a command for another bot is passed as text', async (t) => {
  const s = await rig(t);
  s.fake.pushUpdate({ edited_message: { message_id: 9, date: 1, chat: { id: ALICE, type: 'private' }, from: { id: ALICE, is_bot: false, first_name: 'A' }, text: 'sneaky edit' } });
  s.fake.pushUpdate({ message: { message_id: 10, date: 1, chat: { id: ALICE, type: 'private' }, from: { id: ALICE, is_bot: false, first_name: 'A' }, text: '   ' } });
  s.fake.pushUpdate({ message: { message_id: 11, date: 1, chat: { id: ALICE, type: 'private' } } });
  s.fake.userMessage({ from: { id: ALICE }, text: 'real one' });
  const turn = await s.agent.next();
  t.equal(turn.msg.text, 'real one');
  t.equal(s.agent.calls.length, 1);
  turn.end('done');
  await shown(s.fake, ALICE, 'done');
});


await t.test('a voice note is transcribed, a photo normalised, a document saved; the agent is told where each is', async (t) => {
  const s = await rig(t);
  s.fake.userMessage({ from: { id: ALICE }, voice: { bytes: Buffer.from('OggS fake voice note'), duration: 2 } });
  const voice = await s.agent.next();
  t.match(voice.msg.text, /^\[Voice message \(saved as .*telegram_files.*\), transcribed:\]\ntranscript of 20 bytes$/);
  voice.end('heard you');
  await shown(s.fake, ALICE, 'heard you');

  const big = await sharp({ create: { width: 4000, height: 1000, channels: 3, background: '#336699' } }).jpeg().toBuffer();
  s.fake.userMessage({ from: { id: ALICE }, photo: { bytes: big, width: 4000, height: 1000 }, caption: 'what colour?' });
  const photo = await s.agent.next();
  const path = /^\[Image received: (.+\.webp)\]\n\nwhat colour\?$/.exec(photo.msg.text)?.[1];
  t.ok(path, photo.msg.text);
  const meta = await sharp(readFileSync(path!)).metadata();
  t.match(meta, { format: 'webp', width: 3000, height: 750 }, 'no side longer than image.max_dimension');
  photo.end('blue');
  await shown(s.fake, ALICE, 'blue');

  s.fake.userMessage({ from: { id: ALICE }, document: { bytes: Buffer.from('%PDF-1.7 report'), file_name: '../../etc/passwd report.pdf', mime_type: 'application/pdf' }, caption: 'summarise' });
  const doc = await s.agent.next();
  const docPath = /^\[File received: (.+) \(application\/pdf\)\]\n\nsummarise$/.exec(doc.msg.text)?.[1];
  t.ok(docPath, doc.msg.text);
  t.equal(readFileSync(docPath!, 'utf8'), '%PDF-1.7 report');
  t.ok(docPath!.startsWith(s.mediaDir + '/'), 'a hostile file name stays inside the media folder');
  doc.end('done');
  await shown(s.fake, ALICE, 'done');
});

await t.test('a voice note no backend can transcribe, and a file over the Bot API limit, are answered with why; the agent is not asked', async (t) => {
  const s = await rig(t);
  s.fake.userMessage({ from: { id: ALICE }, voice: { bytes: Buffer.from('mumble mumble') } });
  await shown(s.fake, ALICE, 'pip install openai-whisper');
  s.fake.pushUpdate({
    message: { message_id: 50, date: 1, chat: { id: ALICE, type: 'private', first_name: 'A' }, from: { id: ALICE, is_bot: false, first_name: 'A' }, document: { file_id: 'nope', file_unique_id: 'u', file_name: 'huge.bin', file_size: 50 * 1024 * 1024 } },
  });
  await shown(s.fake, ALICE, 'at most 20971520');
  t.equal(s.agent.calls.length, 0);
  t.same(readdirSync(s.mediaDir).filter((f) => f.startsWith('.')), [], 'nothing half-written is left');
});

await t.test('scene.reaction_style: seen marks the message 👀; detailed also shows ✍ while written and 👍 when done; off nothing', async (t) => {
  const reactionsOn = (fake: FakeTelegram) => fake.callsOf('setMessageReaction').map((c) => (c.params.reaction as { emoji: string }[])[0]!.emoji);
  for (const [style, expected] of [['seen', ['👀']], ['detailed', ['👀', '✍', '👍']], ['off', []]] as const) {
    const base = defaultConfig();
    const s = await rig(t, { config: { scene: { ...base.scene, reaction_style: style } } });
    s.fake.userMessage({ from: { id: ALICE }, text: 'hello' });
    const turn = await s.agent.next();
    turn.say('Hi');
    turn.end('Hi there');
    await shown(s.fake, ALICE, 'Hi there');
    if (expected.length) await s.fake.waitForCall(`${expected.length} reactions`, () => reactionsOn(s.fake).length >= expected.length);
    t.same(reactionsOn(s.fake), expected, style);
    await s.stop();
  }
});

await t.test('a Bot API that cannot be reached is retried with why; one that never answers does not hold up stop', async (t) => {
  const bus = new Bus({ log: new MemoryEventLog() });
  t.teardown(() => bus.close());
  const sockets = new Set<Socket>();
  const silent = createServer((sock) => void sockets.add(sock));
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  const closed = createServer();
  await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
  const refusedPort = (closed.address() as AddressInfo).port;
  await new Promise((r) => closed.close(r));
  t.teardown(() => {
    for (const s of sockets) s.destroy();
    silent.close();
  });
  const transport = (apiRoot: string) => bareTelegram(bus, { ...defaultConfig(), telegram_token: `1:${'A'.repeat(35)}`, telegram_api_root: apiRoot, allowed_user_ids: [ALICE] });
  const refused = transport(`http://127.0.0.1:${refusedPort}`);
  refused.start();
  await until('refused to be retried', () => refused.health().state === 'retrying');
  t.match(refused.health().detail, /cannot reach the Bot API/);
  await refused.stop();

  const hanging = transport(`http://127.0.0.1:${(silent.address() as AddressInfo).port}`);
  hanging.start();
  await until('a request to hang on the silent server', () => sockets.size > 0);
  t.equal(hanging.health().state, 'starting');
  await hanging.stop();
  t.equal(hanging.health().state, 'stopped', 'stop ended the start-up call in flight');
});
