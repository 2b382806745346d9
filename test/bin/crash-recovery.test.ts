import t from 'tap';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startDaemon } from '../../bin/daemon.js';
import { homePaths } from '../../store/index.js';
import { exited, svc, until, processAlive } from './cli-helpers.js';

const FIXTURE = fileURLToPath(new URL('../fixtures/daemon-mid-turn.ts', import.meta.url));
const TS_LOADER = import.meta.resolve('@tapjs/typescript/import');

const alive = processAlive;

await t.test('a daemon killed mid-turn leaves no orphan after restart and the turn is recorded as failed', async (t) => {
  const home = join(t.testdir(), 'home');
  const child = spawn(process.execPath, [`--import=${TS_LOADER}`, FIXTURE, home], {
    env: { ...process.env, TS_NODE_TRANSPILE_ONLY: '1' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  const [, stream, pidText] = await until('the CLI to start', () => /spawned (\S+) (\d+)/.exec(out), 30_000);
  const cliPid = Number(pidText);
  child.kill('SIGKILL');
  await exited(child);
  t.ok(alive(cliPid), 'the CLI outlived the daemon (its own process group)');

  const d = await startDaemon({ paths: homePaths(home), logToStderr: false, internalPort: 0 });
  await until('the orphan to be gone', () => !alive(cliPid), 10_000);
  t.notOk(alive(cliPid), 'restart ended the orphaned process group');
  const turn = d.log.read({ stream: stream! });
  // The turn's journal (what reached its machine) is on its stream too; its own facts are these.
  t.same(turn.filter((e) => !e.type.startsWith('actor.')).map((e) => e.type), ['turn.started', 'turn.spawned', 'turn.failed']);
  t.same(turn.slice(0, 2).map((e) => e.type), ['actor.started', 'actor.input'], 'the journal opens the stream: the start, then the CLI spawned');
  t.equal(turn.at(-1)!.data.reason, 'daemon-restarted');
  t.ok(d.log.read({ stream: 'daemon', types: ['daemon.recovered'] }).length === 1, 'the crash itself is recorded');
  await d.stop('test');

  const shown = svc(home, ['events', 'show', stream!]);
  t.equal(shown.code, 0);
  t.match(shown.stdout, /turn\.started[\s\S]*turn\.spawned[\s\S]*turn\.failed.*daemon-restarted/, 'svc events show tells the whole turn');
});
