import t from 'tap';
import { existsSync, mkdirSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startAdminAgents } from '../../actors/index.js';
import { Bus } from '../../bus/index.js';
import { ADMIN_STATUSES, agentsRoutes } from '../../edges/index.js';
import type { DetectedProvider } from '../../machines/index.js';
import { AGENT_COMMANDS, TURN_EVENTS, type AgentConfig, type Principal } from '../../schemas/index.js';
import {
  PROJECTIONS,
  SqliteEventLog,
  agentTurnsReadModel,
  avatarsDir,
  diffProjections,
  homePaths,
  loadConfig,
  loadRegistry,
  notificationReadModel,
  rebuildProjections,
  saveRegistry,
} from '../../store/index.js';
import { adminUser, testAdminJwt } from '../fixtures/admin-api.js';
import { serveSurfaces } from '../fixtures/http-server.js';
import Database from 'better-sqlite3';

type TT = { testdir(): string; teardown(fn: () => void): void };

const T0 = Date.parse('2026-11-22T10:30:00.000Z');
const HOUR = 3_600_000;
const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8cfc0f01f0005000201a5e3d3e70000000049454e44ae426082', 'hex');
const TOKEN = 'i'.repeat(40);

const PEOPLE: Record<string, Principal> = {
  admin: adminUser('admin', 'admin'),
  operator: adminUser('op', 'operator'),
  viewer: adminUser('vi', 'viewer'),
  /** An admin restricted to the sub-agent. */
  radmin: adminUser('radmin', 'admin', ['coder']),
  rviewer: adminUser('rviewer', 'viewer', ['coder']),
  star: adminUser('star', 'viewer', ['*']),
};

const DETECTED: DetectedProvider[] = [
  { id: 'claude', name: 'Claude Code', installed: true, path: '/usr/bin/claude', authenticated: true, auth_source: 'env:ANTHROPIC_API_KEY', models: ['claude-a', 'claude-b'], default_model: 'claude-a' },
  { id: 'codex', name: 'Codex', installed: false, path: null, authenticated: false, auth_source: null, models: ['gpt-5.2'], default_model: 'gpt-5.2' },
];

async function serve(t: TT) {
  const dir = t.testdir();
  const paths = homePaths(join(dir, 'home'));
  const config: AgentConfig = loadConfig(paths).config;
  const extra = join(dir, 'extra');
  mkdirSync(join(extra, 'a'), { recursive: true });
  mkdirSync(join(extra, 'b'), { recursive: true });
  writeFileSync(join(extra, 'file.txt'), 'not a directory');
  saveRegistry(paths, [
    { name: 'coder', telegram_token: '123:abc', interagent_token: TOKEN, display_name: 'Coder', description: 'Writes code', model: 'gpt-5.2' },
    { name: 'writer', telegram_token: '456:def', interagent_token: TOKEN, additional_directories: [join(extra, 'a')] },
  ]);
  const log = SqliteEventLog.open(join(dir, 'events.db'), { projections: PROJECTIONS });
  let now = T0;
  const bus = new Bus({ log, clock: () => now });
  // The supervisor's answer: main runs, the sub-agents do not.
  const agentList = bus.handle(AGENT_COMMANDS.list, 'agents', () => [{ name: 'main', provider: 'claude', model: 'claude-live', online: true, is_main: true }]);
  const actor = startAdminAgents({ bus, paths, config: () => config, registry: () => loadRegistry(paths), turns: agentTurnsReadModel(log.projectionDb()), providers: () => DETECTED });
  const deps = { bus, paths, config: () => config, registry: () => loadRegistry(paths), users: () => [], notifications: notificationReadModel(log.projectionDb()), clock: () => now, version: 'test' };
  const srv = await serveSurfaces(t, [{ name: 'admin', routes: agentsRoutes(deps), statuses: ADMIN_STATUSES, authenticators: [testAdminJwt(PEOPLE)] }]);
  t.teardown(() => {
    agentList.unsubscribe();
    actor.unsubscribe();
    bus.close();
    log.close();
  });
  const base = `http://127.0.0.1:${srv.port}`;
  const call = async (path: string, init: { method?: string; as?: string | null; body?: unknown; raw?: string | Buffer; type?: string } = {}) => {
    const { method = 'GET', as = 'admin', body, raw, type = 'application/json' } = init;
    const headers: Record<string, string> = { connection: 'close', 'content-type': type };
    if (as !== null) headers.authorization = `Bearer as:${as}`;
    const payload = raw ?? (body === undefined ? undefined : JSON.stringify(body));
    const r = await fetch(base + path, { method, headers, ...(payload === undefined ? {} : { body: payload }) });
    const text = await r.text();
    return { status: r.status, body: text ? (JSON.parse(text) as unknown) : null };
  };
  let turnNo = 0;
  /** One turn of `agent` that starts now and ends `ms` later with `status`. */
  const turn = async (agent: string, status: 'completed' | 'failed' | 'timed_out' | 'aborted' | 'running', ms = 2000, session = 'tg:1', tokens = 10) => {
    const stream = `turn:t${++turnNo}`;
    await bus.publish({
      stream,
      type: TURN_EVENTS.started,
      data: { agent, session_key: session, request_id: `r${turnNo}`, kind: 'foreground', prompt: 'hi', provider: 'claude', model: null, resumed: false, timeout_ms: 600000 },
    });
    if (status === 'running') return;
    now += ms;
    const ended = { text: '', session_id: null, stream_fallback: false };
    if (status === 'completed') {
      await bus.publish({ stream, type: TURN_EVENTS.completed, data: { ...ended, files: [], usage: { input_tokens: tokens, output_tokens: tokens }, cost_usd: null, duration_ms: 1 } });
    } else if (status === 'failed') await bus.publish({ stream, type: TURN_EVENTS.failed, data: { ...ended, reason: 'cli-failed', error: 'x' } });
    else if (status === 'timed_out') await bus.publish({ stream, type: TURN_EVENTS.timed_out, data: { ...ended, reason: 'timeout' } });
    else await bus.publish({ stream, type: TURN_EVENTS.aborted, data: { ...ended, reason: 'aborted', cause: 'user' } });
  };
  return { dir, paths, extra, log, bus, call, turn, advance: (ms: number) => (now += ms), srv };
}

const registryFile = (paths: { agentsRegistry: string }) => readFileSync(paths.agentsRegistry, 'utf8');

await t.test('GET /api/agents and /api/agents/{name}: WIRE.md shape, live status, registry fields, has_avatar', async (t) => {
  const s = await serve(t);
  mkdirSync(avatarsDir(s.paths), { recursive: true });
  writeFileSync(join(avatarsDir(s.paths), 'coder.png'), PNG);
  await s.turn('main', 'completed', 3000, 'tg:1');
  await s.turn('main', 'running', 0, 'tg:2');
  const r = await s.call('/api/agents');
  t.equal(r.status, 200);
  const list = r.body as Record<string, unknown>[];
  t.same(list.map((a) => a.name), ['main', 'coder', 'writer']);
  t.same(list[0], {
    name: 'main',
    display_name: 'main',
    provider: 'claude',
    model: 'claude-live',
    online: true,
    status: 'busy',
    active_sessions: 2,
    last_active: new Date(T0 + 3000).toISOString(),
    description: '',
    has_avatar: false,
    additional_directories: [],
  });
  t.same(list[1], {
    name: 'coder',
    display_name: 'Coder',
    provider: 'codex',
    model: 'gpt-5.2',
    online: false,
    status: 'offline',
    active_sessions: 0,
    last_active: null,
    description: 'Writes code',
    has_avatar: true,
    additional_directories: [],
  });
  t.same((list[2] as { additional_directories: string[] }).additional_directories, [join(s.extra, 'a')]);
  const one = await s.call('/api/agents/coder');
  t.same(one, { status: 200, body: list[1] });
});

await t.test('agents: every role reads; allowed_agents filters the list and hides the rest as 404', async (t) => {
  const s = await serve(t);
  for (const as of ['admin', 'operator', 'viewer', 'star']) t.equal((await s.call('/api/agents', { as })).status, 200, as);
  t.same(((await s.call('/api/agents', { as: 'rviewer' })).body as { name: string }[]).map((a) => a.name), ['coder']);
  t.same(((await s.call('/api/agents', { as: 'star' })).body as { name: string }[]).map((a) => a.name), ['main', 'coder', 'writer']);
  const hidden = await s.call('/api/agents/writer', { as: 'rviewer' });
  const missing = await s.call('/api/agents/ghost', { as: 'rviewer' });
  t.same(hidden, { status: 404, body: { error: 'agent "writer" does not exist', code: 'not-found' } });
  t.same(missing, { status: 404, body: { error: 'agent "ghost" does not exist', code: 'not-found' } }, 'hidden and missing answer alike');
  t.equal((await s.call('/api/agents', { as: null })).status, 401);
});

await t.test('PUT /api/agents/{name}: validated, de-duplicated, written to the registry or config.json', async (t) => {
  const s = await serve(t);
  const a = join(s.extra, 'a');
  const b = join(s.extra, 'b');
  let r = await s.call('/api/agents/coder', { method: 'PUT', body: { additional_directories: [a, `${a}/`, b, a] } });
  t.equal(r.status, 200);
  t.same((r.body as { additional_directories: string[] }).additional_directories, [a, b]);
  t.same(loadRegistry(s.paths).find((e) => e.name === 'coder')?.additional_directories, [a, b]);
  t.equal(loadRegistry(s.paths).find((e) => e.name === 'coder')?.interagent_token, TOKEN, 'the rest of the entry is kept');

  r = await s.call('/api/agents/main', { method: 'PUT', body: { additional_directories: [b] } });
  t.equal(r.status, 200);
  const file = JSON.parse(readFileSync(s.paths.configFile, 'utf8')) as { additional_directories: string[] };
  t.same(file.additional_directories, [b]);
  t.same(loadConfig(s.paths).config.additional_directories, [b], 'config.json still loads');
  t.same((await s.call('/api/agents/main')).body, { ...(r.body as object), additional_directories: [b] }, 'GET shows what is configured, before a restart applies it');

  r = await s.call('/api/agents/main', { method: 'PUT', body: { additional_directories: [] } });
  t.same((r.body as { additional_directories: string[] }).additional_directories, []);
});

await t.test('PUT refuses bad input, lesser roles and hidden agents with a clear 4xx and changes nothing', async (t) => {
  const s = await serve(t);
  const a = join(s.extra, 'a');
  const before = registryFile(s.paths);
  const configBefore = readFileSync(s.paths.configFile, 'utf8');
  const cases: [string, string, { body?: unknown; raw?: string; as?: string }, number, string, RegExp?][] = [
    ['relative', 'coder', { body: { additional_directories: ['extra/a'] } }, 400, 'invalid-body', /absolute path/],
    ['tilde', 'coder', { body: { additional_directories: ['~/x'] } }, 400, 'invalid-body'],
    ['missing dir', 'coder', { body: { additional_directories: [join(s.extra, 'nope')] } }, 400, 'invalid-additional-directory', /does not exist/],
    ['a file', 'coder', { body: { additional_directories: [join(s.extra, 'file.txt')] } }, 400, 'invalid-additional-directory', /is not a directory/],
    ['traversal', 'coder', { body: { additional_directories: [`${a}/../b`] } }, 400, 'invalid-additional-directory', /\.\./],
    ['NUL', 'coder', { body: { additional_directories: [`${a}\u0000x`] } }, 400, 'invalid-body'],
    ['unknown field', 'coder', { body: { additional_directories: [a], model: 'x' } }, 400, 'invalid-body', /model/],
    ['no field', 'coder', { body: {} }, 400, 'invalid-body'],
    ['wrong type', 'coder', { body: { additional_directories: a } }, 400, 'invalid-body'],
    ['number item', 'coder', { body: { additional_directories: [1] } }, 400, 'invalid-body'],
    ['too many', 'coder', { body: { additional_directories: Array.from({ length: 65 }, () => a) } }, 400, 'invalid-body'],
    ['bad JSON', 'coder', { raw: '{"additional_directories": [' }, 400, 'invalid-json'],
    ['oversized', 'coder', { raw: JSON.stringify({ additional_directories: ['/' + 'x'.repeat(70_000)] }) }, 413, 'body-too-large'],
    ['operator', 'coder', { body: { additional_directories: [a] }, as: 'operator' }, 403, 'forbidden'],
    ['viewer', 'coder', { body: { additional_directories: [a] }, as: 'viewer' }, 403, 'forbidden'],
    ['restricted admin, other agent', 'writer', { body: { additional_directories: [a] }, as: 'radmin' }, 404, 'not-found'],
    ['restricted admin, main', 'main', { body: { additional_directories: [a] }, as: 'radmin' }, 404, 'not-found'],
    ['unknown agent', 'ghost', { body: { additional_directories: [a] } }, 404, 'not-found'],
    ['hostile name', '..%2F..%2Fetc', { body: { additional_directories: [a] } }, 404, 'not-found'],
  ];
  for (const [what, name, init, status, code, message] of cases) {
    const r = await s.call(`/api/agents/${name}`, { method: 'PUT', ...init });
    t.equal(r.status, status, `${what}: status`);
    t.match(r.body, { code, ...(message ? { error: message } : {}) }, `${what}: body`);
  }
  t.equal(registryFile(s.paths), before, 'registry untouched');
  t.equal(readFileSync(s.paths.configFile, 'utf8'), configBefore, 'config.json untouched');
  const r = await s.call('/api/agents/coder', { method: 'PUT', as: 'radmin', body: { additional_directories: [a] } });
  t.equal(r.status, 200, 'a restricted admin may change its own agent');
});

function multipart(parts: { field: string; filename?: string; type?: string; data: Buffer | string }[]): { body: Buffer; type: string } {
  const boundary = 'svc-test-boundary';
  const chunks: Buffer[] = [];
  for (const p of parts) {
    const disposition = `form-data; name="${p.field}"${p.filename !== undefined ? `; filename="${p.filename}"` : ''}`;
    chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: ${disposition}\r\nContent-Type: ${p.type ?? 'application/octet-stream'}\r\n\r\n`));
    chunks.push(Buffer.isBuffer(p.data) ? p.data : Buffer.from(p.data));
    chunks.push(Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), type: `multipart/form-data; boundary=${boundary}` };
}

await t.test('avatar upload and delete: admin only, images only, capped, one file per agent', async (t) => {
  const s = await serve(t);
  const dir = avatarsDir(s.paths);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'coder.jpg'), Buffer.from([0xff, 0xd8, 0xff, 0xe0]));
  const png = multipart([{ field: 'file', filename: 'me.png', type: 'image/png', data: PNG }]);
  let r = await s.call('/api/agents/coder/avatar', { method: 'POST', raw: png.body, type: png.type });
  t.equal(r.status, 200);
  t.match(r.body, { name: 'coder', has_avatar: true });
  t.same(readdirSync(dir).sort(), ['coder.png'], 'the older jpg is replaced');
  t.same(readFileSync(join(dir, 'coder.png')), PNG);

  const bad: [string, { raw?: Buffer | string; type?: string; as?: string }, number, string][] = [
    ['svg', { ...bodyOf(multipart([{ field: 'file', filename: 'x.png', type: 'image/png', data: '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>' }])) }, 415, 'invalid-image'],
    ['text named png', { ...bodyOf(multipart([{ field: 'file', filename: 'x.png', type: 'image/png', data: 'hello' }])) }, 415, 'invalid-image'],
    ['empty file', { ...bodyOf(multipart([{ field: 'file', filename: 'x.png', data: '' }])) }, 415, 'invalid-image'],
    ['json body', { raw: '{}', type: 'application/json' }, 415, 'unsupported-media-type'],
    ['no boundary', { raw: 'x', type: 'multipart/form-data' }, 400, 'invalid-body'],
    ['no file part', { ...bodyOf(multipart([{ field: 'caption', data: 'hi' }])) }, 400, 'invalid-body'],
    ['two files', { ...bodyOf(multipart([{ field: 'file', filename: 'a.png', data: PNG }, { field: 'file', filename: 'b.png', data: PNG }])) }, 400, 'invalid-body'],
    ['oversized part', { ...bodyOf(multipart([{ field: 'file', filename: 'a.png', data: Buffer.concat([PNG, Buffer.alloc(2 * 1024 * 1024)]) }])) }, 413, 'body-too-large'],
    ['oversized body', { raw: Buffer.alloc(3 * 1024 * 1024), type: png.type }, 413, 'body-too-large'],
    ['operator', { ...bodyOf(png), as: 'operator' }, 403, 'forbidden'],
    ['restricted admin', { ...bodyOf(png), as: 'radmin' }, 404, 'not-found'],
  ];
  for (const [what, init, status, code] of bad) {
    const target = what === 'restricted admin' ? 'writer' : 'coder';
    r = await s.call(`/api/agents/${target}/avatar`, { method: 'POST', ...init });
    t.equal(r.status, status, `${what}: status`);
    t.match(r.body, { code }, `${what}: code`);
  }
  t.same(readdirSync(dir).sort(), ['coder.png'], 'nothing written or left behind');
  t.same(readFileSync(join(dir, 'coder.png')), PNG);
  r = await s.call('/api/agents/..%2Fx/avatar', { method: 'POST', raw: png.body, type: png.type });
  t.equal(r.status, 404, 'a traversal name is no agent');

  r = await s.call('/api/agents/coder/avatar', { method: 'DELETE', as: 'viewer' });
  t.equal(r.status, 403);
  r = await s.call('/api/agents/coder/avatar', { method: 'DELETE', as: 'radmin' });
  t.same(r, { status: 200, body: { name: 'coder', removed: true } });
  t.same(readdirSync(dir), []);
  r = await s.call('/api/agents/coder/avatar', { method: 'DELETE' });
  t.same(r, { status: 200, body: { name: 'coder', removed: false } });
  writeFileSync(join(dir, 'writer.png'), PNG);
  r = await s.call('/api/agents/writer/avatar', { method: 'DELETE', as: 'radmin' });
  t.equal(r.status, 404);
  t.ok(existsSync(join(dir, 'writer.png')), 'a hidden agent keeps its avatar');
});

function bodyOf(m: { body: Buffer; type: string }) {
  return { raw: m.body, type: m.type };
}

await t.test('avatar upload does not write through an avatars/ symlink', async (t) => {
  const s = await serve(t);
  const elsewhere = join(s.dir, 'elsewhere');
  mkdirSync(elsewhere);
  symlinkSync(elsewhere, avatarsDir(s.paths));
  const png = multipart([{ field: 'file', filename: 'me.png', data: PNG }]);
  const r = await s.call('/api/agents/coder/avatar', { method: 'POST', raw: png.body, type: png.type });
  t.equal(r.status, 500);
  t.same(readdirSync(elsewhere), []);
});

await t.test('metrics and history: from the turn facts, per period, rebuilt by replay', async (t) => {
  const s = await serve(t);
  // Two days ago: only in 7d.
  await s.turn('main', 'completed', 4000);
  s.advance(2 * 24 * HOUR);
  await s.turn('main', 'completed', 1000);
  await s.turn('main', 'failed', 3000);
  await s.turn('main', 'timed_out', 2000);
  await s.turn('main', 'aborted', 2000);
  await s.turn('coder', 'completed', 1000);
  let r = await s.call('/api/agents/main/metrics?period=24h');
  t.same(r, {
    status: 200,
    body: { total_executions: 4, avg_duration_seconds: 2, error_count: 2, success_rate: 25, last_active: new Date(T0 + 2 * 24 * HOUR + 4000 + 8000).toISOString(), tokens_used: 20, period: '24h' },
  });
  r = await s.call('/api/agents/main/metrics?period=7d');
  t.match(r.body, { total_executions: 5, avg_duration_seconds: 2.4, error_count: 2, success_rate: 40, tokens_used: 40, period: '7d' });
  r = await s.call('/api/agents/main/metrics');
  t.match(r.body, { period: '24h', total_executions: 4 }, 'period defaults to 24h');
  r = await s.call('/api/agents/writer/metrics');
  t.same(r.body, { total_executions: 0, avg_duration_seconds: 0, error_count: 0, success_rate: 0, last_active: null, tokens_used: 0, period: '24h' });

  r = await s.call('/api/agents/main/metrics/history?period=24h');
  const hours = r.body as { timestamp: string; executions: number; errors: number; avg_duration: number }[];
  t.equal(hours.length, 24);
  t.equal(hours[23]!.timestamp, '2026-11-24T10:00:00.000Z', 'hourly buckets, the last holding now');
  t.same(hours[23], { timestamp: '2026-11-24T10:00:00.000Z', executions: 4, errors: 2, avg_duration: 2 });
  t.equal(hours.slice(0, 23).reduce((n, h) => n + h.executions, 0), 0);
  r = await s.call('/api/agents/main/metrics/history?period=7d');
  const days = r.body as { timestamp: string; executions: number }[];
  t.same(days.map((d) => d.timestamp), ['2026-11-18', '2026-11-19', '2026-11-20', '2026-11-21', '2026-11-22', '2026-11-23', '2026-11-24'].map((d) => `${d}T00:00:00.000Z`));
  t.same(days.map((d) => d.executions), [0, 0, 0, 0, 1, 0, 4]);

  for (const q of ['period=1h', 'period=', 'period=7D', 'period=%00']) {
    r = await s.call(`/api/agents/main/metrics?${q}`);
    t.match(r, { status: 400, body: { code: 'invalid-query' } }, q);
    r = await s.call(`/api/agents/main/metrics/history?${q}`);
    t.match(r, { status: 400, body: { code: 'invalid-query' } }, q);
  }
  t.equal((await s.call('/api/agents/main/metrics', { as: 'viewer' })).status, 200);
  t.equal((await s.call('/api/agents/main/metrics', { as: 'rviewer' })).status, 404, 'name validated against allowed_agents');
  t.equal((await s.call('/api/agents/main/metrics/history', { as: 'rviewer' })).status, 404);
  t.equal((await s.call('/api/agents/coder/metrics', { as: 'rviewer' })).status, 200);

  // `svc events replay` rebuilds the read model from the log alone, to the same rows.
  const scratch = new Database(':memory:');
  rebuildProjections(scratch, PROJECTIONS, s.log.read({}));
  t.same(diffProjections(s.log.projectionDb(), scratch, PROJECTIONS), []);
  scratch.close();
});

await t.test('GET /api/providers/available: the listing with the main agent defaults', async (t) => {
  const s = await serve(t);
  const r = await s.call('/api/providers/available', { as: 'viewer' });
  t.equal(r.status, 200);
  const body = r.body as { providers: { name: string; authenticated: boolean; models: string[]; default_model: string }[]; agent_default_model: string; agent_default_provider: string };
  t.same(body.providers.map((p) => [p.name, p.authenticated]), [['claude', true], ['codex', false], ['gemini', false]]);
  t.equal(body.agent_default_provider, 'claude');
  t.equal(body.agent_default_model, loadConfig(s.paths).config.model);
  t.equal(body.providers[0]!.default_model, body.agent_default_model);
  t.equal((await s.call('/api/providers/available', { as: null })).status, 401);
});

await t.test("an admin restricted to some agents cannot hand one of them svc's home (or what contains it)", async (t) => {
  const s = await serve(t);
  const before = registryFile(s.paths);
  for (const dir of ['/', s.paths.root, join(s.paths.root, 'workspace'), join(s.paths.root, '..')]) {
    mkdirSync(dir, { recursive: true });
    const r = await s.call('/api/agents/coder', { method: 'PUT', as: 'radmin', body: { additional_directories: [dir] } });
    t.equal(r.status, 400, dir);
  }
  t.equal(registryFile(s.paths), before, 'the registry is unchanged');
  t.equal((await s.call('/api/agents/coder', { method: 'PUT', as: 'radmin', body: { additional_directories: [join(s.extra, 'a')] } })).status, 200, 'an unrelated directory is fine');
  t.equal((await s.call('/api/agents/coder', { method: 'PUT', as: 'admin', body: { additional_directories: ['/'] } })).status, 200, 'an unrestricted admin decides for the whole machine');
});
