import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { ACCESS_TTL_S, chatIdOfSession, issueToken } from '../actors/index.js';
import { sessionKey, sessionStream } from '../machines/index.js';
import {
  AUDIT_EVENTS,
  AUDIT_STREAM,
  CHAT_SESSION_EVENTS,
  MAIN_AGENT,
  MAX_CHAT_PAGE,
  NOTIFICATION_EVENTS,
  SESSION_EVENTS,
  TOKEN_TYPES,
  TURN_EVENTS,
  chatSessionStream,
  notificationStream,
  type NewEvent,
  type UserRecord,
} from '../schemas/index.js';
import { PROJECTIONS, SqliteEventLog, homePaths, loadUsers, saveUsers, type HomePaths } from '../store/index.js';
import type { BenchReport } from './report.js';
import { startServer, type ServerHandle } from './server-handle.js';
import { median, percentile, within } from './timing.js';

/*
 * The admin REST API under read load, with the daemon in its own process (bench/server-process.ts)
 * and the panel's client here: bearer JWTs over keep-alive loopback connections. The daemon's log
 * holds EVENTS facts of the admin chat's vocabulary, so the read models it answers from are the size
 * of a well-used instance, not of a fresh one.
 */
const EVENTS = 100_000;
/** Every BIG_EVERY-th turn goes to one long session, so it ends well past one page of MAX_CHAT_PAGE. */
const BIG_EVERY = 20;
/** Turns per ordinary session before the next one opens. */
const SESSION_TURNS = 40;
/**
 * Unrestricted admins, each with its own errors_ack_at, asking in both languages: the summary cache
 * is keyed by language, ACL bucket and the caller's errors_ack_at, and keeps 256 keys
 * (actors/dashboard, MAX_CACHE_KEYS), oldest out first. Cycling through BUCKET_USERS × 2 keys, each
 * key is evicted by the others before it comes back, so every request is a miss that computes an
 * admin's full summary (audit sign-ins included) — without waiting out the 5 s TTL, which would
 * allow one sample per key per 5 s. users.json is held in memory (actors/users/live-users.ts), so its
 * size no longer weighs on each request.
 */
const BUCKET_USERS = 150;
const CONNECTIONS = 8;
/** Authenticated reads (`/api/auth/me`, a cached summary) against `/health`, req/s: the issue's target. */
const READ_TARGET = 0.5;
const RUNS = 3;
const WARMUP = 300;
/** Each request gives up after this; each measured run stops issuing after RUN_BUDGET_MS. */
const REQUEST_DEADLINE_MS = 10_000;
const RUN_BUDGET_MS = 15_000;

type Headers = Record<string, string>;
interface Target {
  name: string;
  requests: number;
  path: string;
  headers: (i: number) => Headers;
}

const DAY_MS = 86_400_000;
const iso = (ms: number) => new Date(ms).toISOString();
/** Deterministic text of about `chars` characters, so runs compare. */
const prose = (seed: number, chars: number) => {
  const words = ['the', 'build', 'failed', 'because', 'config', 'agent', 'session', 'retry', 'token', 'parser', 'returns', 'a', 'list', 'of', 'files', 'fixed'];
  let s = '';
  for (let i = seed; s.length < chars; i = (i * 1103515245 + 12345) >>> 0) s += words[i % words.length] + ' ';
  return s.slice(0, chars);
};

/**
 * Seeds the home's events.db through the store's own log API, with the daemon's projections, before
 * the daemon starts: one append per admin-chat turn (the facts that turn leaves: the user's message,
 * the turn's lifecycle, the session's record, the answer), with sign-ins and notifications between.
 * Through the running daemon each turn would need a fake CLI run, minutes for 100k facts; this is the
 * same SQLite file and the same fold, so the read models it leaves are the ones the daemon would have.
 * Every turn is closed, so the start finds nothing to recover.
 */
function seedEventLog(paths: HomePaths): { sessions: number; turns: number; bigSession: string; bigMessages: number; seconds: number } {
  const t0 = performance.now();
  const log = SqliteEventLog.open(paths.eventsDb, { projections: PROJECTIONS });
  const start = Date.now() - 60 * DAY_MS;
  let written = 0;
  let turns = 0;
  let sessions = 0;
  let bigMessages = 0;
  const open = new Map<string, number>();
  const append = (events: NewEvent[], atMs: number) => {
    log.append(events, iso(atMs));
    written += events.length;
  };
  const newSession = (id: string, atMs: number) => {
    const chatId = chatIdOfSession(id);
    const key = sessionKey('admin', chatId);
    append(
      [
        { stream: chatSessionStream(id), type: CHAT_SESSION_EVENTS.session_created, data: { id, agent: MAIN_AGENT, title: `Chat ${sessions}`, created_at: iso(atMs), updated_at: iso(atMs) } },
        {
          stream: sessionStream(MAIN_AGENT, key),
          type: SESSION_EVENTS.started,
          data: { agent: MAIN_AGENT, key, transport: 'admin', chat_id: chatId, topic_id: null, created_at: atMs, reason: 'first' },
        },
      ],
      atMs,
    );
    sessions++;
    open.set(id, 0);
  };
  const bigSession = 'bench-big';
  let small = '';
  // A turn is 7 facts and a sign-in or notification 1: stop turns while a whole one still fits.
  while (written + 9 <= EVENTS) {
    const t = turns++;
    const at = start + t * 6 * 60_000;
    const big = t % BIG_EVERY === 0;
    if (big && t === 0) newSession(bigSession, at);
    if (!big && t % SESSION_TURNS === 1) newSession((small = `bench-${t}`), at);
    const id = big ? bigSession : small;
    const key = sessionKey('admin', chatIdOfSession(id));
    const turnId = `bench-turn-${t}`;
    const correlation = `req-${t}`;
    const prompt = prose(t, 80 + (t % 200));
    const reply = prose(t + 7, 300 + ((t * 37) % 1500));
    const done = at + 4000 + (t % 30) * 1000;
    const count = open.get(id)! + 1;
    open.set(id, count);
    if (big) bigMessages += 2;
    append(
      [
        { stream: chatSessionStream(id), type: CHAT_SESSION_EVENTS.messages_merged, data: { id, messages: [{ id: `u-${t}`, sender: 'user', content: prompt, timestamp: iso(at) }], updated_at: iso(at) }, correlation },
        {
          stream: `turn:${turnId}`,
          type: TURN_EVENTS.started,
          data: { agent: MAIN_AGENT, session_key: key, request_id: correlation, kind: 'foreground', prompt, provider: 'claude', model: null, resumed: count > 1, timeout_ms: 600_000 },
          correlation,
        },
        { stream: `turn:${turnId}`, type: TURN_EVENTS.spawned, data: { pid: 10_000 + (t % 50_000), start_time: null, boot_id: null, attempt: 1, streaming: true }, correlation },
        { stream: `turn:${turnId}`, type: TURN_EVENTS.progressed, data: { text: reply.slice(0, reply.length >> 1) }, correlation },
        {
          stream: `turn:${turnId}`,
          type: TURN_EVENTS.completed,
          data: {
            text: reply,
            session_id: `cli-${id}`,
            stream_fallback: false,
            files: [],
            usage: { input_tokens: 2000 + prompt.length, output_tokens: reply.length >> 2 },
            cost_usd: 0.01,
            duration_ms: done - at,
          },
          correlation,
        },
        {
          stream: sessionStream(MAIN_AGENT, key),
          type: SESSION_EVENTS.turn_recorded,
          data: { turn_id: turnId, provider: 'claude', session_id: `cli-${id}`, session_reset: false, message_count: count, count_at_threshold: null, at_ms: done, warning_hours: 12 },
          correlation,
        },
        {
          stream: chatSessionStream(id),
          type: CHAT_SESSION_EVENTS.messages_merged,
          data: { id, messages: [{ id: correlation, sender: 'agent', content: reply, timestamp: iso(done) }], updated_at: iso(done) },
          correlation,
        },
      ],
      done,
    );
    if (t % 50 === 0) append([signIn(t)], done + 1000);
    if (t % 40 === 0) append([notification(t, done)], done + 2000);
  }
  while (written < EVENTS) append([signIn(written)], Date.now());
  log.close();
  return { sessions, turns, bigSession, bigMessages, seconds: (performance.now() - t0) / 1000 };
}

const signIn = (n: number): NewEvent => ({
  stream: AUDIT_STREAM,
  type: AUDIT_EVENTS.recorded,
  data: { actor: 'admin', action: n % 10 === 0 ? 'auth.login_failed' : 'auth.login', target: null, status: n % 10 === 0 ? 401 : 200, ip: '127.0.0.1' },
});

function notification(t: number, atMs: number): NewEvent {
  const id = `bench-n-${t}`;
  const failed = t % 200 === 0;
  return {
    stream: notificationStream(id),
    type: NOTIFICATION_EVENTS.created,
    data: {
      id,
      title: failed ? 'Task failed' : 'Task done',
      body: prose(t, 120),
      read: false,
      severity: failed ? 'critical' : 'info',
      type: 'task',
      agent: MAIN_AGENT,
      status: failed ? 'failed' : 'done',
      source_id: `task-${t}`,
      created_at: iso(atMs),
    },
  };
}

/** The bucket admins, added to users.json between the first start (which made the bootstrap admin) and the measured one. */
function addBucketUsers(paths: HomePaths): string[] {
  const users = loadUsers(paths);
  const base = users[0]!;
  const names = Array.from({ length: BUCKET_USERS }, (_, i) => `bench-admin-${i}`);
  const nowS = Math.floor(Date.now() / 1000);
  const added: UserRecord[] = names.map((username, i) => ({
    ...base,
    username,
    role: 'admin',
    allowed_agents: [],
    telegram_user_ids: [],
    token_version: 0,
    // Distinct acknowledgements, all older than a day: each is its own cache key, and none hides a failure.
    errors_ack_at: nowS - 2 * 86_400 - i * 60,
    password_hash: '',
  }));
  saveUsers(paths, [...users, ...added]);
  return names;
}

const agent = new Agent({ keepAlive: true, maxSockets: CONNECTIONS });

/** One request on the pooled connections; the body is read whole (a panel parses it). */
function call(port: number, method: string, path: string, headers: Headers, body?: string): Promise<{ status: number; text: string; bytes: number }> {
  let req: ReturnType<typeof request>;
  const answered = new Promise<{ status: number; text: string; bytes: number }>((resolve, reject) => {
    req = request({ host: '127.0.0.1', port, method, path, agent, headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const all = Buffer.concat(chunks);
        resolve({ status: res.statusCode ?? 0, text: all.toString('utf8'), bytes: all.length });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
  return within(answered, `answer to ${method} ${path}`, REQUEST_DEADLINE_MS).catch((e: unknown) => {
    req.destroy();
    throw e;
  });
}

/** `requests` GETs over CONNECTIONS lanes, each lane waiting for its answer before the next; stops early at RUN_BUDGET_MS. */
async function load(port: number, target: Target, requests = target.requests) {
  const latencies: number[] = [];
  let next = 0;
  let bytes = 0;
  const t0 = performance.now();
  const lane = async () => {
    while (next < requests && performance.now() - t0 < RUN_BUDGET_MS) {
      const i = next++;
      const s = performance.now();
      const r = await call(port, 'GET', target.path, target.headers(i));
      latencies.push(performance.now() - s);
      if (r.status !== 200) throw new Error(`bench: GET ${target.path} answered ${r.status}: ${r.text.slice(0, 200)}`);
      bytes += r.bytes;
    }
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, lane));
  const secs = (performance.now() - t0) / 1000;
  latencies.sort((a, b) => a - b);
  return { perSecond: latencies.length / secs, p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99), n: latencies.length, bytesPer: bytes / latencies.length };
}

async function login(port: number, paths: HomePaths): Promise<string> {
  const password = readFileSync(paths.initialAdminPasswordFile, 'utf8').trim();
  const r = await call(port, 'POST', '/api/auth/login', {}, JSON.stringify({ username: 'admin', password }));
  if (r.status !== 200) throw new Error(`bench: admin login answered ${r.status}: ${r.text.slice(0, 200)}`);
  return (JSON.parse(r.text) as { access_token: string }).access_token;
}

export async function benchAdmin(report: BenchReport): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-admin-'));
  const home = join(dir, 'home');
  const paths = homePaths(home);
  let svc: ServerHandle | null = null;
  try {
    const seeded = seedEventLog(paths);
    // First start: creates the bootstrap admin and its password file, as on a new install.
    await (await startServer('daemon', home)).stop();
    const bucketNames = addBucketUsers(paths);
    const s0 = performance.now();
    svc = await startServer('daemon', home);
    const startMs = performance.now() - s0;
    const port = svc.port;
    const rssIdle = await svc.rss();

    const bearer = `Bearer ${await login(port, paths)}`;
    // The login route allows 5 attempts a minute from loopback, so the bucket admins' tokens are issued
    // with the daemon's own signer and its jwt_secret; each is then checked per request like the panel's.
    const secret = (JSON.parse(readFileSync(paths.configFile, 'utf8')) as { api: { jwt_secret: string } }).api.jwt_secret;
    const bucketBearers = await Promise.all(
      bucketNames.map(async (sub) => `Bearer ${(await issueToken(secret, Date.now(), { typ: TOKEN_TYPES.access, sub, tv: 0, role: 'admin', ttlS: ACCESS_TTL_S })).token}`),
    );

    const messagesPath = `/api/chat/sessions/${seeded.bigSession}/messages?limit=${MAX_CHAT_PAGE}`;
    const page = JSON.parse((await call(port, 'GET', messagesPath, { authorization: bearer })).text) as { messages: unknown[]; total: number; has_more: boolean };
    if (page.messages.length !== MAX_CHAT_PAGE || !page.has_more) throw new Error(`bench: expected a full page of ${MAX_CHAT_PAGE} with more behind it, got ${page.messages.length} of ${page.total}`);

    const admin = (lang: string) => () => ({ authorization: bearer, 'accept-language': lang });
    const targets: Target[] = [
      { name: 'health', requests: 4000, path: '/health', headers: () => ({}) },
      { name: 'me', requests: 4000, path: '/api/auth/me', headers: admin('en') },
      { name: 'cached', requests: 4000, path: '/api/dashboard/summary', headers: admin('en') },
      {
        name: 'uncached',
        requests: 8 * BUCKET_USERS,
        path: '/api/dashboard/summary',
        headers: (i) => ({ authorization: bucketBearers[i % BUCKET_USERS]!, 'accept-language': Math.floor(i / BUCKET_USERS) % 2 ? 'en' : 'ru' }),
      },
      { name: 'messages', requests: 600, path: messagesPath, headers: admin('en') },
    ];
    // Unmeasured: optimises the handlers, opens the pooled connections, fills the admin's cache entry.
    for (const t of targets) await load(port, t, WARMUP);
    const runs = new Map<string, Awaited<ReturnType<typeof load>>[]>(targets.map((t) => [t.name, []]));
    // Interleaved, so every target sees the same machine load (other work shares these 2 cores).
    for (let run = 0; run < RUNS; run++) for (const t of targets) runs.get(t.name)!.push(await load(port, t));
    const rssLoaded = await svc.rss();

    const of = (name: string) => {
      const rs = runs.get(name)!;
      return { perSecond: median(rs.map((r) => r.perSecond)), p50: median(rs.map((r) => r.p50)), p99: median(rs.map((r) => r.p99)), n: rs.map((r) => r.n).join('/'), kb: rs[0]!.bytesPer / 1024 };
    };
    const health = of('health');
    const MB = 1024 * 1024;
    report.section(
      `admin API: ${EVENTS.toLocaleString('en-US')}-event log, ${CONNECTIONS} keep-alive connections, bearer JWT, daemon in its own process, median of ${RUNS} runs`,
    );
    report.note(
      'seeded through SqliteEventLog.append before the start',
      `${seeded.turns.toLocaleString('en-US')} chat turns in ${seeded.sessions} sessions, ${seeded.seconds.toFixed(1)} s; page of ${MAX_CHAT_PAGE} of ${page.total} messages`,
    );
    report.figure(`daemon start with the seeded log (spawn to listening)`, startMs, 'ms');
    const rows: [string, string][] = [
      ['health', 'GET /health (baseline: no auth, no read model)'],
      ['me', 'GET /api/auth/me (bearer check + the user\'s row)'],
      ['cached', 'GET /api/dashboard/summary, from its 5 s cache'],
      ['uncached', `GET /api/dashboard/summary, a cache miss each (${2 * BUCKET_USERS} keys)`],
      ['messages', `GET /api/chat/sessions/{id}/messages?limit=${MAX_CHAT_PAGE}`],
    ];
    for (const [name, label] of rows) {
      const r = of(name);
      report.figure(`${label} (${r.kb.toFixed(1)} KB, n=${r.n})`, r.perSecond, 'req/s', name === 'health' ? {} : { ratio: r.perSecond / health.perSecond, against: '/health' });
      report.figure(`  p50`, r.p50, 'ms', name === 'health' ? {} : { ratio: r.p50 / health.p50, against: '/health' });
      report.figure(`  p99`, r.p99, 'ms', name === 'health' ? {} : { ratio: r.p99 / health.p99, against: '/health' });
    }
    // Issue 24: an authenticated read costs at most twice an unauthenticated one.
    for (const [name, label] of [['me', 'GET /api/auth/me'], ['cached', 'GET /api/dashboard/summary (cached)']] as const) {
      report.figure(`${label} / GET /health, req/s`, of(name).perSecond / health.perSecond, 'x', { target: { op: '>=', value: READ_TARGET } });
    }
    report.figure('daemon RSS after start (full collections)', rssIdle / MB, 'MB');
    report.figure('daemon RSS after the load (full collections)', rssLoaded / MB, 'MB', { ratio: rssLoaded / rssIdle, against: 'after start' });
  } finally {
    agent.destroy();
    await svc?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
