import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { MatrixClient } from 'matrix-js-sdk';
import { MsgType } from 'matrix-js-sdk';
import { startEditStream } from '../actors/index.js';
import { acceptedEvents } from '../bin/messengers.js';
import { Bus } from '../bus/index.js';
import { MatrixTransport, TelegramTransport } from '../edges/index.js';
import { defaultConfig, matrixChatId } from '../schemas/index.js';
import { MemoryEventLog } from '../store/index.js';
// Fixtures are outside tsconfig.build.json's include; tsc compiles what bench imports (as telegram.bench.ts does).
import { startFakeMatrix, unrefSdkRequestTimers, type FakeMatrix, type MxRequest } from '../test/fixtures/fake-matrix.js';
import { startFakeTelegram } from '../test/fixtures/fake-telegram.js';
import { knowsDevice, messagesFrom, quietSdkConsole, startMatrixClient } from '../test/fixtures/matrix-client.js';
import { scriptedAgent, type ScriptedTurn } from '../test/fixtures/scripted-agent.js';
import { until } from '../test/fixtures/until.js';
import type { BenchReport } from './report.js';
import { percentile, within } from './timing.js';

const ROOMS = 5;
/** The shipped pass streams longer: at a 2 s interval, 3 s hold the first preview and no edit (min_chars takes ~0.8 s to reach). */
const STREAM_MS = { shipped: 7000, short: 3000 };
const DELTA_MS = 20;

type Cfg = ReturnType<typeof defaultConfig>;

function rss(): number {
  globalThis.gc?.();
  return process.memoryUsage().rss / (1024 * 1024);
}

/** The bot's m.room.encrypted PUTs into `room` (its sends and m.replace edits: all the bot's messages in an encrypted room). */
const botPuts = (fake: FakeMatrix, bot: string, room: string): MxRequest[] =>
  fake.requests.filter((q) => q.method === 'PUT' && q.userId === bot && q.path.includes(`/rooms/${encodeURIComponent(room)}/send/m.room.encrypted/`));

/** svc's account on the fake homeserver, logged in and syncing: the transport as bin/messengers.ts builds it, a scripted agent behind it. */
async function startBot(fake: FakeMatrix, bot: string, allowed: string[], storeDir: string) {
  const log = new MemoryEventLog();
  const bus = new Bus({ log });
  const agent = scriptedAgent(bus);
  const base = defaultConfig();
  const config: Cfg = { ...base, matrix: { ...base.matrix, homeserver: fake.baseUrl, user_id: bot, password: 'bot-pw', allowed_users: allowed } };
  const logs: string[] = [];
  const mx = new MatrixTransport({
    bus,
    agent: 'main',
    config: () => config,
    storeDir,
    // config.streaming is read when a stream starts: replacing it between passes changes the pacing of the next answers.
    streams: (editor) => startEditStream(editor, config.streaming, { now: () => Date.now() }),
    accepted: (userId) => acceptedEvents(log, 'matrix', userId),
    owed: () => [],
    log: (level, msg) => logs.push(`${level} ${msg}`),
  });
  mx.start();
  await until(() => `matrix to run (${JSON.stringify(mx.health())}; ${logs.join(' | ')})`, () => mx.health().state === 'running', 30_000);
  const close = async () => {
    await mx.stop();
    bus.close();
  };
  return { mx, agent, config, logs, close };
}

/**
 * RSS (after gc) with nothing started, with the Telegram transport long-polling the fake Bot API, and with
 * the Matrix transport beside it (logged in, Rust crypto up, synced, in one encrypted room) — the daemon
 * with both transports idle. No person's SDK client runs here: it would bring a second crypto machine.
 */
async function idleMemory(report: BenchReport): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-mx-'));
  const tgFake = await startFakeTelegram({ enforceLimits: true });
  const mxFake = await startFakeMatrix();
  const bus = new Bus({ log: new MemoryEventLog() });
  const tgConfig: Cfg = { ...defaultConfig(), telegram_token: tgFake.token, telegram_api_root: tgFake.apiRoot, allowed_user_ids: [1001] };
  const tg = new TelegramTransport({
    bus,
    agent: 'main',
    config: () => tgConfig,
    sender: (id) => ({ id: `u${id}`, role: 'operator', allowed_agents: ['main'] }),
    streams: (editor) => startEditStream(editor, tgConfig.streaming, { now: () => Date.now() }),
    acceptedUpTo: () => 0,
    owed: () => [],
    log: () => {},
  });
  let mx: Awaited<ReturnType<typeof startBot>> | undefined;
  try {
    await sleep(500);
    const before = rss();
    tg.start();
    await tgFake.waitForCall('the bot to start polling', (c) => c.method === 'getUpdates');
    await sleep(1000);
    const withTelegram = rss();

    const bot = mxFake.registerUser('svcbot', 'bot-pw');
    const alice = mxFake.registerUser('alice', 'alice-pw');
    mxFake.createRoom(alice, { encrypted: true, members: [alice, bot], name: 'alice and svc' });
    mx = await startBot(mxFake, bot, [alice], join(dir, 'matrix_store'));
    // Past the first sync and the key uploads, with the next sync held: what is left is the idle cost.
    await mxFake.waitFor('a held sync', (q) => q.path.endsWith('/sync') && q.userId === bot && q.query.since !== undefined, 10_000).catch(() => undefined);
    await sleep(1500);
    const both = rss();
    await mx.close();
    mx = undefined;
    await tg.stop();
    await sleep(500);
    const after = rss();

    report.figure('RSS before any transport (baseline)', before, 'MiB');
    report.figure('RSS with Telegram idle (long polling)', withTelegram, 'MiB', { ratio: withTelegram / before, against: 'baseline' });
    report.figure('RSS with Telegram and Matrix idle (logged in, crypto up, synced)', both, 'MiB', { ratio: both / before, against: 'baseline' });
    report.figure('  Telegram adds', withTelegram - before, 'MiB');
    report.figure('  Matrix adds on top (SDK client + WASM Rust crypto)', both - withTelegram, 'MiB', { ratio: (both - withTelegram) / Math.max(0.001, withTelegram - before), against: "Telegram's addition" });
    // WebAssembly memory only grows: the crypto machine's pages stay with the process after stopClient().
    report.figure('RSS once both are stopped', after, 'MiB', { ratio: after / before, against: 'baseline' });
    report.note('baseline', 'every bench module is imported already (matrix-js-sdk and grammY code loaded); the Rust crypto WASM is instantiated at login');
    const m = process.memoryUsage();
    report.note('process once both are stopped', `heapUsed ${(m.heapUsed / 2 ** 20).toFixed(1)} MiB, external ${(m.external / 2 ** 20).toFixed(1)} MiB, arrayBuffers ${(m.arrayBuffers / 2 ** 20).toFixed(1)} MiB`);
  } finally {
    await mx?.close();
    await tg.stop();
    bus.close();
    await tgFake.close();
    await mxFake.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

interface People {
  fake: FakeMatrix;
  bot: string;
  users: { userId: string; client: MatrixClient; room: string }[];
}

/** One answer streamed into every room at once, a delta every DELTA_MS for `streamMs`, at `interval` seconds between edits. */
async function streamPass(report: BenchReport, w: People, b: Awaited<ReturnType<typeof startBot>>, interval: number, streamMs: number): Promise<void> {
  b.config.streaming = { ...b.config.streaming, edit_interval_seconds: interval };
  const sc = b.config.streaming;
  report.note('streaming config', `edit_interval_seconds ${interval}, min_chars ${sc.min_chars}, idle_ms ${sc.idle_ms}, sentence_break ${sc.sentence_break}`);
  const asked = Date.now();
  await Promise.all(w.users.map((u) => u.client.sendMessage(u.room, { msgtype: MsgType.Text, body: 'stream something long' })));
  const turns = new Map<string, ScriptedTurn>();
  const byChat = new Map(w.users.map((u) => [matrixChatId(u.room), u.room]));
  for (let i = 0; i < w.users.length; i++) {
    const turn = await b.agent.next();
    turns.set(byChat.get(turn.msg.chat_id)!, turn);
  }
  const askedSecs = (Date.now() - asked) / 1000;
  const said = new Map<string, string>(w.users.map((u) => [u.room, '']));
  const emitted: Array<{ room: string; at: number }> = [];
  let seq = 0;
  const start = Date.now();
  // Sentence ends, so sentence_break never holds an edit back: what is measured is the pacing alone.
  await new Promise<void>((resolve) => {
    const tick = setInterval(() => {
      if (Date.now() - start >= streamMs) {
        clearInterval(tick);
        resolve();
        return;
      }
      const n = seq++;
      for (const [room, turn] of turns) {
        const delta = `k${n}. `;
        said.set(room, said.get(room)! + delta);
        emitted.push({ room, at: Date.now() });
        turn.say(delta);
      }
    }, DELTA_MS);
  });
  const streamEnd = Date.now();
  const streamSecs = (streamEnd - start) / 1000;
  for (const [room, turn] of turns) turn.end(said.get(room)!.trim());
  const lastStamp = `k${seq - 1}.`;

  // What every person's client shows once decrypted, edits applied: the last message of the bot holds the whole answer.
  const finals = new Map<string, string>();
  await within(
    Promise.all(
      w.users.map((u) =>
        until(
          `${u.userId} to read the final answer`,
          async () => {
            const body = (await messagesFrom(u.client, u.room, w.bot)).at(-1)?.getContent().body as string | undefined;
            if (body?.includes(lastStamp)) finals.set(u.room, body);
            return body?.includes(lastStamp);
          },
          20_000,
        ),
      ),
    ),
    'final answers',
    25_000,
  ).catch((e: Error) => report.note('final answers', `not all read: ${e.message}`));
  const finalSecs = (Date.now() - streamEnd) / 1000;

  const budget = 1 / interval;
  const perRoom = w.users.map((u) => botPuts(w.fake, w.bot, u.room).filter((q) => q.at >= start));
  const during = perRoom.map((qs) => qs.filter((q) => q.at < streamEnd));
  const rates = during.map((qs) => qs.length / streamSecs);
  const mean = rates.reduce((a, b) => a + b, 0) / rates.length;
  const busiest = Math.max(...rates);
  report.figure(`encrypted sends + edits per room, mean (budget ${budget.toFixed(2)}/s)`, mean, '/s', { ratio: mean / budget, against: 'per-room budget' });
  report.figure('encrypted sends + edits per room, busiest room', busiest, '/s', { ratio: busiest / budget, against: 'per-room budget' });
  // The preview waits for min_chars: from a room's first PUT on, what is left is the edit pacing alone.
  const paced = during.filter((qs) => qs.length > 0).map((qs) => (qs.length - 1) / Math.max(0.001, (streamEnd - qs[0]!.at) / 1000));
  const pacedMean = paced.reduce((a, b) => a + b, 0) / Math.max(1, paced.length);
  report.figure('edits per room after its first preview, mean', pacedMean, '/s', { ratio: pacedMean / budget, against: 'per-room budget' });
  // The pace runs from one request's answer to the next one's start, so arrivals may come closer by the encryption jitter only.
  const gaps = during.flatMap((qs) => qs.slice(1).map((q, i) => q.at - qs[i]!.at));
  if (gaps.length) report.figure(`shortest gap between two streamed PUTs of one room (interval ${interval * 1000} ms)`, Math.min(...gaps), 'ms', { ratio: Math.min(...gaps) / (interval * 1000), against: 'interval' });
  else report.note('gaps', 'no room had two PUTs while streaming');
  // The final answer is not paced: it goes out once the turn ends (after an edit in flight, if any).
  const finalAfter = perRoom.filter((qs) => qs.length > 0).map((qs) => qs.at(-1)!.at - streamEnd);
  if (finalAfter.length) report.note('turn end → final answer PUT arrives', `${Math.min(...finalAfter)}–${Math.max(...finalAfter)} ms over the rooms (not paced)`);
  const whole = during.reduce((a, qs) => a + qs.length, 0) / streamSecs;
  report.figure(`encrypted sends + edits, whole bot (${ROOMS} × room budget = ${(ROOMS * budget).toFixed(1)}/s)`, whole, '/s', { ratio: whole / (ROOMS * budget), against: `${ROOMS} × room budget` });
  const failed = perRoom.flat().filter((q) => q.status !== 200).length;
  if (failed) report.note('refused PUTs', `${failed} answered other than 200`);

  // Ciphertext cannot be read on the server: the latency is say() → the next send/edit PUT of that room to arrive.
  const latencies: number[] = [];
  const afterPreview: number[] = [];
  let unanswered = 0;
  for (const e of emitted) {
    const qs = perRoom[w.users.findIndex((u) => u.room === e.room)]!;
    const q = qs.find((p) => p.at >= e.at);
    if (!q) {
      unanswered++;
      continue;
    }
    latencies.push(q.at - e.at);
    if (qs[0]!.at < e.at) afterPreview.push(q.at - e.at);
  }
  latencies.sort((a, b) => a - b);
  afterPreview.sort((a, b) => a - b);
  const ms = interval * 1000;
  report.figure('turn.say() → next encrypted PUT of that room arrives, p50', percentile(latencies, 0.5), 'ms', { ratio: percentile(latencies, 0.5) / ms, against: 'interval' });
  report.figure('turn.say() → next encrypted PUT of that room arrives, p99', percentile(latencies, 0.99), 'ms', { ratio: percentile(latencies, 0.99) / ms, against: 'interval' });
  report.figure('  the same for deltas after the first preview, p50', percentile(afterPreview, 0.5), 'ms', { ratio: percentile(afterPreview, 0.5) / ms, against: 'interval' });
  report.figure('  the same for deltas after the first preview, p99', percentile(afterPreview, 0.99), 'ms', { ratio: percentile(afterPreview, 0.99) / ms, against: 'interval' });
  const exact = w.users.filter((u) => finals.get(u.room) === said.get(u.room)!.trim()).length;
  report.note('final answer', `${exact}/${ROOMS} rooms read exactly the whole answer on the person's client (decrypted), ${finalSecs.toFixed(1)} s after the stream ended`);
  report.note(
    'deltas',
    `${emitted.length} over ${ROOMS} rooms in ${streamSecs.toFixed(1)} s (${emitted.length / ROOMS} of ${Math.floor(streamMs / DELTA_MS)} ticks: a late timer is a busy event loop; ${ROOMS} messages asked in ${askedSecs.toFixed(1)} s); ${unanswered} with no PUT after them; ${perRoom.flat().length} encrypted PUTs in all`,
  );
  const problems = b.logs.filter((l) => !l.startsWith('info'));
  if (problems.length) report.note('transport log', problems.slice(0, 3).join(' | '));
}

/**
 * ROOMS people, each with their own SDK client (in-memory Rust crypto) in an encrypted DM with svc's
 * account, all answered at once, streamed by m.replace edits: how close the edits come to the
 * configured pace and how long a delta waits for the PUT that carries it.
 */
async function concurrentStreams(report: BenchReport): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-mx-'));
  const fake = await startFakeMatrix();
  const bot = fake.registerUser('svcbot', 'bot-pw');
  const w: People = { fake, bot, users: [] };
  let b: Awaited<ReturnType<typeof startBot>> | undefined;
  try {
    const t0 = Date.now();
    const ids = Array.from({ length: ROOMS }, (_, i) => fake.registerUser(`user${i + 1}`, `pw${i + 1}`));
    const rooms = ids.map((id, i) => fake.createRoom(id, { encrypted: true, members: [id, bot], name: `user${i + 1} and svc` }));
    b = await startBot(fake, bot, ids, join(dir, 'matrix_store'));
    const clients = await Promise.all(ids.map((_, i) => startMatrixClient(fake, `user${i + 1}`, `pw${i + 1}`)));
    w.users = ids.map((userId, i) => ({ userId, client: clients[i]!, room: rooms[i]! }));
    const device = fake.requests.find((q) => q.userId === bot && q.deviceId)!.deviceId!;
    await Promise.all(clients.map((c) => knowsDevice(c, bot, device)));
    report.note('setup', `${ROOMS} people's clients and the bot up, each knowing the bot's device, in ${((Date.now() - t0) / 1000).toFixed(1)} s`);

    const shipped = defaultConfig().streaming.edit_interval_seconds;
    report.section(`matrix: ${ROOMS} concurrent streams in encrypted DMs, a delta every ${DELTA_MS} ms for ${STREAM_MS.shipped / 1000} s, shipped edit interval`);
    await streamPass(report, w, b, shipped, STREAM_MS.shipped);
    report.section(`matrix: the same for ${STREAM_MS.short / 1000} s with edit_interval_seconds 0.5`);
    await streamPass(report, w, b, 0.5, STREAM_MS.short);
    report.note('latency', 'from turn.say() to the arrival of the next m.room.encrypted PUT of that room (ciphertext: the server cannot see which delta it carries)');
  } finally {
    for (const u of w.users) u.client.stopClient();
    await b?.close();
    await fake.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The Matrix transport against the fake homeserver with real matrix-js-sdk and Rust crypto on both
 * sides: what it adds to an idle daemon beside Telegram, and streaming into several encrypted rooms
 * at once against the configured edit pace. Figures and ratios only, no timing asserted.
 */
export async function benchMatrix(report: BenchReport): Promise<void> {
  const loud = quietSdkConsole();
  const timers = unrefSdkRequestTimers();
  try {
    report.section('matrix: idle memory, Telegram and Matrix transports (fake Bot API, fake homeserver)');
    await idleMemory(report);
    await concurrentStreams(report);
  } finally {
    timers();
    loud();
  }
}
