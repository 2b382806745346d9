import t from 'tap';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { PROJECTIONS, SqliteEventLog } from '../../store/index.js';
import { SVC, svc } from './cli-helpers.js';

/* What every command owes its caller: usage on --help, warnings where they are seen, a quiet end on a closed pipe. */

await t.test('config validate and show warn about unknown keys on stderr, and still succeed', async (t) => {
  const home = t.testdir({ config: { 'config.json': JSON.stringify({ modle: 'x', tasks: { max_paralel: 2 } }) } });
  for (const sub of ['validate', 'show']) {
    const r = svc(home, ['config', sub]);
    t.equal(r.code, 0, r.stderr);
    t.match(r.stderr, /warning: .*unknown keys modle, tasks\.max_paralel/);
  }
});

await t.test('every command and subcommand answers --help with its usage and exit 0, and changes nothing', async (t) => {
  const home = t.testdir();
  const commands = [
    [], ['start'], ['config'], ['config', 'show'], ['config', 'validate'], ['api'], ['api', 'enable'], ['ask'],
    ['auth'], ['auth', 'status'], ['auth', 'claude'], ['events'], ['events', 'tail'], ['events', 'show'], ['events', 'replay'],
    ['doctor'], ['logs'], ['stop'], ['status'], ['service'], ['service', 'install'], ['service', 'uninstall'], ['service', 'status'],
  ];
  // Every command with --help; -h on a few, since both go through the one parser.
  const runs = [...commands.map((c) => [...c, '--help']), ['-h'], ['events', 'tail', '-h'], ['auth', 'status', '-h'], ['service', 'install', '-h']];
  for (const args of runs) {
    const r = svc(home, args);
    t.equal(r.code, 0, `svc ${args.join(' ')}: ${r.stderr}`);
    t.match(r.stdout, /usage/i, `svc ${args.join(' ')} prints its usage`);
  }
  t.notOk(existsSync(join(home, 'config', 'config.json')), 'asking for help created no config');
  t.notOk(existsSync(join(home, 'events.db')), 'asking for help created no event log');
});

await t.test('output into a pipe the reader closed ends quietly, with no EPIPE stack trace', async (t) => {
  const home = t.testdir();
  const db = join(home, 'events.db');
  const log = SqliteEventLog.open(db, { projections: PROJECTIONS });
  const pad = 'x'.repeat(200);
  for (let i = 0; i < 10; i++) {
    log.append(Array.from({ length: 200 }, (_, j) => ({ stream: 'bench', type: 'bench.filler', data: { i, j, pad } })), new Date(0).toISOString());
  }
  log.close();
  const child = spawn(process.execPath, [SVC, 'events', 'tail', '-n', '2000'], { env: { ...process.env, SVC_HOME: home }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  await new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
  child.stdout.destroy(); // what `head` does once it has its lines
  const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
  t.equal(code, 141, 'what a shell reports for SIGPIPE, so pipefail still sees it');
  t.notMatch(stderr, /EPIPE|Error|at /, stderr);
});
