// `svc events replay --check` on logs a real daemon wrote: its own start, and its turns journaled
// across a SIGKILL and a restart (re-driven from the journal alone, and an altered journal named).
// The golden logs are test/bin/replay-check.test.ts's.
import t from 'tap';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AnyEnvelope } from '../../schemas/index.js';
import { copyLog, exited, freePortHome, readEvents, startSvc, svc, until } from './cli-helpers.js';

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

const FAKE_BIN = fileURLToPath(new URL('../fixtures/bin', import.meta.url));

await t.test('a daemon run’s own log passes replay --check, and every fact of its start carries one correlation', async (t) => {
  const home = join(t.testdir(), 'home');
  const daemon = startSvc(home);
  const db = join(home, 'events.db');
  await until('daemon.ready', () => readEvents(db).some((e) => e.type === 'daemon.ready'));
  daemon.kill('SIGTERM');
  t.equal(await exited(daemon), 0);
  const r = svc(home, ['events', 'replay', '--check']);
  t.equal(r.code, 0, r.stdout + r.stderr);
  const own = readEvents(db).filter((e) => e.stream === 'daemon' || e.stream === 'config');
  t.ok(own.length >= 5, 'daemon and config facts were recorded');
  const correlations = new Set(own.map((e) => e.correlation));
  t.equal(correlations.size, 1, 'one start, one correlation');
  t.match([...correlations][0], /^start:[0-9a-f-]{36}$/);
});

await t.test('turns are journaled: a daemon’s turns re-drive from their journal alone, and an altered journal is named', async (t) => {
  // `svc ask` finds the daemon by the port its config names, so it cannot be 0.
  const home = freePortHome(join(t.testdir(), 'home'), { interagent_port: await freePort() });
  const env = { PATH: `${FAKE_BIN}:${process.env.PATH}`, FAKE_CLI_CHUNKS: '3' };
  const daemon = startSvc(home, ['start'], env);
  t.teardown(() => void daemon.kill('SIGKILL'));
  const db = join(home, 'events.db');
  await until('daemon.ready', () => readEvents(db).some((e) => e.type === 'daemon.ready'), 30_000);
  const answered = svc(home, ['ask', 'hello there'], env);
  t.equal(answered.code, 0, `a turn that answers: ${answered.stderr}`);
  t.equal(svc(home, ['ask', 'please [[fail]]'], env).code, 1, 'a turn that fails');
  // A turn cut by a crash: its process ends mid-turn, and the next run's recovery writes on its stream.
  const held = startSvc(home, ['ask', 'wait [[hold]]'], env);
  t.teardown(() => void held.kill('SIGKILL'));
  const heldTurn = () => {
    const es = readEvents(db).filter((e) => e.stream.startsWith('turn:'));
    const stream = es.find((e) => e.type === 'actor.started' && /wait \[\[hold\]\]/.test(JSON.stringify(e.data)))?.stream;
    return stream !== undefined && es.some((e) => e.stream === stream && e.type === 'actor.input' && (e.data.event as { type: string }).type === 'cli.spawned');
  };
  await until(() => `the held turn runs: ${held.output()}`, heldTurn, 60_000);
  daemon.kill('SIGKILL');
  await exited(daemon);
  const again = startSvc(home, ['start'], env);
  t.teardown(() => void again.kill('SIGKILL'));
  await until(() => `the second run is ready: ${again.output()}`, () => readEvents(db).filter((e) => e.type === 'daemon.ready').length === 2, 60_000);
  again.kill('SIGTERM');
  t.equal(await exited(again), 0);

  const events = readEvents(db);
  const turns = events.filter((e) => e.stream.startsWith('turn:'));
  const started = turns.filter((e) => e.type === 'actor.started');
  t.equal(started.length, 3, 'each turn records how it started');
  t.ok(turns.some((e) => e.type === 'turn.failed' && e.data.reason === 'daemon-restarted'), 'recovery cut the held turn');
  t.match(started[0]!.data, { machine: 'turn', version: 1, input: { prompt: /hello there/ } });
  t.ok(turns.some((e) => e.type === 'actor.input' && (e.data.event as { type: string }).type === 'cli.events'), "the CLI's output is journaled");
  const r = svc(home, ['events', 'replay', '--check']);
  t.equal(r.code, 0, r.stdout + r.stderr);
  t.match(r.stdout, /ok: \d+ machines re-driven over/);

  const first = started[0]!.stream;
  const own = turns.filter((e) => e.stream === first && !e.type.startsWith('actor.'));
  const fact = own.at(-1)!;
  const cases: [string, (es: AnyEnvelope[]) => AnyEnvelope[], RegExp][] = [
    [
      "a turn's last fact altered",
      (es) => es.map((e) => (e.seq === fact.seq ? { ...e, data: { ...e.data, altered: true } } : e)),
      new RegExp(`turn on ${first}: seq ${fact.seq}: the log has ${fact.type.replace('.', '\\.')} \\{"altered":true,[^\\n]*, the machine emitted ${fact.type.replace('.', '\\.')} \\{`),
    ],
    [
      'the CLI output the turn answered from lost',
      (es) => es.filter((e) => !(e.stream === first && e.type === 'actor.input' && (e.data.event as { type: string }).type === 'cli.exited')),
      new RegExp(`turn on ${first}: (seq \\d+: the log has [^\\n]*, the machine emitted nothing|seq \\d+: delay)`),
    ],
    [
      'a journal written by another version of the machine',
      (es) => es.map((e) => (e.seq === started[0]!.seq ? { ...e, data: { ...e.data, version: 7 } } : e)),
      new RegExp(`seq ${started[0]!.seq}: turn version 7 wrote this actor; this build re-drives version 1 and has no upcaster for it`),
    ],
  ];
  for (const [what, alter, expected] of cases) {
    const altered = join(t.testdir(), `altered-${cases.findIndex((c) => c[0] === what)}`);
    copyLog(alter(events), join(altered, 'events.db'));
    const a = svc(altered, ['events', 'replay', '--check']);
    t.equal(a.code, 1, `${what}: exit 1`);
    t.match(a.stdout, expected, `${what}: the diff names the fact`);
  }
});
