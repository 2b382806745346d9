// Issue 4's "done when", end to end: the README's example client and an independent ws+tweetnacl
// client against the real daemon, real runtime and the fake claude.
import t from 'tap';
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startDaemon } from '../../bin/daemon.js';
import { homePaths } from '../../store/index.js';
import { connectDirect } from '../fixtures/direct-socket-client.js';
import { tempHome } from '../fixtures/temp-home.js';
import { exited, until } from './cli-helpers.js';
import { rawCommand } from '../fixtures/any-event.js';

const BIN = fileURLToPath(new URL('../fixtures/bin', import.meta.url));
const EXAMPLE = fileURLToPath(new URL('../../examples/direct-client.mjs', import.meta.url));

async function bootApi(t: { teardown(f: () => unknown): void }, name: string, env: Record<string, string> = {}) {
  const scratch = tempHome(t);
  const root = join(scratch.dir, name);
  mkdirSync(join(root, 'config'), { recursive: true });
  writeFileSync(join(root, 'config', 'config.json'), JSON.stringify({ api: { enabled: true, host: '127.0.0.1', port: 0 } }));
  const d = await startDaemon({
    paths: homePaths(root),
    logToStderr: false,
    internalPort: 0,
    apiPort: 0,
    killGraceMs: 300,
    env: { PATH: `${BIN}:${process.env.PATH}`, HOME: root, ...env },
  });
  scratch.beforeRemove(() => d.stop('test'));
  const token = JSON.parse(readFileSync(join(root, 'config', 'config.json'), 'utf8')).api.token as string;
  return { d, token, root, base: `http://127.0.0.1:${d.apiPort}` };
}

const connect = connectDirect;

await t.test('the example client chats with the main agent through the encrypted API', async (t) => {
  const { d, token } = await bootApi(t, 'a', { FAKE_CLI_CHUNKS: '3' });
  const child = spawn(process.execPath, [EXAMPLE, '--url', `ws://127.0.0.1:${d.apiPort}/ws`, 'hello from the example'], {
    env: { ...process.env, SVC_API_TOKEN: token },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (c) => (out += c));
  child.stderr.on('data', (c) => (out += c));
  t.equal(await exited(child), 0, out);
  t.match(out, /echo: hello from the example/);
});

await t.test('stream, files both ways, notifications, and abort against the real runtime', async (t) => {
  const { d, token, base, root } = await bootApi(t, 'b');
  const c = await connect(d.apiPort!, token);
  c.send({ type: 'message', text: 'ping' });
  const delta = await c.next('text_delta');
  t.match(delta.data as string, /echo: ping/);
  const result = await c.next('result');
  t.same([result.text, result.stream_fallback], ['echo: ping', false]);

  const form = new FormData();
  form.append('file', new Blob([Buffer.from('report body\n')]), 'report.txt');
  const up = await fetch(`${base}/upload`, { method: 'POST', body: form, headers: { authorization: `Bearer ${token}`, connection: 'close' } });
  t.equal(up.status, 200);
  const uploaded = (await up.json()) as { path: string; prompt: string; size: number };
  t.equal(uploaded.size, 12);
  t.ok(uploaded.path.startsWith(join(root, 'workspace', 'api_files')));
  const down = await fetch(`${base}/files?path=${encodeURIComponent(uploaded.path)}`, { headers: { authorization: `Bearer ${token}`, connection: 'close' } });
  t.equal(await down.text(), 'report body\n');
  t.equal((await fetch(`${base}/files?path=${encodeURIComponent(uploaded.path)}`, { headers: { connection: 'close' } })).status, 401);

  await d.bus.send(rawCommand('notification.create'), { source: 'webhook', outcome: 'success', title: 'Deploy hook', body: 'build 42 passed', source_id: 'hook-1' });
  const pushed = (await c.next('notification')).notification as Record<string, unknown>;
  t.same([pushed.title, pushed.body, pushed.read], ['Deploy hook', 'build 42 passed', false]);
  const listed = (await (await fetch(`${base}/api/notifications`, { headers: { authorization: `Bearer ${token}`, connection: 'close' } })).json()) as { id: string }[];
  t.equal(listed[0]!.id, pushed.id);
  const count = (await (await fetch(`${base}/api/notifications/unread-count`, { headers: { authorization: `Bearer ${token}`, connection: 'close' } })).json()) as { count: number };
  t.equal(count.count, 1);

  const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json', connection: 'close' };
  const created = await fetch(`${base}/api/chat/sessions`, { method: 'POST', headers: auth, body: JSON.stringify({ agent: 'main' }) });
  t.equal(created.status, 201);
  const session = (await created.json()) as { id: string };
  const renamed = await fetch(`${base}/api/chat/sessions/${session.id}`, { method: 'PUT', headers: auth, body: JSON.stringify({ title: 'Release notes' }) });
  t.same([renamed.status, ((await renamed.json()) as { title: string }).title], [200, 'Release notes']);
  t.equal((await fetch(`${base}/api/chat/sessions/nope`, { method: 'PUT', headers: auth, body: JSON.stringify({ title: 'x' }) })).status, 404);

  mkdirSync(join(root, 'avatars'));
  writeFileSync(join(root, 'avatars', 'main.png'), Buffer.from('89504e470d0a1a0a', 'hex'));
  const avatar = await fetch(`${base}/api/agents/main/avatar`, { headers: { connection: 'close' } });
  t.same([avatar.status, avatar.headers.get('content-type')], [200, 'image/png'], 'avatars need no token');

  const voice = join(root, 'workspace', 'api_files', 'note.ogg');
  writeFileSync(voice, 'not really audio');
  const tr = await fetch(`${base}/api/transcribe`, { method: 'POST', headers: auth, body: JSON.stringify({ file_path: voice }) });
  t.equal(tr.status, 503, 'no transcription backend here');
  t.match(((await tr.json()) as { error: string }).error, /install/i, 'the error says how to get one');
  c.ws.close();

  const slow = await bootApi(t, 'c', { FAKE_CLI_HANG: '1' });
  const s = await connect(slow.d.apiPort!, slow.token);
  s.send({ type: 'message', text: 'take your time' });
  await until('the CLI to run', () => slow.d.log.read({ types: ['turn.spawned'] }).length > 0);
  s.send({ type: 'message', text: '/stop' });
  const ok = await s.next('abort_ok');
  t.equal(ok.killed, 1);
  const aborted = await s.next('result');
  t.ok(aborted, 'the aborted turn still ends with a result frame');
  t.equal(slow.d.log.read({ types: ['turn.aborted'] }).length, 1, 'and is recorded as aborted');
  s.ws.close();
});

await t.test('/stop over /ws also drops the messages queued behind the turn it kills', async (t) => {
  const { d, token } = await bootApi(t, 'stop', { FAKE_CLI_HANG: '1' });
  const s = await connect(d.apiPort!, token);
  s.send({ type: 'message', text: 'take your time' });
  await until('the CLI to run', () => d.log.read({ types: ['turn.spawned'] }).length > 0);
  s.send({ type: 'message', text: 'queued behind it' });
  s.send({ type: 'message', text: 'and this one too' });
  s.send({ type: 'message', text: '/stop' });
  t.equal((await s.next('abort_ok')).killed, 1);
  const results = [await s.next('result'), await s.next('result'), await s.next('result')];
  t.equal(results.filter((r) => r.text === 'Cancelled by /stop.').length, 2, 'the queued messages are answered as cancelled');
  // Had a queued message survived the stop, its turn would start (and hang) right after the kill.
  const other = await connect(d.apiPort!, token, 8);
  other.send({ type: 'message', text: '/new' });
  await other.next('result');
  t.equal(d.log.read({ types: ['turn.started'] }).length, 1, 'no second turn.started follows');
  s.ws.close();
  other.ws.close();
});

await t.test('a message the runtime refuses reaches the client with its own code, not internal_error', async (t) => {
  const { d, token } = await bootApi(t, 'refuse');
  const errors: { level: string; msg: string }[] = [];
  d.bus.transient$.subscribe((m) => {
    if (m.type === 'log.line' && (m.data as { level: string }).level === 'error') errors.push(m.data as { level: string; msg: string });
  });
  const s = await connect(d.apiPort!, token);
  s.send({ type: 'message', text: '@opus   ' });
  t.match(await s.next('error'), { code: 'empty', message: /empty/ }, 'a directive and nothing to ask');
  s.send({ type: 'message', text: 'x'.repeat(300 * 1024) });
  t.match(await s.next('error'), { code: 'message_too_large', message: /limit is 262144/ });
  // /tasks over /ws: WIRE's result frame, text only (its buttons are data for transports that show them).
  s.send({ type: 'message', text: '/tasks' });
  const tasks = await s.next('result');
  t.same(Object.keys(tasks).sort(), ['files', 'stream_fallback', 'text', 'type']);
  t.match(tasks.text, /^Tasks in this chat \(0\)\n\nRunning \(0\)/);
  s.send({ type: 'message', text: 'tsc:cancel:../x' });
  t.match(await s.next('result'), { text: /does not name a task id; nothing changed/ });
  s.send({ type: 'message', text: 'still works' });
  t.match(await s.next('result'), { text: 'echo: still works' });
  t.same(errors, [], 'nothing logged at ERROR');
  t.equal(d.log.read({ types: ['turn.started'] }).length, 1, 'only the good message ran a turn');
  s.ws.close();
});
