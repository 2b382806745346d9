// Both WebSocket surfaces of a real daemon: each socket's connection machine is an actor of the
// daemon's actor host, like agents and turns, and records the same connection facts on its own
// `conn:<id>` stream; a socket that never authenticates records nothing, and svc stopping closes
// what is left with `shutdown`.
import t from 'tap';
import WebSocket from 'ws';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startDaemon } from '../../bin/daemon.js';
import { readEvents } from './cli-helpers.js';
import { homePaths } from '../../store/index.js';
import { openAdminSocket } from '../fixtures/admin-socket-client.js';
import { connectDirect } from '../fixtures/direct-socket-client.js';
import { tempHome } from '../fixtures/temp-home.js';
import { until } from '../fixtures/until.js';

const API_TOKEN = 'hosted-static-token-0123456789abcdef';

await t.test('/ws and /ws/admin connections are hosted actors whose facts share one shape', async (t) => {
  const scratch = tempHome(t);
  const root = join(scratch.dir, 'home');
  mkdirSync(join(root, 'config'), { recursive: true });
  writeFileSync(join(root, 'config', 'config.json'), JSON.stringify({ api: { enabled: true, host: '127.0.0.1', port: 0, token: API_TOKEN } }));
  const paths = homePaths(root);
  const d = await startDaemon({ paths, logToStderr: false, internalPort: 0, apiPort: 0, env: { HOME: root } });
  let stopped = false;
  scratch.beforeRemove(() => (stopped ? undefined : d.stop('test')));
  const conns = () => d.host.ids().filter((id) => id.startsWith('conn:'));
  const facts = () => d.log.read({ types: ['connection.authenticated', 'connection.closed'] });

  const stranger = new WebSocket(`ws://127.0.0.1:${d.apiPort}/ws`);
  await new Promise((r) => stranger.once('open', r));
  await until('the unauthenticated socket hosted', () => conns().length === 1);
  stranger.send('not an auth frame');
  await new Promise((r) => stranger.once('close', r));
  await until('its actor gone from the host', () => conns().length === 0);
  t.same(facts(), [], 'a socket that never authenticates records nothing');

  const direct = await connectDirect(d.apiPort!, API_TOKEN, 31);
  const admin = await openAdminSocket(d.apiPort!, { authorization: `Bearer ${API_TOKEN}` });
  admin.send({ type: 'auth', token: API_TOKEN });
  await admin.next((f) => f.type === 'auth_ok');
  await until('both authenticated', () => facts().length === 2);
  t.equal(conns().length, 2, 'the host holds one actor per live socket');
  const [a, b] = facts();
  t.same(new Set(conns()), new Set([a!.stream, b!.stream]), 'each actor is named for its stream');
  const bySurface = Object.fromEntries(facts().map((e) => [(e.data as { surface: string }).surface, e.data]));
  t.same(bySurface, { direct: { surface: 'direct', chat_id: 31, channel_id: null }, admin: { surface: 'admin', role: 'admin' } });

  admin.ws.close(1000);
  await until('the admin close recorded', () => facts().length === 3);
  t.match(facts()[2], { type: 'connection.closed', data: { reason: 'client', code: 1000 } });
  t.equal(conns().length, 1, 'a closed socket’s actor has ended');

  stopped = true;
  await d.stop('test');
  direct.ws.terminate();
  const closed = readEvents(join(root, 'events.db')).filter((e) => e.type === 'connection.closed');
  t.match(closed.at(-1), { type: 'connection.closed', data: { reason: 'shutdown' } }, 'svc stopping closes the last socket as shutdown');
});
