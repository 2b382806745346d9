// Issue 9's "done when" for a crash: `kill -9` of the built daemon during a streamed reply whose CLI
// left a grandchild in its group. The restart ends every process of that group, and the chat is told:
// a notification, the partial answer on its next connection (once), and /retry asks again.
import t from 'tap';
import nacl from 'tweetnacl';
import WebSocket from 'ws';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { procSnapshot, readProcStat } from '../../store/index.js';
import { exited, readEvents, startSvc, until, processAlive } from './cli-helpers.js';

const BIN = fileURLToPath(new URL('../fixtures/bin', import.meta.url));

const alive = processAlive;
const groupMembers = (pgid: number) => procSnapshot().procs.filter((p) => p.pgid === pgid && p.state !== 'Z');

/** A client as any would write it: ws + tweetnacl, nothing from the server's code. */
async function connect(port: number, token: string, chat: number) {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/ws`);
  const keys = nacl.box.keyPair();
  let shared: Uint8Array | null = null;
  const frames: Record<string, unknown>[] = [];
  let wake = () => {};
  ws.on('message', (raw) => {
    const text = raw.toString();
    if (!shared) {
      shared = nacl.box.before(Buffer.from(JSON.parse(text).e2e_pk, 'base64'), keys.secretKey);
    } else {
      const buf = Buffer.from(text, 'base64');
      frames.push(JSON.parse(Buffer.from(nacl.box.open.after(buf.subarray(24), buf.subarray(0, 24), shared)!).toString('utf8')));
    }
    wake();
  });
  await new Promise((r) => ws.once('open', r));
  ws.send(JSON.stringify({ type: 'auth', token, e2e_pk: Buffer.from(keys.publicKey).toString('base64'), chat_id: chat }));
  const send = (obj: unknown) => {
    const nonce = nacl.randomBytes(24);
    ws.send(Buffer.concat([Buffer.from(nonce), Buffer.from(nacl.box.after(Buffer.from(JSON.stringify(obj)), nonce, shared!))]).toString('base64'));
  };
  /** The next frame of a type, in arrival order; bounded. */
  const next = async (type: string, timeoutMs = 20_000) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const i = frames.findIndex((x) => x.type === type);
      if (i >= 0) return frames.splice(i, 1)[0]!;
      if (Date.now() > deadline) throw new Error(`no ${type} frame; got ${JSON.stringify(frames.map((x) => x.type))}`);
      await new Promise<void>((r) => {
        wake = r;
        setTimeout(r, 200);
      });
    }
  };
  await until('auth_ok', () => shared !== null);
  return { ws, send, next, frames };
}

function start(t: { teardown(f: () => unknown): void }, home: string, env: NodeJS.ProcessEnv) {
  const daemon = startSvc(home, ['start'], { PATH: `${BIN}:${process.env.PATH}`, HOME: home, ...env });
  t.teardown(() => void daemon.kill('SIGKILL'));
  return daemon;
}

await t.test('kill -9 mid-stream: no process of the CLI group survives the restart, and the chat gets the partial answer and /retry', async (t) => {
  const dir = t.testdir();
  const home = join(dir, 'home');
  mkdirSync(join(home, 'config'), { recursive: true });
  writeFileSync(join(home, 'config', 'config.json'), JSON.stringify({ interagent_port: 0, api: { enabled: true, host: '127.0.0.1', port: 0 } }));
  const grandchildFile = join(dir, 'grandchild.pid');
  const words = Array.from({ length: 80 }, (_, i) => `w${i} `).join('');

  const first = start(t, home, { FAKE_CLI_GRANDCHILD: '1', FAKE_CLI_CHILD_PID_FILE: grandchildFile, FAKE_CLI_REPLY: words, FAKE_CLI_CHUNKS: '80', FAKE_CLI_DELAY_MS: '150' });
  const port = Number((await until('the API to listen', () => /direct API listening on 127\.0\.0\.1:(\d+)/.exec(first.output()), 30_000))[1]);
  const token = JSON.parse(readFileSync(join(home, 'config', 'config.json'), 'utf8')).api.token as string;
  const asking = await connect(port, token, 7);
  asking.send({ type: 'message', text: 'tell me a long story' });
  const firstDelta = (await asking.next('text_delta')).data as string;

  const db = join(home, 'events.db');
  const stream = await until('the turn to start', () => readEvents(db).find((e) => e.type === 'turn.spawned')?.stream);
  const saved = () => readEvents(db, stream).filter((e) => e.type === 'turn.progressed').map((e) => e.data.text as string).join('');
  await until('two checkpoints', () => readEvents(db, stream).filter((e) => e.type === 'turn.progressed').length >= 2, 20_000);
  first.kill('SIGKILL');
  await exited(first);
  const checkpointed = saved();
  const streamed = firstDelta + asking.frames.filter((f) => f.type === 'text_delta').map((f) => f.data as string).join('');
  asking.ws.terminate();
  t.ok(checkpointed.length > 0 && streamed.startsWith(checkpointed), 'the log holds a prefix of what the client saw');

  const leader = Number(readEvents(db, stream).find((e) => e.type === 'turn.spawned')!.data.pid);
  const grandchild = Number(readFileSync(grandchildFile, 'utf8'));
  t.teardown(() => {
    for (const pid of [leader, grandchild]) try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
  });
  t.equal(readProcStat(grandchild)?.pgid, leader, 'the grandchild is in the CLI leader\'s group');
  process.kill(leader, 'SIGKILL');
  await until('the leader to die', () => !alive(leader));
  t.ok(alive(grandchild), 'only the grandchild is left of the group');

  const second = start(t, home, {});
  const port2 = Number((await until('the API to listen again', () => /direct API listening on 127\.0\.0\.1:(\d+)/.exec(second.output()), 30_000))[1]);
  await until('every process of the group to be gone', () => groupMembers(leader).length === 0, 10_000);
  t.notOk(alive(grandchild));
  t.match(second.output(), /recorded 1 interrupted turn\(s\) as failed; ended 1 orphaned CLI process group\(s\) \(1 process\(es\)\)/);
  const failed = readEvents(db, stream).find((e) => e.type === 'turn.failed')!;
  t.same([failed.data.reason, failed.data.text], ['daemon-restarted', checkpointed], 'the partial answer is kept on the turn');

  const back = await connect(port2, token, 7);
  const notice = await back.next('result');
  t.equal(notice.interrupted, true);
  t.ok((notice.text as string).startsWith(checkpointed), 'the chat reads what had streamed');
  t.match(notice.text as string, /cut off by a restart of svc; send \/retry to ask again/);
  t.same([notice.stream_fallback, notice.files], [false, []]);

  const listed = (await (await fetch(`http://127.0.0.1:${port2}/api/notifications`, { headers: { authorization: `Bearer ${token}`, connection: 'close' } })).json()) as Record<string, unknown>[];
  const note = listed.find((n) => n.title === 'Answer interrupted by a restart')!;
  t.ok(note, 'a notification says so');
  t.equal(note.severity, 'warning');
  t.match(note.body as string, checkpointed.trim().slice(0, 40));
  t.match(note.body as string, /\/retry/);

  // A second connection of the chat is not told again; its first result is the retried answer.
  const again = await connect(port2, token, 7);
  again.send({ type: 'message', text: '/retry' });
  const retried = await again.next('result');
  t.equal(retried.interrupted, undefined);
  t.equal(retried.text, 'echo: tell me a long story', 'the original prompt runs again');
  again.send({ type: 'message', text: '/retry' });
  t.match((await again.next('result')).text, /^Nothing to retry/, 'once');
  t.notOk(back.frames.some((f) => f.type === 'result'), 'the first connection got nothing more');
  const after = readEvents(db, stream).map((e) => e.type);
  t.same(after.filter((x) => x === 'turn.notice_delivered' || x === 'turn.retried'), ['turn.notice_delivered', 'turn.retried']);

  back.ws.terminate();
  again.ws.terminate();
  second.kill('SIGTERM');
  t.equal(await exited(second), 0);
});

await t.test('svc stopped mid-stream (SIGTERM): the cut answer is kept, and the chat is told on the next start as after a crash', async (t) => {
  const dir = t.testdir();
  const home = join(dir, 'home');
  mkdirSync(join(home, 'config'), { recursive: true });
  writeFileSync(join(home, 'config', 'config.json'), JSON.stringify({ interagent_port: 0, api: { enabled: true, host: '127.0.0.1', port: 0 } }));
  const words = Array.from({ length: 80 }, (_, i) => `v${i} `).join('');
  const first = start(t, home, { FAKE_CLI_REPLY: words, FAKE_CLI_CHUNKS: '80', FAKE_CLI_DELAY_MS: '150' });
  const port = Number((await until('the API to listen', () => /direct API listening on 127\.0\.0\.1:(\d+)/.exec(first.output()), 30_000))[1]);
  const token = JSON.parse(readFileSync(join(home, 'config', 'config.json'), 'utf8')).api.token as string;
  const asking = await connect(port, token, 9);
  asking.send({ type: 'message', text: 'a story, please' });
  const streamed = (await asking.next('text_delta')).data as string;
  first.kill('SIGTERM');
  t.equal(await exited(first), 0);
  t.notOk(asking.frames.some((f) => f.type === 'result'), 'the connection closed before any answer');

  const db = join(home, 'events.db');
  const aborted = readEvents(db).find((e) => e.type === 'turn.aborted')!;
  t.equal(aborted.data.cause, 'shutdown');
  t.ok((aborted.data.text as string).startsWith(streamed), 'every streamed character is on the turn');

  const second = start(t, home, {});
  const port2 = Number((await until('the API to listen again', () => /direct API listening on 127\.0\.0\.1:(\d+)/.exec(second.output()), 30_000))[1]);
  const back = await connect(port2, token, 9);
  const notice = await back.next('result');
  t.equal(notice.interrupted, true);
  t.ok((notice.text as string).startsWith(aborted.data.text as string));
  const listed = (await (await fetch(`http://127.0.0.1:${port2}/api/notifications`, { headers: { authorization: `Bearer ${token}`, connection: 'close' } })).json()) as Record<string, unknown>[];
  t.equal(listed.filter((n) => n.title === 'Answer interrupted by a restart').length, 1, 'notified once, at the stop');
  back.send({ type: 'message', text: '/retry' });
  t.equal((await back.next('result')).text, 'echo: a story, please');
  back.ws.terminate();
  second.kill('SIGTERM');
  t.equal(await exited(second), 0);
});
