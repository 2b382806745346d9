// `/ws/admin` and the chat REST against the real daemon, real runtime and the fake CLIs: the static
// api.token is the legacy admin; a session's provider override reaches the CLI as an @model directive.
import t from 'tap';
import WebSocket from 'ws';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startDaemon } from '../../bin/daemon.js';
import { homePaths } from '../../store/index.js';
import { openAdminSocket, type Frame } from '../fixtures/admin-socket-client.js';
import { tempHome } from '../fixtures/temp-home.js';

const BIN = fileURLToPath(new URL('../fixtures/bin', import.meta.url));

async function boot(t: { teardown(f: () => unknown): void }) {
  const scratch = tempHome(t);
  const root = join(scratch.dir, 'home');
  const record = `${root}.argv.ndjson`;
  mkdirSync(join(root, 'config'), { recursive: true });
  writeFileSync(join(root, 'config', 'config.json'), JSON.stringify({ api: { enabled: true, host: '127.0.0.1', port: 0, token: 'e2e-static-token-0123456789abcdef' } }));
  const d = await startDaemon({
    paths: homePaths(root), logToStderr: false, internalPort: 0, apiPort: 0, killGraceMs: 300,
    env: { PATH: `${BIN}:${process.env.PATH}`, HOME: root, FAKE_CLI_REPLY: 'Hello from the CLI', FAKE_CLI_RECORD: record },
  });
  scratch.beforeRemove(() => d.stop('test'));
  const token = JSON.parse(readFileSync(join(root, 'config', 'config.json'), 'utf8')).api.token as string;
  const recorded = () => (existsSync(record) ? readFileSync(record, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { argv: string[]; stdin: string }) : []);
  return { d, token, recorded, port: d.apiPort! };
}

async function socket(port: number, token: string) {
  const c = await openAdminSocket(port, { authorization: `Bearer ${token}` });
  c.send({ type: 'auth', token });
  await c.next((f) => f.type === 'auth_ok');
  return c;
}

await t.test('a turn over /ws/admin runs the fake CLI, streams to both sockets of the legacy admin, and is stored', async (t) => {
  const { token, port, recorded } = await boot(t);
  const a = await socket(port, token);
  const b = await socket(port, token);
  t.match(a.frames[0], { type: 'auth_ok', role: 'admin', agents: ['main'] });
  t.teardown(() => {
    a.ws.terminate();
    b.ws.terminate();
  });
  a.ws.send(JSON.stringify({ type: 'message', agent: 'main', text: 'hi', user_msg_id: 'u1', assistant_msg_id: 'a1' }));
  const result = await a.next((f) => f.type === 'result');
  t.match(result, { text: 'Hello from the CLI', agent: 'main' });
  t.same(await b.next((f) => f.type === 'result'), result, 'the second socket sees it too');
  t.ok(a.frames.some((f) => f.type === 'text_delta' && f.session_id === result.session_id), 'streamed with the session id');

  const api = (path: string, init: RequestInit = {}) =>
    fetch(`http://127.0.0.1:${port}${path}`, { ...init, headers: { authorization: `Bearer ${token}`, connection: 'close', 'content-type': 'application/json' } }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));
  const history = await api(`/api/chat/sessions/${result.session_id}/messages`);
  t.same(history.body.map((m: Frame) => [m.id, m.sender, m.content]), [['u1', 'user', 'hi'], ['a1', 'agent', 'Hello from the CLI']]);

  t.equal((await api(`/api/chat/sessions/${result.session_id}/provider`, { method: 'POST', body: JSON.stringify({ provider: 'codex', model: 'gpt-5' }) })).status, 200);
  a.ws.send(JSON.stringify({ type: 'message', agent: 'main', text: 'now codex', session_id: result.session_id }));
  await a.next((f) => f.type === 'result' && f !== result);
  const last = recorded().at(-1)!;
  t.equal(last.argv[0], 'exec', 'the override sent the turn to codex');
  t.equal(last.stdin.trim(), 'now codex', 'the directive is not part of the prompt');

  const read = await api(`/api/chat/sessions/${result.session_id}/read`, { method: 'POST', body: JSON.stringify({ last_read_message_id: 'a1' }) });
  t.same(read.body, { session_id: result.session_id, last_read_message_id: 'a1', unread_count: 1 });
  t.match(await b.next((f) => f.type === 'chat.read'), { session_id: result.session_id, last_read_message_id: 'a1' });

  const status = await new Promise<number>((resolve, reject) => {
    const anon = new WebSocket(`ws://127.0.0.1:${port}/ws/admin`);
    anon.once('unexpected-response', (req, res) => {
      req.destroy();
      resolve(res.statusCode ?? 0);
    });
    anon.once('open', () => reject(new Error('upgraded without credentials')));
    anon.once('error', () => undefined);
  });
  t.equal(status, 401, 'no credentials: 401');
});
