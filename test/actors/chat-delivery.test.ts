import t, { type Test } from 'tap';
import { startChatDelivery } from '../../actors/index.js';
import { Bus } from '../../bus/index.js';
import { CHAT_DELIVERY_COMMANDS, CHAT_DELIVERY_EVENTS, CHAT_SESSION_COMMANDS, type ChatTransport, type TransportHealth } from '../../schemas/index.js';
import { MemoryEventLog } from '../../store/index.js';
import { recordingTransport, registryOf } from '../fixtures/recording-transport.js';

/** A bus with chat delivery over these transports, and an in-memory admin chat keeping what it is told. */
function rig(t: Test, ...transports: ChatTransport[]) {
  const log = new MemoryEventLog();
  const bus = new Bus({ log, clock: () => Date.parse('2026-11-28T08:00:00Z') });
  const delivery = startChatDelivery({ bus, transports: registryOf(...transports) });
  const adminChat: { agent: string; id: string; content: string; meta: Record<string, unknown> }[] = [];
  const chat = bus.handle(CHAT_SESSION_COMMANDS.recordEnvelope, 'chat-sessions', ({ data }) => {
    adminChat.push({ agent: data.agent, id: data.message.id, content: data.message.content, meta: data.message.meta as Record<string, unknown> });
    return { session_id: 's1' };
  });
  t.teardown(() => {
    chat.unsubscribe();
    delivery.unsubscribe();
    bus.close();
  });
  const deliver = (transport: string, chat_id = 42, topic_id: number | null = null) =>
    bus.send(CHAT_DELIVERY_COMMANDS.deliver, { transport, chat_id, topic_id, text: 'Report ready', agent: 'coder', source: 'cron:daily' });
  const rerouted = () => log.read({ types: [CHAT_DELIVERY_EVENTS.delivery_rerouted] }).map((e) => e.data as { reason: string; transport: string; to: string });
  return { bus, adminChat, deliver, rerouted };
}

await t.test('a running transport that reaches the chat gets the message, with its topic and agent; nothing is rerouted', async (t) => {
  const tg = recordingTransport('telegram');
  const s = rig(t, tg);
  t.same(await s.deliver('telegram', 42, 7), { delivered: true, to: 'telegram' });
  t.match(tg.delivered, [{ chat_id: 42, topic_id: 7, text: 'Report ready', agent: 'coder', source: 'cron:daily' }]);
  t.same(s.adminChat, []);
  t.same(s.rerouted(), []);
});

await t.test('a chat the transport cannot reach, a transport reconnecting, one whose send fails: each goes to the admin chat, saying why', async (t) => {
  const health: TransportHealth = { name: 'telegram', state: 'running', detail: 'as @bot' };
  let failing = false;
  const tg: ChatTransport = {
    name: 'telegram',
    health: () => health,
    reaches: (to) => to.chat_id !== 13,
    deliver: async () => {
      if (failing) throw new Error('Bad Request: chat not found');
    },
  };
  const s = rig(t, tg);
  t.same(await s.deliver('telegram', 13), { delivered: true, to: 'admin' });
  failing = true;
  t.same(await s.deliver('telegram', 42), { delivered: true, to: 'admin' });
  failing = false;
  health.state = 'retrying';
  health.detail = '401 Unauthorized';
  t.same(await s.deliver('telegram', 42), { delivered: true, to: 'admin' });
  t.same(
    s.rerouted().map((r) => r.reason),
    ['telegram cannot reach that chat', 'sending it through telegram failed: Bad Request: chat not found', 'transport telegram is reconnecting (401 Unauthorized)'],
  );
  t.equal(s.adminChat.length, 3);
  t.match(s.adminChat[1], { agent: 'coder', content: 'Report ready', meta: { source: 'cron:daily', rerouted_from: { transport: 'telegram', chat_id: 42, topic_id: null } } });
});

await t.test('no transport of that name: the admin chat, and the reason says whether svc can run it at all', async (t) => {
  const s = rig(t);
  await s.deliver('telegram');
  await s.deliver('matrix');
  await s.deliver('carrier-pigeon');
  t.same(
    s.rerouted().map((r) => r.reason),
    ['transport telegram is not running', 'transport matrix is not running', 'transport carrier-pigeon has no chat delivery in svc'],
  );
});

await t.test('hostile or malformed deliveries are refused before anything is said', async (t) => {
  const tg = recordingTransport('telegram');
  const s = rig(t, tg);
  for (const bad of [
    { transport: 'telegram', chat_id: 1.5, topic_id: null, text: 'x', source: 's' },
    { transport: 'telegram', chat_id: 1, topic_id: null, text: '', source: 's' },
    { transport: 'telegram', chat_id: 1, topic_id: null, text: 'x', source: 's', agent: '../etc' },
    { transport: 'telegram', chat_id: 1, topic_id: null, text: 'x', source: 's', extra: true },
  ]) {
    await t.rejects(s.bus.send(CHAT_DELIVERY_COMMANDS.deliver, bad as never), { code: 'invalid-command' }, JSON.stringify(bad));
  }
  t.same(tg.delivered, []);
  t.same(s.adminChat, []);
});

await t.test("a sender's own message id is kept by the admin chat, so a retried delivery does not show twice", async (t) => {
  const s = rig(t);
  await s.bus.send(CHAT_DELIVERY_COMMANDS.deliver, { transport: 'cli', chat_id: 46, topic_id: null, text: 'reply', agent: 'main', source: 'interagent:x', id: 'interagent-x-reply' });
  t.match(s.adminChat, [{ id: 'interagent-x-reply', content: 'reply' }]);
  await t.rejects(s.bus.send(CHAT_DELIVERY_COMMANDS.deliver, { transport: 'cli', chat_id: 46, topic_id: null, text: 'r', source: 's', id: '../../x y' }), { code: 'invalid-command' });
});
