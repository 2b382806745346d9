// `svc events replay --check` as a test of the machines: each golden log under test/fixtures/golden
// re-drives its machines to exactly its facts, and a golden altered against a machine fails.
import t from 'tap';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AnyEnvelope } from '../../schemas/index.js';
import { copyLog, exited, freePortHome, loadGolden, readEvents, startSvc, svc, until } from './cli-helpers.js';

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

const FAKE_BIN = fileURLToPath(new URL('../fixtures/bin', import.meta.url));

await t.test('every golden log re-drives its machines to exactly the facts it holds', async (t) => {
  for (const golden of ['daemon.ndjson', 'interrupted-turn.ndjson', 'daemon-lifecycle.ndjson', 'session.ndjson', 'agent.ndjson', 'task.ndjson', 'workflow-run.ndjson']) {
    const home = join(t.testdir(), golden);
    loadGolden(golden, join(home, 'events.db'));
    const r = svc(home, ['events', 'replay', '--check']);
    t.equal(r.code, 0, `${golden}: ${r.stdout}${r.stderr}`);
    t.match(r.stdout, /ok: \d+ machines re-driven over [1-9]\d* streams emit exactly the facts the log holds/, golden);
  }
});

await t.test('a golden log altered against its machine fails replay --check with the fact named', async (t) => {
  const cases: [string, string, (es: AnyEnvelope[]) => AnyEnvelope[], RegExp][] = [
    [
      'daemon.ndjson',
      'a recovery that names the wrong previous run',
      (es) => es.map((e) => (e.type === 'daemon.recovered' ? { ...e, data: { ...e.data, previous_pid: 4100 } } : e)),
      /daemon on daemon: seq 11: the log has daemon\.recovered \{"previous_pid":4100,[^\n]*, the machine emitted daemon\.recovered \{"previous_pid":5300,/,
    ],
    [
      'daemon.ndjson',
      'a crash recovery the log lost',
      (es) => es.filter((e) => e.type !== 'daemon.recovered').map((e, i) => ({ ...e, seq: i + 1 })),
      /seq 11: the log has daemon\.ready [^\n]*, the machine emitted daemon\.recovered/,
    ],
    [
      'daemon.ndjson',
      'a stop whose recorded reason contradicts the one the daemon was given',
      (es) => es.map((e) => (e.seq === 4 ? { ...e, data: { reason: 'SIGKILL' } } : e)),
      /seq 4: the log has daemon\.stopped \{"reason":"SIGKILL"\}, the machine emitted daemon\.stopped \{"reason":"SIGTERM"\}/,
    ],
    [
      'interrupted-turn.ndjson',
      'a notice handed out twice',
      (es) => [...es, { ...es.find((e) => e.type === 'turn.notice_delivered')!, seq: es.length + 1 }],
      /interrupted-turn on turn:a: seq 15: the log has turn\.notice_delivered \{"session_key":"api:7"\}, the machine emitted nothing/,
    ],
    [
      'interrupted-turn.ndjson',
      'a notice for a turn that was never cut',
      (es) => [...es, { seq: es.length + 1, at: '2026-11-21T08:00:00.000Z', stream: 'turn:d', type: 'turn.notice_delivered', data: { session_key: 'api:9' } }],
      /turn:d: seq 15 [^\n]*no interrupted-turn actor was running/,
    ],
    [
      'session.ndjson',
      'a turn counted twice',
      (es) => es.map((e) => (e.seq === 9 ? { ...e, data: { ...e.data, message_count: 3 } } : e)),
      /session on session:main:api:7: seq 9: the log has session\.turn_recorded \{[^\n]*"message_count":3[^\n]*, the machine emitted session\.turn_recorded \{[^\n]*"message_count":2/,
    ],
    [
      'session.ndjson',
      'an age warning threshold moved after it was fixed',
      (es) => es.map((e) => (e.seq === 10 ? { ...e, data: { ...e.data, count_at_threshold: 3 } } : e)),
      /seq 10: the log has session\.turn_recorded [^\n]*"count_at_threshold":3[^\n]*, the machine emitted session\.turn_recorded [^\n]*"count_at_threshold":2/,
    ],
    [
      'session.ndjson',
      'a turn recorded in a session that never started',
      (es) => [...es, { seq: es.length + 1, at: '2026-11-21T07:00:00.000Z', stream: 'session:main:api:99', type: 'session.turn_recorded', data: { ...es[1]!.data } }],
      /session:main:api:99: seq 13 [^\n]*no session actor was running to be sent record-turn/,
    ],
    [
      'agent.ndjson',
      'a stop that names another agent',
      (es) => es.map((e) => (e.seq === 3 ? { ...e, data: { ...e.data, name: 'main' } } : e)),
      /agent on agent:ops: seq 3: the log has agent\.stopped \{"name":"main","reason":"registry-changed"\}, the machine emitted agent\.stopped \{"name":"ops"/,
    ],
    [
      'agent.ndjson',
      'a stop the agent never made twice',
      (es) => [...es.slice(0, 5), { ...es[4]!, seq: 6 }, ...es.slice(5).map((e) => ({ ...e, seq: e.seq + 1 }))],
      /agent:main: seq 6 [^\n]*no agent actor was running|agent:main: seq 6: the log has agent\.stopped [^\n]*, the machine emitted nothing/,
    ],
    [
      'task.ndjson',
      'an answer to a question the task never asked',
      (es) => es.filter((e) => !(e.stream === 'task:a' && e.type === 'task.question_asked')).map((e, i) => ({ ...e, seq: i + 1 })),
      /task on task:a: seq 2: the log has task\.answered \{"answer":"2025","at":1795680020\}, the machine emitted nothing/,
    ],
    [
      'task.ndjson',
      'a delete of a task that was still running',
      (es) => es.filter((e) => !(e.stream === 'task:a' && e.seq >= 4 && e.seq <= 6)).map((e, i) => ({ ...e, seq: i + 1 })),
      /task on task:a: seq 4: the log has task\.deleted \{"at":1795680200\}, the machine emitted nothing/,
    ],
    [
      'workflow-run.ndjson',
      'a condition recorded as going the other way',
      (es) => es.map((e) => (e.seq === 13 ? { ...e, data: { ...e.data, output: 'false' } } : e)),
      /workflow-run on run:golden-a: seq 13: the log has workflow\.step_completed \{[^\n]*"output":"false"[^\n]*, the machine emitted workflow\.step_completed \{[^\n]*"output":"true"/,
    ],
    [
      'workflow-run.ndjson',
      'a retry the run never scheduled',
      (es) => es.filter((e) => e.type !== 'workflow.step_retry_scheduled').map((e, i) => ({ ...e, seq: i + 1 })),
      /run:golden-a: seq 5: the log has workflow\.step_started [^\n]*, the machine emitted workflow\.step_retry_scheduled/,
    ],
    [
      'workflow-run.ndjson',
      'a retry that ran before its delay was up',
      (es) => es.map((e) => (e.seq === 6 ? { ...e, data: { ...e.data, at_ms: 1795161631000 } } : e)),
      /workflow-run on run:golden-a: seq 6: the log has workflow\.step_started \{"at_ms":1795161631000,"attempt":2,[^\n]*, the machine emitted nothing/,
    ],
    [
      'workflow-run.ndjson',
      'a timeout recorded before its deadline',
      (es) => es.map((e) => (e.seq === 19 ? { ...e, data: { ...e.data, at_ms: 1795161680000 } } : e)),
      /workflow-run on run:golden-a: seq 19: the log has workflow\.step_failed \{"at_ms":1795161680000,[^\n]*"reason":"timeout"[^\n]*, the machine emitted nothing/,
    ],
    [
      'workflow-run.ndjson',
      'an answer other than the one the engine reported',
      (es) => es.map((e) => (e.seq === 8 ? { ...e, data: { ...e.data, output: 'v3 notes' } } : e)),
      /workflow-run on run:golden-a: seq 8: the log has workflow\.step_completed \{[^\n]*"output":"v3 notes"[^\n]*, the machine emitted workflow\.step_completed \{[^\n]*"output":"v2 notes"/,
    ],
    [
      'workflow-run.ndjson',
      'a restart the log lost: the deadline would have fired while the old process ran',
      (es) => es.filter((e) => !(e.stream === 'run:golden-d' && e.type === 'workflow.input_received' && (e.data.input as { type: string }).type === 'resume')).map((e, i) => ({ ...e, seq: i + 1 })),
      /workflow-run on run:golden-d: seq 46: the log has workflow\.step_failed \{"at_ms":1795161751000,[^\n]*, the machine emitted workflow\.step_failed \{"at_ms":1795161691000,/,
    ],
  ];
  for (const [golden, what, alter, expected] of cases) {
    const home = join(t.testdir(), `case-${cases.findIndex((c) => c[1] === what)}`);
    loadGolden(golden, join(home, 'events.db'), alter);
    const r = svc(home, ['events', 'replay', '--check']);
    t.equal(r.code, 1, `${what}: exit 1`);
    t.match(r.stdout, /divergence: re-driven from their recorded inputs, machines emit other facts than the log holds/, what);
    t.match(r.stdout, expected, `${what}: the diff names the fact`);
  }
});

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
