import t from 'tap';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { homePaths } from '../../store/index.js';
import { startDaemon } from '../../bin/daemon.js';
import { tempHome } from '../fixtures/temp-home.js';

const TOKEN = 'test-token-0123456789abcdef';

await t.test('the daemon serves the admin ops routes, and the instance name and audit log survive a restart', async (t) => {
  const home = tempHome(t);
  const paths = homePaths(join(home.dir, 'home'));
  mkdirSync(paths.configDir, { recursive: true });
  writeFileSync(paths.configFile, JSON.stringify({ api: { enabled: true, host: '127.0.0.1', port: 0, token: TOKEN } }));
  const start = () => startDaemon({ paths, logToStderr: false, internalPort: 0, apiPort: 0 });
  const call = async (port: number, path: string, init: { method?: string; body?: unknown } = {}) => {
    const r = await fetch(`http://127.0.0.1:${port}${path}`, {
      method: init.method ?? 'GET',
      headers: { authorization: `Bearer ${TOKEN}`, connection: 'close', 'content-type': 'application/json', 'accept-language': 'en' },
      ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
    });
    return { status: r.status, body: (await r.json()) as any };
  };

  let d = await start();
  let stopped = false;
  home.beforeRemove(() => (stopped ? undefined : d.stop('test')));
  t.ok(d.apiPort);
  let r = await call(d.apiPort!, '/api/system/status');
  t.match(r, { status: 200, body: { version: String, uptime_human: String, cpu_percent: Number } });
  r = await call(d.apiPort!, '/api/system/instance-name', { method: 'PUT', body: { instance_name: 'Lab' } });
  t.same(r, { status: 200, body: { instance_name: 'Lab' } });
  r = await call(d.apiPort!, '/api/dashboard/summary');
  t.match(r, { status: 200, body: { counters: { agents_total: 1 }, recent_activity: Array } });
  r = await call(d.apiPort!, '/api/tasks', { method: 'POST', body: { name: 'x', agent: 'ghost', prompt: 'hi' } });
  t.match(r, { status: 400, body: { code: 'invalid-body' } }, 'the task hub is attached: only a bad body is refused');
  await d.stop('test');
  stopped = true;

  d = await start();
  stopped = false;
  r = await call(d.apiPort!, '/api/system/status');
  t.equal(r.body.instance_name, 'Lab', 'the name is durable');
  r = await call(d.apiPort!, '/api/audit');
  t.same(
    r.body.map((e: { action: string; status: number; actor: null }) => [e.actor, e.action, e.status]),
    [
      [null, 'POST /api/tasks', 400],
      [null, 'PUT /api/system/instance-name', 200],
    ],
  );
  await d.stop('test');
  stopped = true;
});
