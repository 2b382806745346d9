// The direct API's /ws end to end: real uWS server on port 0, an independent client (ws + tweetnacl,
// none of the server's crypto), and a fake agent runtime registered on a real Bus.
import t, { type Test } from 'tap';
import WebSocket from 'ws';
import nacl from 'tweetnacl';
import { createActor, type AnyStateMachine } from 'xstate';
import { writeFileSync, mkdirSync } from 'node:fs';
import { setImmediate as tick } from 'node:timers/promises';
import { Bus, serveAgents, turnStreamOf } from '../../bus/index.js';
import type { DirectLimits } from '../../edges/index.js';
import { startDirectApi, type DirectApiServer } from '../fixtures/direct-api.js';
import { connectionMachine, type ConnectionFact } from '../../machines/index.js';
import { AGENT_COMMANDS, defaultConfig, type AgentConfig, type AgentMessage, type AnyEnvelope, type TurnChunk, type TurnOutcome } from '../../schemas/index.js';
import { MemoryEventLog, homePaths } from '../../store/index.js';
import { AuthFailureLimit } from '../../edges/direct/auth-failure-limit.js';
import { attemptLimitKey } from '../../edges/http/client-address.js';
import { anyEvent } from '../fixtures/any-event.js';
import { until } from '../fixtures/until.js';

type T = Test;
type Frame = Record<string, any>;

const TOKEN = 'test-token-0123456789abcdef';
const PROVIDERS = [{ id: 'claude', name: 'Claude Code', models: ['opus', 'sonnet'] }];

// ------------------------------------------------------------------ fake runtime

interface Runtime {
  calls: AgentMessage[];
  /** What the edge handed to the runtime, in the order it did (before the fake's own lanes). */
  accepted: AgentMessage[];
  /** request_ids in the order turns started and ended. */
  trace: string[];
  completed: string[];
  held: Map<string, { chat_id: number; release: (text: string) => void }>;
  mode: 'normal' | 'throw';
}

function fakeRuntime(bus: Bus): Runtime {
  const rt: Runtime = { calls: [], accepted: [], trace: [], completed: [], held: new Map(), mode: 'normal' };
  const out = turnStreamOf(bus);
  const run = async (m: AgentMessage, key: string): Promise<TurnOutcome> => {
    rt.calls.push(m);
    const base = { request_id: m.request_id, turn_id: `t-${m.request_id}`, agent: 'main', session_key: key, transport: 'api', chat_id: m.chat_id, topic_id: m.topic_id };
    const chunk = (type: TurnChunk['type'], data: Record<string, unknown>) => out.chunk({ stream: `turn:${base.turn_id}`, type, data: { ...base, ...data } } as TurnChunk);
    rt.trace.push(`start ${m.text}`);
    let text = `echo: ${m.text}`;
    let status: TurnOutcome['status'] = 'completed';
    if (m.text.startsWith('stream')) {
      chunk('turn.system_status', { status: 'thinking' });
      for (let i = 0; i < 5; i++) chunk('turn.text_delta', { text: `d${i}` });
      chunk('turn.tool_activity', { tool: 'Read' });
      chunk('turn.system_status', { status: null });
      text = 'd0d1d2d3d4 <file:/tmp/x.png>';
    } else if (m.text.startsWith('hold')) {
      chunk('turn.text_delta', { text: `holding ${m.text}` });
      text = await new Promise<string>((resolve) => rt.held.set(m.request_id, { chat_id: m.chat_id, release: resolve }));
      rt.held.delete(m.request_id);
      if (text === 'aborted') status = 'aborted';
    } else if (m.text === 'burst') {
      // 2,000 chunks of 200 characters in one tick: merged, but never into one giant frame.
      for (let i = 0; i < 2000; i++) chunk('turn.text_delta', { text: String(i % 10).repeat(200) });
      text = 'burst done';
    } else if (m.text === 'flood') {
      const big = 'x'.repeat(64 * 1024);
      for (let i = 0; i < 1500; i++) {
        chunk('turn.text_delta', { text: big });
        // The fake's behaviour: output over many turns of the loop, as a CLI's would come.
        if (i % 4 === 0) await tick();
      }
    } else {
      // The fake's behaviour: it answers on a later turn of the loop, never within accept.
      await tick();
    }
    rt.trace.push(`end ${m.text}`);
    rt.completed.push(m.text);
    return {
      request_id: m.request_id, turn_id: base.turn_id, agent: 'main', session_key: key, status, text, is_error: false,
      stream_fallback: false, files: text.includes('<file:') ? [{ path: '/tmp/x.png', name: 'x.png', is_image: true }] : [],
      provider: 'claude', model: 'opus', session_id: null, usage: null, cost_usd: null, duration_ms: 1, reason: null,
    };
  };
  // One turn at a time per session key, as the real runtime's lanes run them.
  const lanes = new Map<string, Promise<unknown>>();
  serveAgents(bus, 'fake-runtime', {
    accept: (m) => {
      rt.accepted.push(m);
      if (rt.mode === 'throw') {
        rt.calls.push(m);
        throw new Error('runtime exploded');
      }
      const key = m.topic_id === null ? `api:${m.chat_id}` : `api:${m.chat_id}:${m.topic_id}`;
      const outcome = (lanes.get(key) ?? Promise.resolve()).then(() => run(m, key));
      lanes.set(key, outcome.catch(() => undefined));
      return { outcome };
    },
    abort: ({ chat_id }) => {
      let killed = 0;
      for (const h of [...rt.held.values()]) {
        if (h.chat_id === chat_id) {
          killed++;
          h.release('aborted');
        }
      }
      return { killed };
    },
    list: () => [],
  });
  return rt;
}

// ------------------------------------------------------------------ server

interface Env {
  bus: Bus;
  log: MemoryEventLog;
  server: DirectApiServer;
  url: string;
  cfg: AgentConfig;
  logs: { level: string; msg: string }[];
}

async function serve(
  t: T,
  opts: { limits?: Partial<DirectLimits>; runtime?: boolean; cfg?: (c: AgentConfig) => void; now?: () => number; machine?: AnyStateMachine } = {},
): Promise<Env & { rt: Runtime | null }> {
  const dir = t.testdir({});
  const paths = homePaths(dir);
  mkdirSync(paths.configDir, { recursive: true });
  writeFileSync(paths.configFile, JSON.stringify({ api: { enabled: true, token: TOKEN } }));
  const cfg = defaultConfig();
  cfg.api = { ...cfg.api, enabled: true, token: TOKEN, chat_id: 0 };
  cfg.allowed_user_ids = [4242];
  opts.cfg?.(cfg);
  const log = new MemoryEventLog();
  const bus = new Bus({ log });
  const logs: { level: string; msg: string }[] = [];
  bus.transient$.subscribe((m) => {
    if (m.type === 'log.line') logs.push(m.data as { level: string; msg: string });
  });
  const rt = opts.runtime === false ? null : fakeRuntime(bus);
  const server = (await startDirectApi({
    bus, config: () => cfg, paths, providers: () => PROVIDERS, connectionMachine: opts.machine ?? connectionMachine,
    host: '127.0.0.1', port: 0, ...(opts.limits ? { limits: opts.limits } : {}), ...(opts.now ? { now: opts.now } : {}),
  }))!;
  t.teardown(() => {
    server.close();
    bus.close();
  });
  return { bus, log, server, url: `ws://127.0.0.1:${server.port}/ws`, cfg, logs, rt };
}

// ------------------------------------------------------------------ independent client

class Client {
  readonly ws: WebSocket;
  readonly keys = nacl.box.keyPair();
  shared: Uint8Array | null = null;
  /** Plaintext frames before and including auth_ok; decrypted frames after. */
  readonly frames: Frame[] = [];
  readonly raw: string[] = [];
  undecryptable = 0;
  closed: Promise<{ code: number; reason: string }>;
  isClosed = false;
  private waiters: (() => void)[] = [];

  constructor(url: string) {
    this.ws = new WebSocket(url);
    this.closed = new Promise((resolve) => {
      this.ws.on('close', (code, reason) => {
        this.isClosed = true;
        resolve({ code, reason: reason.toString() });
        this.wake();
      });
    });
    this.ws.on('error', () => undefined);
    this.ws.on('message', (data, isBinary) => {
      const text = isBinary ? '' : data.toString();
      this.raw.push(text);
      if (!this.shared) {
        const f = JSON.parse(text) as Frame;
        this.frames.push(f);
        if (f.type === 'auth_ok') {
          this.shared = nacl.box.before(Buffer.from(f.e2e_pk, 'base64'), this.keys.secretKey);
        }
      } else {
        const bytes = Buffer.from(text, 'base64');
        const opened = nacl.box.open.after(bytes.subarray(24), bytes.subarray(0, 24), this.shared);
        if (!opened) this.undecryptable++;
        else this.frames.push(JSON.parse(Buffer.from(opened).toString('utf8')) as Frame);
      }
      this.wake();
    });
  }

  static async open(url: string): Promise<Client> {
    const c = new Client(url);
    await new Promise<void>((resolve, reject) => {
      c.ws.once('open', () => resolve());
      c.ws.once('error', reject);
    });
    return c;
  }

  static async authed(url: string, extra: Frame = {}): Promise<Client> {
    const c = await Client.open(url);
    c.sendPlain({ type: 'auth', token: TOKEN, e2e_pk: Buffer.from(c.keys.publicKey).toString('base64'), ...extra });
    await c.next((f) => f.type === 'auth_ok');
    return c;
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  sendPlain(obj: unknown): void {
    this.ws.send(JSON.stringify(obj));
  }

  /** Returns the wire text, so a test can replay it. */
  seal(obj: unknown, nonce = nacl.randomBytes(24)): string {
    const box = nacl.box.after(Buffer.from(JSON.stringify(obj)), nonce, this.shared!);
    return Buffer.concat([nonce, box]).toString('base64');
  }

  sendSealed(obj: unknown): string {
    const text = this.seal(obj);
    this.ws.send(text);
    return text;
  }

  /** The first frame at or after `from` matching `pred`. */
  async next(pred: (f: Frame) => boolean, from = 0, ms = 5000): Promise<Frame> {
    const end = Date.now() + ms;
    for (;;) {
      const hit = this.frames.slice(from).find(pred);
      if (hit) return hit;
      if (this.isClosed) throw new Error(`closed while waiting; frames: ${JSON.stringify(this.frames).slice(0, 500)}`);
      const left = end - Date.now();
      if (left <= 0) throw new Error(`timed out; frames: ${JSON.stringify(this.frames).slice(0, 500)}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  async count(n: number, pred: (f: Frame) => boolean, ms = 10000): Promise<Frame[]> {
    const end = Date.now() + ms;
    for (;;) {
      const hits = this.frames.filter(pred);
      if (hits.length >= n) return hits;
      if (this.isClosed || Date.now() > end) throw new Error(`saw ${hits.length} of ${n} frames`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, end - Date.now());
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  close(): void {
    this.ws.close();
  }
}

const facts = (env: Env, stream?: string) => env.log.read().filter((e: AnyEnvelope) => e.stream.startsWith('conn:') && (!stream || e.stream === stream));
const pk = (c: Client) => Buffer.from(c.keys.publicKey).toString('base64');

// ------------------------------------------------------------------ tests

await t.test('handshake, streamed turn in order, facts without contents', async (t) => {
  const env = await serve(t);
  const c = await Client.open(env.url);
  c.sendPlain({ type: 'auth', token: TOKEN, e2e_pk: pk(c), chat_id: 5, channel_id: 9 });
  const ok = await c.next((f) => f.type === 'auth_ok');
  t.same(Object.keys(ok).sort(), ['active_model', 'active_provider', 'channel_id', 'chat_id', 'e2e_pk', 'providers', 'type']);
  t.match(ok, { chat_id: 5, channel_id: 9, providers: PROVIDERS, active_provider: env.cfg.provider, active_model: env.cfg.model });
  t.equal(Buffer.from(ok.e2e_pk, 'base64').length, 32);
  t.equal(c.raw.length, 1, 'auth_ok is the only plaintext frame');

  const secret = 'stream please, secret words';
  c.sendSealed({ type: 'message', text: secret });
  await c.next((f) => f.type === 'result');
  t.same(c.frames.slice(1), [
    { type: 'system_status', data: 'thinking' },
    // Chunks streamed within one tick reach the client as one delta, in order.
    { type: 'text_delta', data: 'd0d1d2d3d4' },
    { type: 'tool_activity', data: 'Read' },
    { type: 'system_status', data: null },
    { type: 'result', text: 'd0d1d2d3d4 <file:/tmp/x.png>', stream_fallback: false, files: [{ path: '/tmp/x.png', name: 'x.png', is_image: true }] },
  ]);
  t.match(env.rt!.calls[0], { agent: 'main', transport: 'api', chat_id: 5, topic_id: 9, text: secret, principal: { role: null, allowed_agents: [] }, kind: 'foreground' });
  t.equal(c.undecryptable, 0);

  const health = await fetch(`http://127.0.0.1:${env.server.port}/health`, { headers: { connection: 'close' } });
  t.same(await health.json(), { status: 'ok', connections: 1 });

  c.close();
  await c.closed;
  await until('closed fact', () => facts(env).some((e) => e.type === 'connection.closed'));
  const mine = facts(env);
  t.same(mine.map((e) => e.type), ['connection.authenticated', 'connection.closed']);
  t.same(mine[0]!.data, { surface: 'direct', chat_id: 5, channel_id: 9 });
  t.match(mine[1]!.data, { reason: 'client' });
  t.notMatch(JSON.stringify(env.log.read()), /secret words/, 'message contents are never persisted');
  const h2 = await fetch(`http://127.0.0.1:${env.server.port}/health`, { headers: { connection: 'close' } });
  t.same(await h2.json(), { status: 'ok', connections: 0 });
});

await t.test('chat_id and channel_id fall back per SPEC; bad values are ignored', async (t) => {
  const env = await serve(t);
  for (const [extra, chat, channel] of [
    [{}, 4242, undefined],
    [{ chat_id: -3, channel_id: 0 }, 4242, undefined],
    [{ chat_id: 1.5, channel_id: '7' }, 4242, undefined],
    [{ chat_id: 12 }, 12, undefined],
  ] as const) {
    const c = await Client.authed(env.url, extra);
    t.equal(c.frames[0]!.chat_id, chat, JSON.stringify(extra));
    t.equal(c.frames[0]!.channel_id, channel);
    c.close();
  }
  env.cfg.api.chat_id = 31;
  const c = await Client.authed(env.url);
  t.equal(c.frames[0]!.chat_id, 31, 'api.chat_id before allowed_user_ids');
  c.close();
});

await t.test('every authentication rejection is a plaintext error followed by a close, and writes nothing', async (t) => {
  const env = await serve(t, { limits: { authTimeoutMs: 150, authFailuresPerWindow: 100 } });
  const expectReject = async (c: Client, code: string) => {
    const closed = await c.closed;
    t.equal(c.frames.length, 1, `${code}: one frame`);
    t.match(c.frames[0], { type: 'error', code, message: String });
    t.equal(closed.code, 1008, `${code}: closed with policy violation`);
  };

  await expectReject(await Client.open(env.url), 'auth_timeout');

  const cases: [string, (c: Client) => void][] = [
    ['auth_required', (c) => c.sendPlain({ type: 'message', text: 'hi' })],
    ['auth_required', (c) => c.ws.send('not json at all')],
    ['auth_required', (c) => c.ws.send(Buffer.from([1, 2, 3]), { binary: true })],
    ['auth_required', (c) => c.sendPlain([{ type: 'auth' }])],
    ['auth_failed', (c) => c.sendPlain({ type: 'auth', token: 'wrong', e2e_pk: pk(c) })],
    ['auth_failed', (c) => c.sendPlain({ type: 'auth', e2e_pk: pk(c) })],
    ['auth_failed', (c) => c.sendPlain({ type: 'auth', token: TOKEN.slice(0, -1), e2e_pk: pk(c) })],
    ['auth_failed', (c) => c.sendPlain({ type: 'auth', token: 42, e2e_pk: pk(c) })],
    ['auth_failed', (c) => c.sendPlain({ type: 'auth', token: TOKEN })],
    ['auth_failed', (c) => c.sendPlain({ type: 'auth', token: TOKEN, e2e_pk: 'not base64!' })],
    ['auth_failed', (c) => c.sendPlain({ type: 'auth', token: TOKEN, e2e_pk: Buffer.alloc(31, 9).toString('base64') })],
    ['auth_failed', (c) => c.sendPlain({ type: 'auth', token: TOKEN, e2e_pk: Buffer.alloc(32, 0).toString('base64') })],
    ['auth_failed', (c) => c.sendPlain({ type: 'auth', token: TOKEN, e2e_pk: pk(c).replace(/=$/, '') })],
  ];
  for (const [code, send] of cases) {
    const c = await Client.open(env.url);
    send(c);
    await expectReject(c, code);
  }
  const hub = env.server.hub;
  const total = () => [...hub.unauthenticated.totals.values()].reduce((a, b) => a + b, 0);
  await until('every close counted', () => total() === cases.length + 1);
  t.same(Object.fromEntries(hub.unauthenticated.totals), { auth_timeout: 1, auth_required: 4, auth_failed: 9 });
  t.same(env.log.read(), [], 'a connection that never authenticated leaves no event');
  const unauthLines = () => env.logs.filter((l) => /unauthenticated/.test(l.msg));
  t.equal(unauthLines().length, 0, 'and no log line per connection');
  hub.unauthenticated.flush();
  t.equal(unauthLines().length, 1, 'one summary line for the period');
  t.match(unauthLines()[0]!.msg, /^14 unauthenticated \/ws connection\(s\) rejected in the last 60 s \(auth_failed: 9, auth_required: 4, auth_timeout: 1\)/);
  hub.unauthenticated.flush();
  t.equal(unauthLines().length, 1, 'an empty period logs nothing');
  t.equal(env.rt!.calls.length, 0);
});

await t.test('failed authentications are limited per address: past the limit failures are answered late with 1013, the right token still gets in', async (t) => {
  let now = 1_000_000;
  const env = await serve(t, { limits: { authFailuresPerWindow: 3, authFailureWindowMs: 60_000, authFailureDelayMs: 1000 }, now: () => now });
  const failing = async () => {
    const c = await Client.open(env.url);
    c.sendPlain({ type: 'auth', token: 'wrong', e2e_pk: pk(c) });
    return c;
  };
  for (let i = 0; i < 3; i++) t.equal((await (await failing()).closed).code, 1008, `failure ${i + 1} is an ordinary refusal`);

  const late = await failing();
  const owner = await Client.authed(env.url);
  t.equal(owner.frames[0]!.type, 'auth_ok', 'the right token from the same address gets in at once');
  t.equal(late.frames.length, 0, 'while the failure past the limit is not answered yet');
  t.same(await late.closed, { code: 1013, reason: 'auth_rate_limited' }, 'then it closes with try-again-later');
  t.match(late.frames[0], { type: 'error', code: 'auth_failed', message: /too many failed attempts from this address, so failures are answered after 1000 ms/ });
  owner.close();
  await owner.closed;

  now += 60_000;
  t.equal((await (await failing()).closed).code, 1008, 'a new window starts without the limit');
  await until('closed fact', () => facts(env).some((e) => e.type === 'connection.closed'));
  t.same(env.log.read().map((e) => e.type), ['connection.authenticated', 'connection.closed'], 'only the authenticated connection left facts');
});

await t.test('sockets waiting to authenticate are capped per address: past the cap the oldest waiting one is closed, and the token always gets in', async (t) => {
  const env = await serve(t, { limits: { maxPendingPerAddress: 3 } });
  const silent = [await Client.open(env.url), await Client.open(env.url), await Client.open(env.url)];
  const owner = await Client.authed(env.url);
  t.equal(owner.frames[0]!.type, 'auth_ok', 'with the address at its cap, a client with the token still gets in');
  t.same(await silent[0]!.closed, { code: 1013, reason: 'auth_rate_limited' }, 'the oldest waiting socket made room');
  t.match(silent[0]!.frames[0], { type: 'error', code: 'auth_timeout', message: /too many connections from this address are waiting/ });
  t.notOk(silent[1]!.isClosed || silent[2]!.isClosed, 'the others still wait');
  const more = [await Client.open(env.url)];
  t.notOk(silent[1]!.isClosed, 'an authenticated socket does not count: three wait again, none over the cap');
  more.push(await Client.open(env.url));
  t.same(await silent[1]!.closed, { code: 1013, reason: 'auth_rate_limited' }, 'a fourth makes the next oldest go');
  t.equal(env.server.hub.unauthenticated.totals.get('evicted'), 2, 'counted, not stored');
  for (const c of [silent[2]!, ...more, owner]) c.close();
  await owner.closed;
  await until('closed fact', () => facts(env).some((e) => e.type === 'connection.closed'));
  t.same(env.log.read().map((e) => e.type), ['connection.authenticated', 'connection.closed'], 'only the owner left facts');
});

await t.test('the server-wide cap on waiting sockets closes the oldest too', async (t) => {
  const env = await serve(t, { limits: { maxPendingTotal: 2 } });
  const first = await Client.open(env.url);
  await Client.open(env.url);
  await Client.open(env.url);
  t.equal((await first.closed).code, 1013);
});

await t.test('auth-failure limit: given/when/then over the per-address rule', async (t) => {
  const limit = new AuthFailureLimit({ maxFailures: 2, windowMs: 1000, maxAddresses: 3 });
  t.equal(limit.fail('a', 0), 0, 'given no failures, when a fails once, then it may retry');
  t.equal(limit.fail('a', 10), 0);
  t.equal(limit.fail('a', 20), 980, 'when a fails past the limit, then it waits out the rest of its window');
  t.equal(limit.limitedForMs('a', 500), 500);
  t.equal(limit.limitedForMs('b', 500), 0, 'other addresses are not affected');
  t.equal(limit.limitedForMs('a', 1000), 0, 'given the window ended, then a may try again');
  t.equal(limit.size, 0, 'and its expired window is forgotten');
  for (const [i, addr] of ['p', 'q', 'r', 's', 't'].entries()) limit.fail(addr, 2000 + i);
  t.equal(limit.size, 3, 'when more addresses fail than the table holds, then the oldest windows are forgotten');
  t.equal(limit.fail('s', 2100), 0);
  t.equal(limit.fail('s', 2101), 902, 'a remembered address keeps its count: its third failure trips');
  t.equal(limit.fail('p', 2102) + limit.fail('p', 2103), 0, 'a forgotten address counts from zero again');

  const v6 = (last: string) => `2001:0db8:0001:0002:0000:0000:0000:${last}`;
  t.equal(attemptLimitKey(v6('0001')), attemptLimitKey(v6('beef')), 'addresses of one IPv6 /64 share a window');
  t.equal(attemptLimitKey(v6('0001')), '2001:db8:1:2::/64');
  t.equal(attemptLimitKey('2001:db8:1:2::beef'), attemptLimitKey(v6('0001')), 'the short spelling is the same /64');
  t.not(attemptLimitKey(v6('0001')), attemptLimitKey('2001:0db8:0001:0003:0000:0000:0000:0001'), 'another /64 does not');
  t.equal(attemptLimitKey('0000:0000:0000:0000:0000:ffff:c0a8:0001'), '192.168.0.1', 'IPv4 (mapped) is keyed per address, as IPv4');
  t.equal(attemptLimitKey('::ffff:192.168.0.1'), '192.168.0.1', 'in any spelling');
  t.not(attemptLimitKey('0000:0000:0000:0000:0000:ffff:c0a8:0001'), attemptLimitKey('0000:0000:0000:0000:0000:ffff:c0a8:0002'));
  for (const lo of ['0000:0000:0000:0000:0000:ffff:7f00:0001', '0000:0000:0000:0000:0000:ffff:7f05:0607', '0000:0000:0000:0000:0000:0000:0000:0001', '::1', '127.0.0.1', '127.9.9.9']) {
    t.equal(attemptLimitKey(lo), 'loopback', `${lo}: every loopback address is one key (any local process may bind any of them)`);
  }
  t.equal(attemptLimitKey('10.0.0.1'), '10.0.0.1');
});

await t.test('session errors are encrypted and leave the session usable', async (t) => {
  const env = await serve(t);
  const c = await Client.authed(env.url, { chat_id: 3 });
  const errorAfter = async (send: () => void) => {
    const from = c.frames.length;
    send();
    return c.next((f) => f.type === 'error', from);
  };
  t.match(await errorAfter(() => c.ws.send(Buffer.from([1, 2, 3]), { binary: true })), { code: 'decrypt_failed', message: /binary/ });
  t.match(await errorAfter(() => c.sendPlain({ type: 'message', text: 'plaintext after auth' })), { code: 'decrypt_failed' });
  t.match(await errorAfter(() => c.ws.send('@@@not-base64@@@')), { code: 'decrypt_failed' });
  t.match(await errorAfter(() => c.ws.send(Buffer.alloc(20).toString('base64'))), { code: 'decrypt_failed' }, 'too short');
  const stranger = nacl.box.keyPair();
  const otherKey = nacl.box.before(stranger.publicKey, c.keys.secretKey);
  const nonce = nacl.randomBytes(24);
  const forged = Buffer.concat([nonce, nacl.box.after(Buffer.from('{"type":"abort"}'), nonce, otherKey)]).toString('base64');
  t.match(await errorAfter(() => c.ws.send(forged)), { code: 'decrypt_failed' }, 'wrong key');
  const good = c.seal({ type: 'message', text: 'once' });
  c.ws.send(good);
  await c.next((f) => f.type === 'result' && f.text === 'echo: once');
  t.match(await errorAfter(() => c.ws.send(good)), { code: 'decrypt_failed', message: /replayed/ }, 'replayed frame');
  const reflected = c.raw[c.raw.length - 1]!;
  t.match(await errorAfter(() => c.ws.send(reflected)), { code: 'decrypt_failed' }, 'a server frame echoed back');
  t.match(await errorAfter(() => c.sendSealed({ type: 'message', text: '' })), { code: 'empty' });
  t.match(await errorAfter(() => c.sendSealed({ type: 'message', text: '  \n ' })), { code: 'empty' });
  t.match(await errorAfter(() => c.sendSealed({ type: 'message' })), { code: 'empty' });
  t.match(await errorAfter(() => c.sendSealed({ type: 'message', text: 7 })), { code: 'empty' });
  t.match(await errorAfter(() => c.sendSealed({ type: 'dance' })), { code: 'unknown_type', message: /dance/ });
  t.match(await errorAfter(() => c.sendSealed({ text: 'no type' })), { code: 'unknown_type' });
  t.match(await errorAfter(() => c.sendSealed([1, 2])), { code: 'unknown_type' });
  t.match(await errorAfter(() => c.sendSealed({ type: 'auth', token: TOKEN })), { code: 'unknown_type' }, 'no second auth');
  t.equal(c.undecryptable, 0, 'every error frame is sealed');
  t.equal(env.rt!.calls.length, 1, 'nothing bad reached the runtime');

  const from = c.frames.length;
  c.sendSealed({ type: 'message', text: 'still here' });
  t.match(await c.next((f) => f.type === 'result', from), { text: 'echo: still here' });

  env.rt!.mode = 'throw';
  t.match(await errorAfter(() => c.sendSealed({ type: 'message', text: 'boom' })), { code: 'internal_error' });
  t.notMatch(JSON.stringify(c.frames), /runtime exploded/, 'internal details stay in the log');
  t.ok(env.logs.some((l) => l.level === 'error' && /runtime exploded/.test(l.msg)));
});

await t.test('no runtime attached → no_handler for messages and aborts', async (t) => {
  const env = await serve(t, { runtime: false });
  const c = await Client.authed(env.url);
  c.sendSealed({ type: 'message', text: 'anyone?' });
  t.match(await c.next((f) => f.type === 'error'), { code: 'no_handler' });
  const from = c.frames.length;
  c.sendSealed({ type: 'abort' });
  t.match(await c.next((f) => f.type === 'error', from), { code: 'no_handler' });
});

await t.test('oversized frames: refused with an error, or closed by uWS above the hard cap', async (t) => {
  const env = await serve(t, { limits: { maxFrameBytes: 64 * 1024, hardFrameBytes: 128 * 1024 } });
  const c = await Client.authed(env.url);
  c.sendSealed({ type: 'message', text: 'y'.repeat(80 * 1024) });
  t.match(await c.next((f) => f.type === 'error'), { code: 'decrypt_failed', message: /exceeds the limit/ });
  t.equal(env.rt!.calls.length, 0);
  c.sendSealed({ type: 'message', text: 'small' });
  await c.next((f) => f.type === 'result');
  c.sendSealed({ type: 'message', text: 'z'.repeat(200 * 1024) });
  const closed = await c.closed;
  t.ok([1006, 1009].includes(closed.code), `dropped by the server (${closed.code})`);
  t.equal(env.rt!.calls.length, 1);
});

await t.test('a burst of chunks arrives whole and in order, merged into frames of at most 64 KiB of text', async (t) => {
  const env = await serve(t);
  const c = await Client.authed(env.url, { chat_id: 3 });
  c.sendSealed({ type: 'message', text: 'burst' });
  await c.next((f) => f.type === 'result');
  const deltas = c.frames.filter((f) => f.type === 'text_delta').map((f) => String(f.data));
  t.equal(deltas.join(''), Array.from({ length: 2000 }, (_, i) => String(i % 10).repeat(200)).join(''));
  t.ok(deltas.length > 1 && deltas.length < 20, `${deltas.length} frames for 2,000 chunks`);
  t.ok(deltas.every((d) => d.length <= 64 * 1024), 'no frame above the merge cap');
});

await t.test('abort and /stop are chat-scoped and not queued behind the turn they stop', async (t) => {
  const env = await serve(t);
  const a = await Client.authed(env.url, { chat_id: 5, channel_id: 1 });
  const b = await Client.authed(env.url, { chat_id: 5, channel_id: 2 });
  const other = await Client.authed(env.url, { chat_id: 6 });

  a.sendSealed({ type: 'message', text: 'hold A' });
  other.sendSealed({ type: 'message', text: 'hold other' });
  await until('two held turns', () => env.rt!.held.size === 2);
  // Channel isolation: B's turn runs while A's is held, and neither sees the other's chunks.
  b.sendSealed({ type: 'message', text: 'stream B' });
  t.match(await b.next((f) => f.type === 'result'), { text: /d0d1/ });
  t.notOk(b.frames.some((f) => f.data === 'holding hold A'), 'B never sees A chunks');
  t.notOk(a.frames.some((f) => String(f.data).includes('d0')), 'A never sees B chunks');

  b.sendSealed({ type: 'abort' });
  t.match(await b.next((f) => f.type === 'abort_ok'), { killed: 1 }, 'abort from channel 2 killed channel 1 of the same chat');
  t.match(await a.next((f) => f.type === 'result'), { text: 'aborted' });
  t.equal(env.rt!.held.size, 1, 'another chat is untouched');

  other.sendSealed({ type: 'message', text: '/stop' });
  t.match(await other.next((f) => f.type === 'abort_ok'), { killed: 1 });
  t.match(await other.next((f) => f.type === 'result'), { text: 'aborted' });
  t.notOk(env.rt!.calls.some((m) => m.text === '/stop'), '/stop is not sent as a message');
  const from = a.frames.length;
  a.sendSealed({ type: 'abort' });
  t.match(await a.next((f) => f.type === 'abort_ok', from), { killed: 0 });
});

// One at a time per session key is the runtime's lanes' job (test/actors/session-lanes.test.ts), and this
// fake runtime queues by key on its own; what the edge must do is hand every message on at once, in the
// order its socket sent it, under the session key the chat and channel name, and send each result back
// to the socket that asked.
await t.test('messages of one chat reach the runtime at once, in order, under one session key, across connections; each result returns to its sender', async (t) => {
  const env = await serve(t);
  const c1 = await Client.authed(env.url, { chat_id: 8 });
  const c2 = await Client.authed(env.url, { chat_id: 8 });
  c1.sendSealed({ type: 'message', text: 'hold 1' });
  c1.sendSealed({ type: 'message', text: 'm2' });
  c2.sendSealed({ type: 'message', text: 'm3' });
  c1.sendSealed({ type: 'message', text: 'm4' });
  await until('all four messages handed to the runtime', () => env.rt!.accepted.length === 4);
  t.equal(env.rt!.held.size, 1, 'handed on while the first is still held: the edge holds nothing back');
  const accepted = env.rt!.accepted;
  t.same(accepted.filter((m) => m.text !== 'm3').map((m) => m.text), ['hold 1', 'm2', 'm4'], 'one socket\'s messages in the order sent');
  t.same(new Set(accepted.map((m) => JSON.stringify([m.agent, m.transport, m.chat_id, m.topic_id]))), new Set([JSON.stringify(['main', 'api', 8, null])]), 'both connections ask for the same session');
  [...env.rt!.held.values()][0]!.release('done 1');
  await c1.count(3, (f) => f.type === 'result');
  await c2.next((f) => f.type === 'result');
  t.same(c1.frames.filter((f) => f.type === 'result').map((f) => f.text).sort(), ['done 1', 'echo: m2', 'echo: m4']);
  t.same(c2.frames.filter((f) => f.type === 'result').map((f) => f.text), ['echo: m3'], 'each result to the socket that asked');
});

await t.test('a client that disconnects mid-turn does not cancel it', async (t) => {
  const env = await serve(t);
  const c = await Client.authed(env.url, { chat_id: 9 });
  c.sendSealed({ type: 'message', text: 'hold me' });
  await until('held', () => env.rt!.held.size === 1);
  c.close();
  await c.closed;
  await until('closed fact', () => facts(env).some((e) => e.type === 'connection.closed'));
  [...env.rt!.held.values()][0]!.release('finished anyway');
  await until('turn completed', () => env.rt!.completed.includes('hold me'));
  const d = await Client.authed(env.url, { chat_id: 9 });
  d.sendSealed({ type: 'message', text: 'after' });
  t.match(await d.next((f) => f.type === 'result'), { text: 'echo: after' });
});

await t.test('2,000 malformed frames, 50 bad handshakes, then a healthy new client', async (t) => {
  // All from 127.0.0.1 with the default limits: the failures go past the per-address limit, and the
  // healthy client from the same address must still get in.
  const env = await serve(t);
  const c = await Client.authed(env.url);
  const junk = [
    () => c.ws.send('%%%'),
    () => c.ws.send(Buffer.from('x'), { binary: true }),
    () => c.ws.send(Buffer.alloc(60, 7).toString('base64')),
    () => c.ws.send('{"type":"message","text":"plain"}'),
    () => c.ws.send(''),
  ];
  for (let i = 0; i < 2000; i++) junk[i % junk.length]!();
  const errors = await c.count(2000, (f) => f.type === 'error', 20000);
  t.ok(errors.every((f) => f.code === 'decrypt_failed'));
  t.equal(env.rt!.calls.length, 0);

  // In two waves, each under the cap on sockets waiting to authenticate.
  for (let wave = 0; wave < 2; wave++) {
    const bad = await Promise.all(Array.from({ length: 25 }, () => Client.open(env.url)));
    bad.forEach((b, i) => (i % 2 ? b.ws.send('garbage') : b.sendPlain({ type: 'auth', token: 'nope', e2e_pk: pk(b) })));
    const closes = await Promise.all(bad.map((b) => b.closed));
    if (wave === 1) t.ok(closes.every((x) => x.code === 1013), 'past the limit every failure closes with try-again-later');
  }
  t.equal(env.log.read().length, 1, 'the bad handshakes wrote nothing (the one fact is the first client\'s authentication)');

  const fresh = await Client.authed(env.url);
  fresh.sendSealed({ type: 'message', text: 'healthy' });
  t.match(await fresh.next((f) => f.type === 'result'), { text: 'echo: healthy' });
  c.sendSealed({ type: 'message', text: 'old one too' });
  t.match(await c.next((f) => f.type === 'result'), { text: 'echo: old one too' });
});

await t.test('a client that never reads is dropped once its send buffer passes the cap', async (t) => {
  const limit = 512 * 1024;
  const env = await serve(t, { limits: { maxBufferedBytes: limit } });
  const c = await Client.authed(env.url, { chat_id: 11 });
  c.sendSealed({ type: 'message', text: 'flood' });
  c.ws.pause();
  await until('runtime finished the flood', () => env.rt!.completed.includes('flood'), 30000);
  await until('closed fact', () => facts(env).some((e) => e.type === 'connection.closed'), 10000);
  const closed = facts(env).find((e) => e.type === 'connection.closed')!;
  t.match(closed.data, { reason: 'backpressure' });
  t.ok(env.logs.some((l) => l.level === 'warn' && /not reading/.test(l.msg)), 'logged as a warning');
  // One sealed 64 KiB delta is ~88 KiB on the wire: the buffer never exceeds the cap by more than a frame.
  t.ok(env.server.hub.peakBufferedBytes <= limit + 100 * 1024, `peak ${env.server.hub.peakBufferedBytes}`);
  t.ok(env.server.hub.peakBufferedBytes > 0, 'the buffer did fill');
  c.ws.terminate();
  const d = await Client.authed(env.url);
  d.sendSealed({ type: 'message', text: 'next' });
  t.match(await d.next((f) => f.type === 'result'), { text: 'echo: next' });
});

await t.test('notifications are pushed to authenticated connections only', async (t) => {
  const env = await serve(t);
  const a = await Client.authed(env.url, { chat_id: 1 });
  const b = await Client.authed(env.url, { chat_id: 2, channel_id: 3 });
  const pending = await Client.open(env.url);
  await env.bus.publish(anyEvent({ stream: 'notification:n1', type: 'notification.created', data: { id: 'n1', title: 'Build', body: 'done', read: false, severity: 'info', type: 'task' } }));
  for (const c of [a, b]) {
    t.same(await c.next((f) => f.type === 'notification'), { type: 'notification', notification: { id: 'n1', title: 'Build', body: 'done', read: false } });
  }
  // A later auth shows the unauthenticated socket got nothing before it.
  pending.sendPlain({ type: 'auth', token: TOKEN, e2e_pk: pk(pending) });
  await pending.next((f) => f.type === 'auth_ok');
  t.equal(pending.frames.length, 1);
});

await t.test('nonce budget: past the cap the connection is closed with decrypt_failed', async (t) => {
  const env = await serve(t, { limits: { nonceCap: 3 } });
  const c = await Client.authed(env.url);
  for (let i = 0; i < 3; i++) c.sendSealed({ type: 'message', text: `n${i}` });
  await c.count(3, (f) => f.type === 'result');
  c.sendSealed({ type: 'message', text: 'one too many' });
  const closed = await c.closed;
  t.match(c.frames[c.frames.length - 1], { type: 'error', code: 'decrypt_failed', message: /reconnect/ });
  t.equal(closed.code, 1008);
  await until('closed fact', () => facts(env).some((e) => e.type === 'connection.closed'));
  t.match(facts(env).find((e) => e.type === 'connection.closed')!.data, { reason: 'nonce_limit' });
});

await t.test('shutdown closes live connections with 1001', async (t) => {
  const env = await serve(t);
  const c = await Client.authed(env.url);
  const p = await Client.open(env.url);
  env.server.close();
  t.equal((await c.closed).code, 1001);
  t.equal((await p.closed).code, 1001);
});

await t.test('a connection whose machine fails is dropped and logged; the server and other clients carry on', async (t) => {
  // A machine bug, provoked: the rejection action throws. Actors share the hub's root, which
  // receives the failure instead of an uncaught exception.
  const failing = connectionMachine.provide({
    actions: {
      reject: () => {
        throw new Error('machine exploded');
      },
    },
  });
  const env = await serve(t, { machine: failing as unknown as AnyStateMachine });
  const bad = await Client.open(env.url);
  bad.ws.send('not an auth frame');
  t.equal((await bad.closed).code, 1006, 'dropped without a close frame');
  await until('the failure is logged', () => env.logs.some((l) => l.level === 'error' && /machine exploded/.test(l.msg)));
  const good = await Client.authed(env.url);
  good.sendSealed({ type: 'message', text: 'still fine' });
  t.match(await good.next((f) => f.type === 'result'), { text: 'echo: still fine' });
  t.equal(env.server.hub.connectionCount, 1, 'the dropped connection is gone from the hub');
});

await t.test('connection machine, driven by events', async (t) => {
  const drive = (events: Parameters<ReturnType<typeof createActor<typeof connectionMachine>>['send']>[0][], nonceCap?: number) => {
    const actor = createActor(connectionMachine, { input: { ...(nonceCap ? { nonceCap } : {}) } });
    const out: ConnectionFact[] = [];
    actor.on('*', (f) => out.push(f as ConnectionFact));
    actor.start();
    for (const e of events) actor.send(e);
    return { snap: actor.getSnapshot(), out };
  };
  const auth = { type: 'auth' as const, tokenValid: true, keyValid: true, configChatId: 0, allowedUserIds: [] };
  let r = drive([{ ...auth, chatId: 4, channelId: 2 }, { type: 'timeout' }]);
  t.equal(r.snap.value, 'encrypted', 'a late timer does nothing after auth');
  t.same(r.out, [{ type: 'connection.authenticated', data: { surface: 'direct', chat_id: 4, channel_id: 2 } }], 'facts start at authentication');
  r = drive([{ ...auth, keyValid: false }, { type: 'frame', nonce: 'a' }, { type: 'close', code: 1008 }]);
  t.equal(r.snap.value, 'closed');
  t.same([r.snap.context.rejection, r.snap.context.closeReason], ['auth_failed', 'auth_failed'], 'frames after a rejection are ignored');
  t.same(r.out, [], 'a rejected connection emits no fact');
  r = drive([auth]);
  t.equal(r.snap.context.seenNonces, null, 'an idle connection holds no nonce set');
  r = drive([auth, { type: 'frame', nonce: 'a' }, { type: 'frame', nonce: 'b' }, { type: 'frame', nonce: 'a' }]);
  t.equal(r.snap.context.lastFrame, 'decrypt_failed', 'replayed nonce');
  t.equal(r.snap.context.seenNonces?.size, 2);
  r = drive([auth, { type: 'frame', nonce: null }]);
  t.same([r.snap.value, r.snap.context.lastFrame], ['encrypted', 'decrypt_failed']);
  r = drive([auth, { type: 'frame', nonce: 'a' }, { type: 'frame', nonce: 'b' }, { type: 'frame', nonce: 'c' }], 2);
  t.same([r.snap.value, r.snap.context.closeReason], ['closing', 'nonce_limit']);
  r = drive([{ type: 'close', code: 1006 }]);
  t.same([r.out, r.snap.value, r.snap.context.closeReason], [[], 'closed', 'client'], 'closed before auth: no fact, a reason to count');
  r = drive([{ type: 'timeout' }, { type: 'close', code: 1008 }]);
  t.same([r.out, r.snap.context.closeReason], [[], 'auth_timeout']);
  r = drive([auth, { type: 'close', code: 1006 }]);
  t.same(r.out[1], { type: 'connection.closed', data: { reason: 'client', code: 1006 } });
  r = drive([auth, { type: 'drop', reason: 'backpressure' }, { type: 'close', code: 1006 }]);
  t.same(r.out[1], { type: 'connection.closed', data: { reason: 'backpressure', code: 1006 } });
});

await t.test('an answer a restart cut off reaches its chat once: on its next connection, or at once to connections already open', async (t) => {
  const { bus, url } = await serve(t);
  const owed = new Map<string, string[]>([['api:7', ['part one\n\n[cut off]']]]);
  const asked: string[] = [];
  bus.handle(AGENT_COMMANDS.takeInterrupted, 'test', (cmd) => {
    const key = cmd.data.session_key ?? `(all of ${cmd.data.transport})`;
    asked.push(key);
    const texts = owed.get(key) ?? [];
    owed.delete(key);
    return texts.map((text, i) => ({ turn_id: `t${i}`, agent: 'main', session_key: key, text }));
  });
  const other = await Client.authed(url, { chat_id: 8 });
  const first = await Client.authed(url, { chat_id: 7 });
  t.same(await first.next((f) => f.type === 'result'), { type: 'result', text: 'part one\n\n[cut off]', stream_fallback: false, files: [], interrupted: true });
  const second = await Client.authed(url, { chat_id: 7 });
  second.sendSealed({ type: 'message', text: 'hello' });
  const reply = await second.next((f) => f.type === 'result');
  t.same([reply.text, reply.interrupted], ['echo: hello', undefined], 'the second connection is not told again');
  t.same(asked, ['api:8', 'api:7', 'api:7']);

  owed.set('api:7', ['cut while you watched']);
  const [from1, from2] = [first.frames.length, second.frames.length];
  await bus.publish(anyEvent({ stream: 'turn:z', type: 'turn.failed', data: { reason: 'daemon-restarted', session_key: 'api:7', text: '' } }));
  for (const c of [first, second]) t.equal((await c.next((f) => f.type === 'result', c === first ? from1 : from2)).text, 'cut while you watched');
  // Hostile or unrelated facts ask nothing.
  await bus.publish(anyEvent({ stream: 'turn:y', type: 'turn.failed', data: { reason: 'daemon-restarted', session_key: 7 } }));
  await bus.publish(anyEvent({ stream: 'turn:x', type: 'turn.failed', data: { reason: 'exit-code', session_key: 'api:7' } }));
  other.sendSealed({ type: 'message', text: 'still here' });
  t.equal((await other.next((f) => f.type === 'result')).text, 'echo: still here');
  t.notOk(other.frames.some((f) => f.type === 'result' && f.interrupted), 'another chat hears nothing of it');
  t.same(asked, ['api:8', 'api:7', 'api:7', 'api:7']);
});
