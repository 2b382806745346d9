// The Matrix transport end to end: the real matrix-js-sdk and Rust crypto on both sides (svc's account and a
// person's client) against the fake homeserver, a scripted agent behind the real agent contract.
import t from 'tap';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { MsgType, RelationType } from 'matrix-js-sdk';
import { MESSENGER_EVENTS, matrixChatId } from '../../schemas/index.js';
import { MemoryEventLog } from '../../store/index.js';
import { unrefSdkRequestTimers } from '../fixtures/fake-matrix.js';
import { quietSdkConsole, roomMessage, startMatrixClient } from '../fixtures/matrix-client.js';
import { botSays, matrixRig as rig, matrixWorld as world, ready } from '../fixtures/matrix-rig.js';
import { until } from '../fixtures/until.js';

t.teardown(quietSdkConsole());
t.teardown(unrefSdkRequestTimers());

await t.test('an encrypted direct message is asked as the sender, streams into one message by m.replace edits, and ends as the whole answer', async (t) => {
  const w = await world(t);
  const r = await rig(t, w);
  await ready(w, r);
  const creds = join(r.storeDir, 'credentials.json');
  t.equal(statSync(creds).mode & 0o777, 0o600, 'credentials.json is readable by its owner only');
  t.equal(statSync(r.storeDir).mode & 0o777, 0o700);

  const { event_id } = await w.aliceClient.sendMessage(w.dm, { msgtype: MsgType.Text, body: 'hello bot' });
  const turn = await r.agent.next();
  t.match(turn.msg, { agent: 'main', transport: 'matrix', chat_id: matrixChatId(w.dm), topic_id: null, text: 'hello bot', kind: 'foreground' });
  t.match(turn.msg.principal, { kind: 'user', origin: { transport: 'matrix', chat_id: matrixChatId(w.dm), topic_id: null } });
  turn.say('Thinking about');
  await w.fake.waitFor('the first preview', (q) => q.method === 'PUT' && q.path.includes('/send/m.room.encrypted/') && q.userId === w.bot && q.status === 200);
  turn.say(' it. ');
  await botSays(w, w.dm, 'Thinking about it.');
  turn.end('Thinking about it. **Done.**');
  const msgs = await botSays(w, w.dm, 'Done');
  t.equal(msgs.length, 1, 'one message: the preview became the answer');
  t.equal(msgs[0]!.getContent().body, 'Thinking about it. **Done.**');
  t.equal(msgs[0]!.getContent().formatted_body, 'Thinking about it. <b>Done.</b>', 'Markdown rendered as HTML');
  t.ok(msgs[0]!.replacingEvent(), 'the answer arrived as an edit of the preview');
  const stored = w.fake.roomEvents(w.dm).filter((e) => e.sender === w.bot);
  t.ok(stored.length >= 2 && stored.every((e) => e.type === 'm.room.encrypted' || e.type === 'm.reaction' || e.type.startsWith('m.room.member')), 'the server saw only ciphertext from the bot');
  t.notOk(JSON.stringify(w.fake.roomEvents(w.dm)).includes('Done'), 'no plaintext answer on the server');
  t.match(r.log.read({ types: [MESSENGER_EVENTS.update_accepted] }), [{ stream: `messenger:matrix:${w.bot}`, data: { transport: 'matrix', event_id, chat_id: matrixChatId(w.dm), topic_id: null, agent: 'main' } }]);
  t.ok(await roomMessage(w.aliceClient, w.dm, () => true, 'anything'), 'sanity');
});

await t.test('strangers, unlisted rooms and invites from strangers get nothing; an allowed room with mention-only answers mentions from anyone in it', async (t) => {
  const w = await world(t);
  const mallory = `@mallory:${w.fake.serverName}`;
  const team = w.fake.createRoom(w.alice, { encrypted: false, members: [w.alice, w.bot, mallory], name: 'team' });
  const elsewhere = w.fake.createRoom(w.alice, { encrypted: false, members: [w.alice, w.bot, mallory], name: 'elsewhere' });
  const r = await rig(t, w, { config: { group_mention_only: true }, matrix: { allowed_rooms: [team] } });
  await ready(w, r);
  const malloryClient = await startMatrixClient(w.fake, 'mallory', 'mallory-pw');
  t.teardown(() => malloryClient.stopClient());
  const strangerDm = await malloryClient.createRoom({ invite: [w.bot], name: 'let me in' });
  await malloryClient.sendMessage(elsewhere, { msgtype: MsgType.Text, body: 'svcbot: hi from elsewhere' });
  await w.aliceClient.sendMessage(team, { msgtype: MsgType.Text, body: 'just chatting' });
  await malloryClient.sendMessage(team, { msgtype: MsgType.Text, body: 'svcbot: deploy please', 'm.mentions': { user_ids: [w.bot] } } as never);
  const turn = await r.agent.next();
  t.match(turn.msg, { chat_id: matrixChatId(team), text: 'deploy please' }, 'the mention is taken off what the agent reads');
  turn.end('deployed');
  await botSays(w, team, 'deployed');
  t.equal(r.agent.calls.length, 1, 'nothing else reached the agent');
  t.notOk(w.fake.requests.some((q) => q.userId === w.bot && q.method === 'POST' && q.path.includes(encodeURIComponent(strangerDm.room_id)) && q.path.endsWith('/join')), 'a stranger\'s invite is not taken');
  t.ok(r.logs.some((l) => l.includes(`ignored ${mallory}`) && l.includes('invite')), 'the refused invite is logged');
  t.ok(r.logs.some((l) => l.includes(elsewhere) && l.includes('not in matrix.allowed_rooms')), 'the unlisted room is logged');
});

await t.test('buttons become numbered options; replying with a number presses one', async (t) => {
  const w = await world(t);
  const r = await rig(t, w);
  await ready(w, r);
  await w.aliceClient.sendMessage(w.dm, { msgtype: MsgType.Text, body: '/tasks' });
  (await r.agent.next()).end('Your tasks:', { buttons: [{ label: 'Cancel build', data: 'tsc:cancel:1' }, { label: 'Show log', data: 'tsc:log:1' }] });
  const [shown] = await botSays(w, w.dm, '2. Show log');
  t.match(shown!.getContent().body, /Your tasks:\n\nReply with a number:\n1\. Cancel build\n2\. Show log/);
  await w.aliceClient.sendMessage(w.dm, { msgtype: MsgType.Text, body: '2' });
  const press = await r.agent.next();
  t.equal(press.msg.text, 'tsc:log:1', 'the number pressed its button');
  press.end('log shown');
  await w.aliceClient.sendMessage(w.dm, { msgtype: MsgType.Text, body: '2' });
  t.equal((await r.agent.next()).msg.text, '2', 'once pressed, a number is just a number');
});

await t.test('attachments both ways, encrypted in an encrypted room', async (t) => {
  const w = await world(t);
  const r = await rig(t, w);
  await ready(w, r);
  const bytes = Buffer.from('%PDF-1.4 quarterly numbers\n'.repeat(50));
  const { encryptAttachment } = await import('matrix-encrypt-attachment/lib/nodejs.js');
  const { data, info } = await encryptAttachment(bytes);
  const { content_uri } = await w.aliceClient.uploadContent(Buffer.from(data), { type: 'application/octet-stream' });
  await w.aliceClient.sendMessage(w.dm, { msgtype: MsgType.File, body: 'numbers.pdf', info: { mimetype: 'application/pdf', size: bytes.length }, file: { ...info, url: content_uri } } as never);
  const turn = await r.agent.next();
  const saved = /^\[File received: (.+) \(application\/pdf\)\]$/.exec(turn.msg.text)?.[1];
  t.ok(saved, `the agent is told where the file is: ${turn.msg.text}`);
  t.same(readFileSync(saved!), bytes, 'decrypted to what alice sent');
  const out = join(r.storeDir, '..', 'chart.png');
  writeFileSync(out, Buffer.from('89504e470d0a1a0a', 'hex'));
  turn.end('here is the chart', { files: [{ path: out, name: 'chart.png', is_image: true }] as never });
  const image = await roomMessage(w.aliceClient, w.dm, (e) => e.getSender() === w.bot && e.getContent().msgtype === MsgType.Image, 'the chart');
  const file = image.getContent().file as { url: string };
  t.ok(file?.url, 'sent as an encrypted file');
  t.notOk(image.getContent().url, 'no plain URL in an encrypted room');
});

await t.test('a restart keeps the device and its keys: no second login, a message sent while down is answered once, nothing twice', async (t) => {
  const w = await world(t);
  const log = new MemoryEventLog();
  const storeDir = join(t.testdir(), 'kept_store');
  const first = await rig(t, w, { log, storeDir });
  const device = await ready(w, first);
  await w.aliceClient.sendMessage(w.dm, { msgtype: MsgType.Text, body: 'before' });
  (await first.agent.next()).end('answered before');
  await botSays(w, w.dm, 'answered before');
  await first.stop();
  first.bus.close();

  await w.aliceClient.sendMessage(w.dm, { msgtype: MsgType.Text, body: 'while you were away' });
  const second = await rig(t, w, { log, storeDir });
  t.equal(await ready(w, second), device, 'the same device');
  const turn = await second.agent.next();
  t.equal(turn.msg.text, 'while you were away', 'the message sent while down was decrypted and asked');
  turn.end('back now');
  await botSays(w, w.dm, 'back now');
  t.equal(second.agent.calls.length, 1, 'the message answered before the restart was not asked again');
  t.equal(w.fake.requests.filter((q) => q.path.endsWith('/login') && q.method === 'POST' && q.status === 200).length, 2, 'one login for the bot (and one for alice)');
  t.equal(w.fake.requests.filter((q) => q.path.endsWith('/keys/upload') && q.userId === w.bot && !!(q.body as { device_keys?: unknown })?.device_keys).length, 1, 'device keys uploaded once');
});

await t.test('a refused login retries with why, logged once; deliveries say where they can go', async (t) => {
  const w = await world(t);
  const r = await rig(t, w, { matrix: { password: 'wrong' } });
  await until('a few login attempts', () => w.fake.requests.filter((q) => q.path.endsWith('/login') && q.status === 403).length >= 3, 20_000);
  t.match(r.mx.health(), { name: 'matrix', state: 'retrying', detail: /refused the login.*check matrix.user_id and matrix.password/ });
  t.equal(r.logs.filter((l) => l.includes('cannot run')).length, 1, 'one log line, however many attempts');
  t.notOk(r.mx.reaches({ chat_id: matrixChatId(w.dm), topic_id: null }));
  r.config.matrix.password = 'bot-pw';
  await ready(w, r);
  t.ok(r.mx.reaches({ chat_id: matrixChatId(w.dm), topic_id: null }), 'a joined room is reachable');
  t.notOk(r.mx.reaches({ chat_id: 12345, topic_id: null }), 'a chat that is no room of the bot is not');
  await r.mx.deliver({ chat_id: matrixChatId(w.dm), topic_id: null, text: 'cron job **failed**', source: 'cron:x', agent: 'main', correlation: 'c1' });
  await botSays(w, w.dm, 'cron job **failed**');
  await t.rejects(r.mx.deliver({ chat_id: 12345, topic_id: null, text: 'nowhere', source: 'x', agent: 'main', correlation: 'c2' }), { code: 'not-found' });
  // A wake without a chat names the main chat: the first allowed user's id, which is their direct room with the bot.
  t.ok(r.mx.reaches({ chat_id: matrixChatId(w.alice), topic_id: null }), 'an allowed user\'s chat id reaches their direct room');
  await r.mx.deliver({ chat_id: matrixChatId(w.alice), topic_id: null, text: 'webhook woke me', source: 'webhook:x', agent: 'main', correlation: 'c3' });
  await botSays(w, w.dm, 'webhook woke me');
  t.notOk(r.mx.reaches({ chat_id: matrixChatId('@mallory:localhost'), topic_id: null }), 'not anyone\'s');
});

await t.test('edits of a message and notices are not requests', async (t) => {
  const w = await world(t);
  const r = await rig(t, w);
  await ready(w, r);
  const { event_id } = await w.aliceClient.sendMessage(w.dm, { msgtype: MsgType.Text, body: 'first' });
  (await r.agent.next()).end('ok');
  await w.aliceClient.sendMessage(w.dm, { msgtype: MsgType.Text, body: '* second', 'm.new_content': { msgtype: MsgType.Text, body: 'second' }, 'm.relates_to': { rel_type: RelationType.Replace, event_id } } as never);
  await w.aliceClient.sendMessage(w.dm, { msgtype: MsgType.Notice, body: 'a bot notice' });
  await w.aliceClient.sendMessage(w.dm, { msgtype: MsgType.Text, body: 'third' });
  t.equal((await r.agent.next()).msg.text, 'third');
  t.equal(r.agent.calls.length, 2);
});

await t.test('what a room held before the account\'s first start is history, not requests', async (t) => {
  const w = await world(t);
  const plain = w.fake.createRoom(w.alice, { members: [w.alice, w.bot], name: 'plain dm' });
  await until('alice to see the room', () => w.aliceClient.getRoom(plain), 20_000);
  await w.aliceClient.sendMessage(plain, { msgtype: MsgType.Text, body: 'old news' });
  const r = await rig(t, w);
  await ready(w, r);
  await w.aliceClient.sendMessage(plain, { msgtype: MsgType.Text, body: 'fresh' });
  t.equal((await r.agent.next()).msg.text, 'fresh');
  t.equal(r.agent.calls.length, 1, 'the message from before was not asked');
});
