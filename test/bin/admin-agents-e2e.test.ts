// The admin agents, metrics, logs, config and providers routes against the real daemon: the
// composition root wires the actor, the projection folds real turns of the fake claude, and the
// static api.token is the legacy admin.
import t from 'tap';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { agentsOf } from '../../bus/index.js';
import { startDaemon } from '../../bin/daemon.js';
import { homePaths } from '../../store/index.js';
import { tempHome } from '../fixtures/temp-home.js';
import { TEST_ADMIN } from '../fixtures/http-server.js';

const BIN = fileURLToPath(new URL('../fixtures/bin', import.meta.url));

await t.test('a real turn shows in the agent list, its metrics and history; logs and config are served', async (t) => {
  const scratch = tempHome(t);
  const root = join(scratch.dir, 'home');
  mkdirSync(join(root, 'config'), { recursive: true });
  // The token is written up front: one generated at API start reaches the admin surface only after
  // the config watcher's next poll (reported to the lead; not this test's subject).
  const token = 'e2e-admin-token-0123456789abcdef';
  writeFileSync(join(root, 'config', 'config.json'), JSON.stringify({ api: { enabled: true, host: '127.0.0.1', port: 0, token } }));
  const d = await startDaemon({ paths: homePaths(root), logToStderr: false, internalPort: 0, apiPort: 0, killGraceMs: 300, env: { PATH: `${BIN}:${process.env.PATH}`, HOME: root } });
  scratch.beforeRemove(() => d.stop('test'));
  const get = async (path: string) => {
    const r = await fetch(`http://127.0.0.1:${d.apiPort}${path}`, { headers: { authorization: `Bearer ${token}`, connection: 'close' } });
    return { status: r.status, body: (await r.json()) as Record<string, unknown> };
  };

  const asked = agentsOf(d.bus).ask({ agent: 'main', transport: 'api', chat_id: 7, topic_id: null, text: 'ping', kind: 'foreground' }, TEST_ADMIN, { timeoutMs: 30_000 });
  await asked.outcome;

  const agents = await get('/api/agents');
  t.equal(agents.status, 200);
  t.match(agents.body, [{ name: 'main', online: true, status: 'online', active_sessions: 1, last_active: String, has_avatar: false, additional_directories: [] }]);
  const metrics = await get('/api/agents/main/metrics?period=24h');
  t.match(metrics, { status: 200, body: { total_executions: 1, error_count: 0, success_rate: 100, period: '24h' } });
  const history = await get('/api/agents/main/metrics/history?period=7d');
  t.equal((history.body as unknown as { executions: number }[]).reduce((n, b) => n + b.executions, 0), 1);
  t.match(await get('/api/providers/available'), { status: 200, body: { providers: Array, agent_default_provider: 'claude' } });
  const config = await get('/api/config');
  t.match(config.body, { api: { token: '***' } });
  t.notOk(JSON.stringify(config.body).includes(token), 'the API token is not served');
  const logs = await get('/api/logs?lines=500');
  t.match(logs.body, { agent: 'main', lines: Array });
  t.ok((logs.body.lines as string[]).some((l) => / svc \S+ running/.test(l)), "the daemon's own log lines are there");
});
