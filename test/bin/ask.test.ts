import t from 'tap';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { exited, readEvents, startSvc, svc, until } from './cli-helpers.js';

const BIN = fileURLToPath(new URL('../fixtures/bin', import.meta.url));
const TOOLS = fileURLToPath(new URL('../../home-defaults/workspace/tools', import.meta.url));

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

await t.test('svc ask streams a reply from the running daemon; ask_agent.py reaches a sub-agent', async (t) => {
  const home = join(t.testdir(), 'home');
  const port = await freePort();
  mkdirSync(join(home, 'config'), { recursive: true });
  mkdirSync(join(home, '_secrets'), { recursive: true, mode: 0o700 });
  writeFileSync(join(home, 'config', 'config.json'), JSON.stringify({ interagent_port: port }));
  writeFileSync(join(home, '_secrets', 'agents.json'), JSON.stringify([{ name: 'helper', telegram_token: '1:x', can_call: [] }]));
  const env = { PATH: `${BIN}:${process.env.PATH}`, FAKE_CLI_CHUNKS: '3' };
  const oldPath = process.env.PATH;
  process.env.PATH = env.PATH;
  process.env.FAKE_CLI_CHUNKS = '3';
  const daemon = startSvc(home);
  process.env.PATH = oldPath;
  delete process.env.FAKE_CLI_CHUNKS;
  t.teardown(() => void daemon.kill('SIGKILL'));
  await until('ready', () => readEvents(join(home, 'events.db')).some((e) => e.type === 'daemon.ready'), 20_000);

  const ok = svc(home, ['ask', 'hello there']);
  t.equal(ok.code, 0, ok.stderr);
  t.equal(ok.stdout.trim(), 'echo: hello there');
  const failed = svc(home, ['ask', 'please [[fail]]']);
  t.equal(failed.code, 1, 'a failed turn exits non-zero');
  t.match(failed.stderr, /boom/);
  const sub = svc(home, ['ask', '--agent', 'helper', 'hi helper']);
  t.equal(sub.code, 0, sub.stderr);
  t.match(sub.stdout, /echo: hi helper/);
  t.equal(svc(home, ['ask', '--agent', 'nobody', 'x']).code, 1);
  const empty = svc(home, ['ask', '@opus']);
  t.equal(empty.code, 1, 'a directive with nothing to ask is refused');
  t.match(empty.stderr, /the message is empty/, 'with its reason, not an internal error');

  // An agent's tool script, with the environment the runtime gives the main agent's CLI.
  const token = JSON.parse(readFileSync(join(home, '_secrets', 'main_agent_token.json'), 'utf8')).token as string;
  const py = spawnSync('/usr/bin/python3', [join(TOOLS, 'ask_agent.py'), 'helper', 'status please'], {
    env: { PATH: process.env.PATH, SVC_AGENT_NAME: 'main', SVC_INTERAGENT_TOKEN: token, SVC_INTERAGENT_PORT: String(port) },
    encoding: 'utf8',
  });
  t.equal(py.status, 0, py.stderr);
  t.match(py.stdout, /status please/);
  const removed = spawnSync('/usr/bin/python3', [join(TOOLS, 'ask_agent.py'), '--user-id', 'bob', 'helper', 'x'], { encoding: 'utf8' });
  t.equal(removed.status, 2, '--user-id was removed');

  daemon.kill('SIGTERM');
  t.equal(await exited(daemon), 0);
  const down = svc(home, ['ask', 'anyone there?']);
  t.equal(down.code, 1);
  t.match(down.stderr, /not running/);
});
