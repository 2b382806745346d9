// `svc events replay --check` as a test of the machines: each golden log under test/fixtures/golden
// re-drives its machines to exactly its facts, and a golden altered against a machine fails.
import t from 'tap';
import { join } from 'node:path';
import type { AnyEnvelope } from '../../schemas/index.js';
import { loadGolden, svc } from './cli-helpers.js';


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
