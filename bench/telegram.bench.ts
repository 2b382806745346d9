import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import sharp from 'sharp';
import { normaliseImage, startEditStream } from '../actors/index.js';
import { Bus } from '../bus/index.js';
import { TelegramTransport } from '../edges/index.js';
import { defaultConfig } from '../schemas/index.js';
import { MemoryEventLog } from '../store/index.js';
// The fixtures are not in tsconfig.build.json's include, but tsc compiles what bench imports (as bus.bench.ts does with any-event).
import { startFakeTelegram, type FakeTelegram, type TgCall } from '../test/fixtures/fake-telegram.js';
import { scriptedAgent, type ScriptedTurn } from '../test/fixtures/scripted-agent.js';
import type { BenchReport } from './report.js';
import { percentile, within } from './timing.js';

const CHATS = 10;
const STREAM_MS = 5000;
const DELTA_MS = 20;
const BOT_BUDGET_PER_S = 30;
const USERS = Array.from({ length: CHATS }, (_, i) => 1001 + i);
/** Methods that change what a chat shows: the ones Telegram's flood control counts. */
const UPDATES = new Set(['sendMessage', 'editMessageText']);

type Cfg = ReturnType<typeof defaultConfig>;

async function rig(fake: FakeTelegram, streaming: Partial<Cfg['streaming']> = {}) {
  const bus = new Bus({ log: new MemoryEventLog() });
  const agent = scriptedAgent(bus);
  const base = defaultConfig();
  const config: Cfg = { ...base, telegram_token: fake.token, telegram_api_root: fake.apiRoot, allowed_user_ids: USERS, streaming: { ...base.streaming, ...streaming } };
  const logs: string[] = [];
  const tg = new TelegramTransport({
    bus,
    agent: 'main',
    config: () => config,
    sender: (id) => ({ id: `u${id}`, role: 'operator', allowed_agents: ['main'] }),
    streams: (editor) => startEditStream(editor, config.streaming, { now: () => Date.now() }),
    acceptedUpTo: () => 0,
    owed: () => [],
    log: (level, msg) => logs.push(`${level} ${msg}`),
  });
  const close = async () => {
    await tg.stop();
    bus.close();
  };
  return { bus, agent, tg, config, logs, close };
}

function rss(): number {
  globalThis.gc?.();
  return process.memoryUsage().rss / (1024 * 1024);
}

/** What an idle bot costs: the process before the transport exists, and once it long-polls with nothing to do. */
async function idleMemory(report: BenchReport): Promise<void> {
  const fake = await startFakeTelegram({ enforceLimits: true });
  const before = rss();
  const s = await rig(fake);
  try {
    s.tg.start();
    await fake.waitForCall('the bot to start polling', (c) => c.method === 'getUpdates');
    // Long enough for the first poll to be held and anything start allocates to settle.
    await sleep(1000);
    const after = rss();
    report.figure('RSS before the transport', before, 'MiB');
    report.figure('RSS with the transport started, idle (long polling)', after, 'MiB');
    report.figure('  difference', after - before, 'MiB');
  } finally {
    await s.close();
    await fake.close();
  }
}

/**
 * CHATS answers streamed at once, one delta every DELTA_MS for STREAM_MS each, against the fake Bot
 * API enforcing Telegram's limits. Each delta carries its number, so the first send or edit whose
 * text holds it tells how long the chat waited to see it.
 */
async function concurrentStreams(report: BenchReport, interval: number): Promise<void> {
  const fake = await startFakeTelegram({ enforceLimits: true });
  const s = await rig(fake, { edit_interval_seconds: interval });
  const sc = s.config.streaming;
  report.note('streaming config', `edit_interval_seconds ${interval}, min_chars ${sc.min_chars}, idle_ms ${sc.idle_ms}, sentence_break ${sc.sentence_break}`);
  try {
    s.tg.start();
    await fake.waitForCall('the bot to start polling', (c) => c.method === 'getUpdates');
    for (const id of USERS) fake.userMessage({ from: { id }, text: 'stream something long' });
    const turns = new Map<number, ScriptedTurn>();
    for (let i = 0; i < CHATS; i++) {
      const turn = await s.agent.next();
      turns.set(turn.msg.chat_id, turn);
    }
    const emitted: Array<{ chat: number; stamp: string; at: number }> = [];
    const said = new Map<number, string>(USERS.map((id) => [id, '']));
    let seq = 0;
    const start = Date.now();
    // Sentence ends, so sentence_break never holds an edit back: what is measured is the pacing alone.
    await new Promise<void>((resolve) => {
      const tick = setInterval(() => {
        if (Date.now() - start >= STREAM_MS) {
          clearInterval(tick);
          resolve();
          return;
        }
        const n = seq++;
        for (const [chat, turn] of turns) {
          const stamp = `k${n}.`;
          const delta = `${stamp} `;
          said.set(chat, said.get(chat)! + delta);
          emitted.push({ chat, stamp, at: Date.now() });
          turn.say(delta);
        }
      }, DELTA_MS);
    });
    const streamEnd = Date.now();
    const streamSecs = (streamEnd - start) / 1000;
    for (const [chat, turn] of turns) turn.end(said.get(chat)!);
    const lastStamp = `k${seq - 1}.`;
    await within(
      Promise.all(
        USERS.map((chat) =>
          fake.waitForCall(`chat ${chat}'s final answer`, (c) => c.at >= streamEnd && c.method === 'editMessageText' && c.status === 200 && c.params.chat_id === chat && String(c.params.text).includes(lastStamp), 15_000),
        ),
      ),
      'final answers',
      20_000,
    );

    const updates = fake.calls.filter((c) => UPDATES.has(c.method) && c.at >= start);
    const during = updates.filter((c) => c.at < streamEnd && c.status === 200);
    const perChat = USERS.map((chat) => during.filter((c) => c.params.chat_id === chat));
    const budget = 1 / interval;
    const editRates = perChat.map((cs) => cs.filter((c) => c.method === 'editMessageText').length / streamSecs);
    const meanRate = editRates.reduce((a, b) => a + b, 0) / CHATS;
    const maxRate = Math.max(...editRates);
    // Over every update, final answers included: Telegram's limits do not stop when the stream does.
    const gaps = USERS.map((chat) => updates.filter((c) => c.params.chat_id === chat)).flatMap((cs) => cs.slice(1).map((c, i) => c.at - cs[i]!.at));
    report.figure(`edits delivered per chat, mean (budget ${budget.toFixed(2)}/s)`, meanRate, '/s', { ratio: meanRate / budget, against: 'per-chat budget' });
    report.figure('edits delivered per chat, busiest chat', maxRate, '/s', { ratio: maxRate / budget, against: 'per-chat budget', target: { op: '<=', value: budget } });
    // Pacing counts from when the driver starts a request, and the throttler may hold one back, so two can reach
    // Telegram closer than the interval; what must hold is the throttler's 1 s per private chat (less clock jitter).
    report.figure(`shortest gap between two updates of one chat (interval ${interval * 1000} ms)`, Math.min(...gaps), 'ms', { target: { op: '>=', value: 900 } });
    const botEdits = during.filter((c) => c.method === 'editMessageText').length / streamSecs;
    report.figure(`edits delivered, whole bot (budget ${BOT_BUDGET_PER_S}/s)`, botEdits, '/s', { ratio: botEdits / BOT_BUDGET_PER_S, against: 'bot budget' });
    const peak = Math.max(...updates.map((c) => updates.filter((d) => d.at >= c.at && d.at < c.at + 1000).length));
    report.figure('sends + edits in the busiest second, whole bot', peak, '/s', { ratio: peak / BOT_BUDGET_PER_S, against: 'bot budget', target: { op: '<=', value: BOT_BUDGET_PER_S } });
    const limited = fake.rateLimitReport();
    report.figure('429 Too Many Requests answered', limited.given, 'responses', { target: { op: '<=', value: 0 } });

    const firstShown = (chat: number, stamp: string): TgCall | undefined => updates.find((c) => c.params.chat_id === chat && String(c.params.text).includes(stamp));
    const latencies: number[] = [];
    let shownAfterEnd = 0;
    for (const e of emitted) {
      const c = firstShown(e.chat, e.stamp);
      if (!c) throw new Error(`bench: ${e.stamp} in chat ${e.chat} never reached Telegram`);
      if (c.at >= streamEnd) shownAfterEnd++;
      latencies.push(c.at - e.at);
    }
    latencies.sort((a, b) => a - b);
    // The delta that made the answer long enough is the last one the first preview holds.
    const firstPreview = USERS.map((chat) => {
      const send = updates.find((c) => c.method === 'sendMessage' && c.params.chat_id === chat)!;
      const held = emitted.filter((e) => e.chat === chat && String(send.params.text).includes(e.stamp));
      return send.at - held.at(-1)!.at;
    }).sort((a, b) => a - b);
    report.figure('delta emitted → first send/edit carrying it arrives, p50', percentile(latencies, 0.5), 'ms');
    report.figure('delta emitted → first send/edit carrying it arrives, p99', percentile(latencies, 0.99), 'ms');
    report.figure(`first preview: min_chars reached → sendMessage arrives, median`, percentile(firstPreview, 0.5), 'ms');
    report.note('deltas', `${emitted.length} over ${CHATS} chats in ${streamSecs.toFixed(1)} s; ${shownAfterEnd} first shown after the stream ended; ${updates.length} sends/edits in all`);
    const problems = s.logs.filter((l) => !l.startsWith('info'));
    if (problems.length) report.note('transport log', problems.slice(0, 3).join(' | '));
  } finally {
    await s.close();
    await fake.close();
  }
}

/**
 * The Telegram transport under load, against the fake Bot API with Telegram's flood control on: how
 * close paced edits come to the per-chat and per-bot budgets without a single 429, how long a chat
 * waits to see a delta, and what an idle bot costs in memory. The shipped interval, then a shorter
 * one that the throttler (1 request per second per private chat) must hold back.
 */
export async function benchTelegram(report: BenchReport): Promise<void> {
  report.section('telegram (fake Bot API, flood control enforced)');
  await idleMemory(report);
  const shipped = defaultConfig().streaming.edit_interval_seconds;
  report.section(`telegram: ${CHATS} concurrent streams, a delta every ${DELTA_MS} ms for ${STREAM_MS / 1000} s, shipped edit interval`);
  await concurrentStreams(report, shipped);
  report.section(`telegram: the same with edit_interval_seconds 0.5 (below the throttler's 1/s per chat)`);
  await concurrentStreams(report, 0.5);
  report.section('incoming images: a 12 MP phone photo normalised by the default ImageConfig');
  await imageNormalisation(report);
}

/**
 * What an incoming 12 MP photo costs before the agent is asked: normaliseImage (EXIF turn, fit
 * in max_dimension, re-encode as webp) against the baseline of decoding and re-encoding it as it
 * is (the JPEG it came as, no resize), which any handling of the photo pays.
 */
async function imageNormalisation(report: BenchReport): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-img-'));
  try {
    // Noise, not a flat colour: a flat image compresses to nothing and measures nothing.
    const raw = Buffer.alloc(4000 * 3000 * 3);
    for (let i = 0; i < raw.length; i++) raw[i] = (i * 2654435761) >>> 24;
    const photo = await sharp(raw, { raw: { width: 4000, height: 3000, channels: 3 } }).jpeg({ quality: 90 }).toBuffer();
    const cfg = defaultConfig().image;
    const runs = 5;
    const times: number[] = [];
    const baseline: number[] = [];
    for (let i = 0; i < runs; i++) {
      const path = join(dir, `p${i}.jpg`);
      writeFileSync(path, photo);
      let t0 = performance.now();
      await sharp(path).jpeg({ quality: 90 }).toFile(join(dir, `b${i}.jpg`));
      baseline.push(performance.now() - t0);
      t0 = performance.now();
      await normaliseImage(path, cfg);
      times.push(performance.now() - t0);
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    report.note('photo', `4000×3000 JPEG, ${(photo.length / 1024 / 1024).toFixed(1)} MiB; image config ${JSON.stringify(cfg)}`);
    report.figure('decode + re-encode as it is (baseline), median', median(baseline), 'ms');
    report.figure(`normaliseImage → ${cfg.output_format} ≤ ${cfg.max_dimension} px, median`, median(times), 'ms', { ratio: median(times) / median(baseline), against: 'baseline' });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
