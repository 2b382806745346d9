import t from 'tap';
import { mkdirSync, writeFileSync } from 'node:fs';
import { adminChatTransport } from '../../actors/index.js';
import { Bus } from '../../bus/index.js';
import { connectionMachine } from '../../machines/index.js';
import { CHAT_SESSION_COMMANDS, defaultConfig, matrixChatId } from '../../schemas/index.js';
import { MemoryEventLog, homePaths } from '../../store/index.js';
import { chatTransportConformance } from './chat-transport.conformance.js';
import { startDirectApi } from '../fixtures/direct-api.js';
import { connectDirect } from '../fixtures/direct-socket-client.js';
import { bareTelegram } from '../fixtures/bare-telegram.js';
import { startFakeTelegram } from '../fixtures/fake-telegram.js';
import { scriptedAgent } from '../fixtures/scripted-agent.js';
import { until } from '../fixtures/until.js';
import { MsgType } from 'matrix-js-sdk';
import { unrefSdkRequestTimers } from '../fixtures/fake-matrix.js';
import { quietSdkConsole } from '../fixtures/matrix-client.js';
import { botSays, matrixRig, matrixWorld, ready } from '../fixtures/matrix-rig.js';

const TOKEN = 'conformance-token-0123456789abcdef';

await chatTransportConformance(t, 'api', async (t) => {
  const bus = new Bus({ log: new MemoryEventLog() });
  const agent = scriptedAgent(bus);
  const cfg = defaultConfig();
  cfg.api = { ...cfg.api, enabled: true, token: TOKEN, chat_id: 0 };
  const paths = homePaths(t.testdir());
  mkdirSync(paths.configDir, { recursive: true });
  writeFileSync(paths.configFile, JSON.stringify({ api: { enabled: true, token: TOKEN } }));
  const server = (await startDirectApi({ bus, config: () => cfg, paths, providers: () => [], connectionMachine, host: '127.0.0.1', port: 0 }))!;
  const client = await connectDirect(server.port, TOKEN, 7);
  t.teardown(() => {
    client.ws.terminate();
    server.close();
    bus.close();
  });
  return {
    transport: server.hub,
    agent,
    address: { chat_id: 7, topic_id: null },
    say: (text) => client.send({ type: 'message', text }),
    sees: async (text) => void (await client.next('result', new RegExp(text))),
    unreachable: { chat_id: 8, topic_id: null },
    stop: async () => server.hub.close(),
  };
});

await chatTransportConformance(t, 'admin', async (t) => {
  const bus = new Bus({ log: new MemoryEventLog() });
  const agent = scriptedAgent(bus);
  const kept: string[] = [];
  const sessions = bus.handle(CHAT_SESSION_COMMANDS.recordEnvelope, 'chat-sessions', ({ data }) => {
    kept.push(data.message.content);
    return { session_id: 's1' };
  });
  t.teardown(() => {
    sessions.unsubscribe();
    bus.close();
  });
  return {
    transport: adminChatTransport(bus),
    agent,
    address: { chat_id: 0, topic_id: null },
    // The admin chat's messages come through its own routes and socket (test/edges/admin-chat.test.ts).
    sees: (text) => until(`the admin chat to keep ${text}`, () => kept.some((k) => k.includes(text)), 10_000).then(() => undefined),
  };
});

await chatTransportConformance(t, 'telegram', async (t) => {
  const fake = await startFakeTelegram();
  const bus = new Bus({ log: new MemoryEventLog() });
  const agent = scriptedAgent(bus);
  const cfg = { ...defaultConfig(), telegram_token: fake.token, telegram_api_root: fake.apiRoot, allowed_user_ids: [4242] };
  const tg = bareTelegram(bus, cfg);
  tg.start();
  t.teardown(async () => {
    await tg.stop();
    await fake.close();
    bus.close();
  });
  await fake.waitForCall('polling', (c) => c.method === 'getUpdates');
  return {
    transport: tg,
    agent,
    address: { chat_id: 4242, topic_id: null },
    say: (text) => void fake.userMessage({ from: { id: 4242 }, text }),
    sees: (text) => fake.waitForCall(`chat 4242 to show ${text}`, () => fake.chatMessages(4242).some((m) => m.text.includes(text))).then(() => undefined),
    stop: () => tg.stop(),
  };
});

await chatTransportConformance(t, 'matrix', async (t) => {
  t.teardown(quietSdkConsole());
  t.teardown(unrefSdkRequestTimers());
  const w = await matrixWorld(t);
  const r = await matrixRig(t, w);
  await ready(w, r);
  return {
    transport: r.mx,
    agent: r.agent,
    address: { chat_id: matrixChatId(w.dm), topic_id: null },
    say: (text) => void w.aliceClient.sendMessage(w.dm, { msgtype: MsgType.Text, body: text }),
    sees: (text) => botSays(w, w.dm, text).then(() => undefined),
    unreachable: { chat_id: 8, topic_id: null },
    stop: r.stop,
  };
});
