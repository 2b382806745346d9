import t from 'tap';
import { appendFileSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { formatLogLine, startAdminAgents } from '../../actors/index.js';
import { Bus } from '../../bus/index.js';
import { ADMIN_STATUSES, systemRoutes } from '../../edges/index.js';
import { MAX_LOG_LINES, maskSecrets, type AgentConfig, type Principal } from '../../schemas/index.js';
import { PROJECTIONS, SqliteEventLog, agentTurnsReadModel, homePaths, loadConfig, loadRegistry, notificationReadModel, saveRegistry } from '../../store/index.js';
import { adminUser, testAdminJwt } from '../fixtures/admin-api.js';
import { serveSurfaces } from '../fixtures/http-server.js';

type TT = { testdir(): string; teardown(fn: () => void): void };

const T0 = Date.parse('2026-11-22T10:00:00.000Z');

const PEOPLE: Record<string, Principal> = {
  admin: adminUser('admin', 'admin'),
  operator: adminUser('op', 'operator'),
  viewer: adminUser('vi', 'viewer'),
  rop: adminUser('rop', 'operator', ['coder']),
};

async function serve(t: TT) {
  const dir = t.testdir();
  const paths = homePaths(join(dir, 'home'));
  const loaded = loadConfig(paths).config;
  const config: AgentConfig = {
    ...loaded,
    telegram_token: '123:bot-secret',
    gemini_api_key: 'gem-secret',
    api: { ...loaded.api, token: 'api-secret', jwt_secret: 'jwt-secret' },
    matrix: { ...loaded.matrix, password: 'matrix-secret', access_token: 'matrix-token' },
  };
  saveRegistry(paths, [{ name: 'coder', telegram_token: '1:x', interagent_token: 'i'.repeat(40) }]);
  mkdirSync(paths.logsDir, { recursive: true });
  const log = SqliteEventLog.open(join(dir, 'events.db'), { projections: PROJECTIONS });
  const bus = new Bus({ log, clock: () => T0 });
  const actor = startAdminAgents({ bus, paths, config: () => config, registry: () => loadRegistry(paths), turns: agentTurnsReadModel(log.projectionDb()), providers: () => [] });
  const deps = { bus, paths, config: () => config, registry: () => loadRegistry(paths), users: () => [], notifications: notificationReadModel(log.projectionDb()), clock: () => T0, version: 'test' };
  const srv = await serveSurfaces(t, [{ name: 'admin', routes: systemRoutes(deps), statuses: ADMIN_STATUSES, authenticators: [testAdminJwt(PEOPLE)] }]);
  t.teardown(() => {
    actor.unsubscribe();
    bus.close();
    log.close();
  });
  const base = `http://127.0.0.1:${srv.port}`;
  const call = async (path: string, as: string | null = 'admin') => {
    const headers: Record<string, string> = { connection: 'close' };
    if (as !== null) headers.authorization = `Bearer as:${as}`;
    const r = await fetch(base + path, { headers });
    const text = await r.text();
    return { status: r.status, body: text ? (JSON.parse(text) as unknown) : null };
  };
  const file = join(paths.logsDir, 'svc.log');
  /** A line as the log sink writes it, `s` seconds after T0. */
  const write = (s: number, msg: string, fields: Record<string, unknown> = {}, to = file) => appendFileSync(to, formatLogLine(T0 + s * 1000, { level: 'info', msg, ...fields }));
  return { dir, paths, config, call, write, file };
}

await t.test('GET /api/config: the configuration with every credential masked; operator and up', async (t) => {
  const s = await serve(t);
  const r = await s.call('/api/config');
  t.equal(r.status, 200);
  const text = JSON.stringify(r.body);
  for (const secret of ['bot-secret', 'gem-secret', 'api-secret', 'jwt-secret', 'matrix-secret', 'matrix-token']) t.notOk(text.includes(secret), `${secret} is not served`);
  t.match(r.body, { telegram_token: '***', gemini_api_key: '***', api: { token: '***', jwt_secret: '***', port: s.config.api.port }, matrix: { password: '***', access_token: '***' }, model: s.config.model });
  t.equal((await s.call('/api/config', 'operator')).status, 200);
  t.match(await s.call('/api/config', 'viewer'), { status: 403, body: { code: 'forbidden' } });
  t.equal((await s.call('/api/config', null)).status, 401);
});

await t.test('maskSecrets: nested values, lists and numbers under a credential key; plural and env-style names', async (t) => {
  t.same(
    maskSecrets({
      token: { value: 'a', nested: { deep: 'b' } },
      api_keys: ['k1', 'k2'],
      docker: { env: { OPENAI_API_KEY: 'sk', HF_TOKEN: 'hf', PATH: '/bin' } },
      pin_password: 1234,
      client_secrets: { x: 'y' },
      heartbeat: { ack_token: 'HEARTBEAT_OK' },
      max_tokens: 100,
      empty_token: '',
      model: 'm',
    }),
    {
      token: { value: '***', nested: { deep: '***' } },
      api_keys: ['***', '***'],
      docker: { env: { OPENAI_API_KEY: '***', HF_TOKEN: '***', PATH: '/bin' } },
      pin_password: '***',
      client_secrets: { x: '***' },
      heartbeat: { ack_token: 'HEARTBEAT_OK' },
      max_tokens: 100,
      empty_token: '',
      model: 'm',
    },
  );
});

await t.test('GET /api/logs: the newest lines, per agent, across rotation, capped, never outside logs/', async (t) => {
  const s = await serve(t);
  const rotated = join(s.paths.logsDir, 'svc.log.1');
  s.write(1, 'old daemon line', {}, rotated);
  s.write(2, 'old coder line', { agent: 'coder' }, rotated);
  s.write(3, 'daemon started', { pid: 1 });
  s.write(4, 'coder said\nsecond line of it', { agent: 'coder' });
  s.write(5, 'main turn', { agent: 'main' });
  writeFileSync(join(s.dir, 'outside.log'), formatLogLine(T0 + 9000, { level: 'info', msg: 'OUTSIDE SECRET' }));
  symlinkSync(join(s.dir, 'outside.log'), join(s.paths.logsDir, 'svc.log.2'));

  let r = await s.call('/api/logs', 'operator');
  t.equal(r.status, 200);
  const body = r.body as { agent: string; lines: string[] };
  t.equal(body.agent, 'main', 'agent defaults to main');
  t.match(body.lines, [/old daemon line/, /daemon started/, /main turn agent=main/]);
  t.equal(body.lines.length, 3, "main's log leaves out other agents' records");

  r = await s.call('/api/logs?agent=coder&lines=100');
  t.same((r.body as { lines: string[] }).lines.map((l) => l.replace(/^\d{4}-\S+ \S+\s+/, '')), ['old coder line agent=coder', 'coder said', 'second line of it agent=coder']);
  r = await s.call('/api/logs?lines=2');
  t.same((r.body as { lines: string[] }).lines.length, 2);
  t.match((r.body as { lines: string[] }).lines, [/daemon started/, /main turn/]);
  r = await s.call(`/api/logs?lines=${MAX_LOG_LINES * 10}`);
  t.equal(r.status, 200, 'lines above the cap are served at the cap');
  t.notOk(JSON.stringify(r.body).includes('OUTSIDE SECRET'), 'a symlinked log file is not followed');

  for (const q of ['lines=0', 'lines=-1', 'lines=abc', 'lines=1.5', 'lines=', `agent=${'x'.repeat(200)}`, 'agent=']) {
    r = await s.call(`/api/logs?${q}`);
    t.match(r, { status: 400, body: { code: /invalid-(query|command)/ } }, q);
  }
  for (const agent of ['..%2F..%2Fetc%2Fpasswd', 'ghost', 'svc.log']) {
    r = await s.call(`/api/logs?agent=${agent}`);
    t.same(r, { status: 404, body: { error: `agent ${JSON.stringify(decodeURIComponent(agent))} does not exist`, code: 'not-found' } }, agent);
  }
  t.match(await s.call('/api/logs', 'viewer'), { status: 403, body: { code: 'forbidden' } });
  t.match(await s.call('/api/logs/poll', 'viewer'), { status: 403, body: { code: 'forbidden' } });
  t.equal((await s.call('/api/logs?agent=main', 'rop')).status, 404, 'refused, not widened: main is not in allowed_agents');
  t.equal((await s.call('/api/logs/poll?agent=main', 'rop')).status, 404);
  t.equal((await s.call('/api/logs', 'rop')).status, 404, 'the default agent is checked too');
  r = await s.call('/api/logs?agent=coder', 'rop');
  t.equal((r.body as { lines: string[] }).lines.length, 3);
});

await t.test('GET /api/logs/poll: new lines after the cursor it returned; survives rotation', async (t) => {
  const s = await serve(t);
  s.write(1, 'one');
  s.write(2, 'two', { agent: 'coder' });
  let r = await s.call('/api/logs/poll?agent=main&after=0');
  t.same(r.status, 200);
  let body = r.body as { agent: string; lines: string[]; timestamp: number };
  t.match(body.lines, [/one$/]);
  t.equal(body.timestamp, (T0 + 2000) / 1000, 'the cursor is the newest record scanned, even one of another agent');

  r = await s.call(`/api/logs/poll?agent=main&after=${body.timestamp}`);
  t.same(r.body, { agent: 'main', lines: [], timestamp: body.timestamp }, 'nothing new: same cursor back');

  s.write(3, 'three');
  s.write(4, 'four');
  r = await s.call(`/api/logs/poll?agent=main&after=${body.timestamp}`);
  body = r.body as typeof body;
  t.match(body.lines, [/three$/, /four$/]);
  t.equal(body.timestamp, T0 / 1000 + 4);

  // Rotation between polls: the sink renames svc.log to svc.log.1 and starts a new one.
  const { renameSync } = await import('node:fs');
  s.write(5, 'five');
  renameSync(s.file, join(s.paths.logsDir, 'svc.log.1'));
  s.write(6, 'six');
  r = await s.call(`/api/logs/poll?agent=main&after=${body.timestamp}`);
  t.match((r.body as typeof body).lines, [/five$/, /six$/]);

  for (const q of ['after=-1', 'after=abc', 'after=1e9', 'after=Infinity', 'after=']) {
    r = await s.call(`/api/logs/poll?${q}`);
    t.match(r, { status: 400, body: { code: 'invalid-query' } }, q);
  }
});

await t.test('logs: no log file yet is an empty list, not an error', async (t) => {
  const s = await serve(t);
  t.same(await s.call('/api/logs'), { status: 200, body: { agent: 'main', lines: [] } });
  t.same(await s.call('/api/logs/poll?after=12.5'), { status: 200, body: { agent: 'main', lines: [], timestamp: 12.5 } });
});
