import t from 'tap';
import { spawn, type ChildProcess } from 'node:child_process';
import { ActorHost, InterruptedTurns, recoverOrphanProcesses, recoverOrphanTurns, trackProcessGroup } from '../../actors/index.js';
import { procSnapshot, readBootId, readProcStat } from '../../store/index.js';
import { Bus, type LogLine } from '../../bus/index.js';
import { MemoryEventLog } from '../../store/index.js';
import { until, processAlive } from '../bin/cli-helpers.js';
import { anyEvent } from '../fixtures/any-event.js';

const alive = processAlive;

/** A real process leading its own group, as a CLI does; killed at teardown if the test left it. */
function groupLeader(t: { teardown(f: () => unknown): void }): ChildProcess & { pid: number } {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1 << 30)'], { detached: true, stdio: 'ignore' });
  t.teardown(() => void child.kill('SIGKILL'));
  return child as ChildProcess & { pid: number };
}

async function recordTurn(bus: Bus, stream: string, spawned: Record<string, unknown>) {
  await bus.publish(anyEvent({ stream, type: 'turn.started', data: { agent: 'main', session_key: 'api:1', prompt: 'hi' } }));
  await bus.publish(anyEvent({ stream, type: 'turn.spawned', data: { attempt: 1, streaming: true, ...spawned } }));
}

function setup() {
  const log = new MemoryEventLog();
  const bus = new Bus({ log });
  const lines: LogLine[] = [];
  bus.transient$.subscribe((m) => m.type === 'log.line' && lines.push(m.data as LogLine));
  return { log, bus, lines };
}

await t.test('a recorded pid now held by a process with another start time, or from another boot, is never touched', async (t) => {
  const { log, bus, lines } = setup();
  const stranger = groupLeader(t);
  const real = readProcStat(stranger.pid)!;
  t.equal(real.pgid, stranger.pid, 'the stranger leads its own group, like a CLI');
  await recordTurn(bus, 'turn:reused', { pid: stranger.pid, start_time: real.startTime - 1, boot_id: readBootId() });
  await recordTurn(bus, 'turn:other-boot', { pid: stranger.pid, start_time: real.startTime, boot_id: 'not-this-boot' });
  await recordTurn(bus, 'turn:legacy', { pid: stranger.pid });

  const r = await recoverOrphanTurns(log, bus);
  t.same([r.groupsEnded, r.processesEnded], [0, 0]);
  t.ok(alive(stranger.pid), 'the unrelated process still runs');
  t.same(r.failed.sort(), ['turn:legacy', 'turn:other-boot', 'turn:reused']);
  for (const s of r.failed) t.equal(log.read({ stream: s }).at(-1)!.data.reason, 'daemon-restarted');
  t.ok(lines.some((l) => /turn:reused: left pid \d+ alone \(the pid now belongs to another process\)/.test(l.msg)));
  t.ok(lines.some((l) => /turn:other-boot: left pid \d+ alone \(recorded in another boot\)/.test(l.msg)));
  t.ok(lines.some((l) => l.msg === 'recorded 3 interrupted turn(s) as failed; ended 0 orphaned CLI process group(s) (0 process(es))'));

  t.same((await recoverOrphanTurns(log, bus)).failed, [], 'a second start finds nothing open');
  bus.close();
});

await t.test('the recorded group itself is ended, and counted', async (t) => {
  const { log, bus, lines } = setup();
  const ours = groupLeader(t);
  await recordTurn(bus, 'turn:ours', { pid: ours.pid, start_time: readProcStat(ours.pid)!.startTime, boot_id: readBootId() });
  const r = await recoverOrphanTurns(log, bus);
  t.same([r.groupsEnded, r.processesEnded], [1, 1]);
  await until('the group to be gone', () => !alive(ours.pid), 10_000);
  t.ok(lines.some((l) => l.msg === 'recorded 1 interrupted turn(s) as failed; ended 1 orphaned CLI process group(s) (1 process(es))'));
  t.equal(log.read({ stream: 'turn:ours' }).at(-1)!.data.ended_processes, 1);
  bus.close();
});

await t.test('what a cut-off turn owes its chat is handed out once: notices per chat, /retry of the last one, across restarts', async (t) => {
  const { log, bus } = setup();
  const turn = async (stream: string, key: string, prompt: string, text: string) => {
    await bus.publish(anyEvent({ stream, type: 'turn.started', data: { agent: 'main', session_key: key, prompt } }));
    await bus.publish(anyEvent({ stream, type: 'turn.progressed', data: { text } }));
  };
  await turn('turn:a', 'api:7', 'first question', 'first half');
  await turn('turn:b', 'api:7', 'second question', '');
  await turn('turn:c', 'api:8', 'other chat', 'x');
  const boot = async () => {
    // Each boot is a restart: a new host, earlier cuts restored from the log, then recovery.
    const index = new InterruptedTurns(new ActorHost(bus));
    index.restore(log);
    await recoverOrphanTurns(log, bus, { owe: (x) => index.owe(x) });
    return index;
  };
  const index = await boot();

  for (const bad of [{}, { session_key: 7 }, { session_key: '' }, { session_key: 'api:7', more: 1 }, null, 'api:7', { session_key: 'x'.repeat(81) }]) {
    await t.rejects(index.takeNotices(bad), { code: 'invalid-command' }, `refused: ${JSON.stringify(bad)}`);
  }
  const notices = await index.takeNotices({ session_key: 'api:7' });
  t.same(notices.map((n) => [n.turn_id, n.agent]), [['a', 'main'], ['b', 'main']]);
  t.match(notices[0]!.text, /^first half\n\n\[This answer was cut off/);
  t.same(await index.takeNotices({ session_key: 'api:7' }), [], 'a second connection gets nothing');
  t.equal(await index.takeRetry('other-agent', 'api:7', 'r0'), null, 'another agent has nothing to retry here');
  t.equal(await index.takeRetry('main', 'api:7', 'r1'), 'second question', 'the last interrupted turn');
  t.equal(await index.takeRetry('main', 'api:7', 'r2'), null, 'once');

  const after = await boot();
  t.same(await after.takeNotices({ session_key: 'api:7' }), [], 'a restart does not repeat the notice');
  t.equal(await after.takeRetry('main', 'api:7', 'r3'), null, 'nor the retry');
  t.equal((await after.takeNotices({ session_key: 'api:8' })).length, 1, 'the other chat still has its notice');
  t.equal(await after.takeRetry('main', 'api:8', 'r4'), 'other chat');
  t.same(log.read({ stream: 'turn:b', types: ['turn.retried'] }).map((e) => e.data.request_id), ['r1']);
  bus.close();
});

await t.test('a turn an older svc recorded (pid only) is still ended when /proc shows a provider CLI under that pid', async (t) => {
  const { log, bus } = setup();
  const bin = new URL('../fixtures/bin/claude', import.meta.url).pathname;
  const cli = spawn(process.execPath, [bin, '-p', '--output-format', 'stream-json', '--', 'hi'], {
    detached: true,
    stdio: 'ignore',
    env: { ...process.env, FAKE_CLI_HANG: '1' },
  }) as ChildProcess & { pid: number };
  t.teardown(() => void cli.kill('SIGKILL'));
  await recordTurn(bus, 'turn:legacy-cli', { pid: cli.pid });
  const r = await recoverOrphanTurns(log, bus);
  t.same([r.groupsEnded, r.processesEnded], [1, 1]);
  await until('the CLI to be gone', () => !alive(cli.pid), 10_000);
});

await t.test('helper process groups svc tracked (transcription backends) are ended after a crash; ended or reused ones are not', async (t) => {
  const { log, bus, lines } = setup();
  // A backend that started a child of its own: both are in its group and both must go.
  const orphan = spawn(
    process.execPath,
    ['-e', `require('child_process').spawn(process.execPath, ['-e', 'setInterval(() => {}, 1 << 30)'], { stdio: 'ignore' }); setInterval(() => {}, 1 << 30)`],
    { detached: true, stdio: 'ignore' },
  ) as ChildProcess & { pid: number };
  t.teardown(() => {
    try {
      process.kill(-orphan.pid, 'SIGKILL');
    } catch {
      // already ended by the recovery under test
    }
  });
  const members = () => procSnapshot().procs.filter((p) => p.pgid === orphan.pid && p.state !== 'Z');
  await until('the backend and its child', () => members().length === 2);
  trackProcessGroup(bus, 'transcription', orphan.pid, readProcStat(orphan.pid)!.startTime);
  const finished = groupLeader(t);
  trackProcessGroup(bus, 'transcription', finished.pid, readProcStat(finished.pid)!.startTime)();
  const stranger = groupLeader(t);
  trackProcessGroup(bus, 'transcription', stranger.pid, readProcStat(stranger.pid)!.startTime - 1);
  await until('the facts recorded', () => log.read({ streamPrefix: 'proc:' }).length === 4);

  // Recovered by this very process, which started before its "orphans" (a restarted daemon starts after them).
  const r = await recoverOrphanProcesses(log, bus, { selfStartTime: null });
  t.same(r, { groupsEnded: 1, processesEnded: 2 });
  await until('the orphaned group to be gone', () => members().length === 0, 10_000);
  t.ok(alive(finished.pid), 'a group that recorded its end is not ours to end any more (its pid may be reused)');
  t.ok(alive(stranger.pid), 'a pid with another start time is left alone');
  t.ok(lines.some((l) => /^transcription pid \d+: left alone \(the pid now belongs to another process\)$/.test(l.msg)));
  t.ok(lines.some((l) => l.msg === 'ended 1 orphaned process group(s) (2 process(es)) that svc had started before it stopped'));
  t.same(await recoverOrphanProcesses(log, bus, { selfStartTime: null }), { groupsEnded: 0, processesEnded: 0 }, 'each is recovered once');
  bus.close();
});

await t.test('the failure recovery records follows from the turn’s last fact and serves the turn’s request', async (t) => {
  const { log, bus } = setup();
  await bus.publish(anyEvent({ stream: 'turn:q', type: 'turn.started', data: { agent: 'main', session_key: 'api:1', prompt: 'hi' }, correlation: 'req-9' }));
  const progressed = await bus.publish({ stream: 'turn:q', type: 'turn.progressed', data: { text: 'half' }, correlation: 'req-9' });
  await recoverOrphanTurns(log, bus);
  const failed = log.read({ stream: 'turn:q', types: ['turn.failed'] })[0]!;
  t.same([failed.causation, failed.correlation], [progressed.seq, 'req-9']);
  bus.close();
});

await t.test('after a restart, the turns still owing come back as actors restored from their streams, and their facts carry the asking command’s cause', async (t) => {
  const { log, bus } = setup();
  await bus.publish(anyEvent({ stream: 'turn:x', type: 'turn.started', data: { agent: 'main', session_key: 'api:5', prompt: 'q' } }));
  const first = new InterruptedTurns(new ActorHost(bus));
  first.restore(log);
  await recoverOrphanTurns(log, bus, { owe: (x) => first.owe(x) });

  const host = new ActorHost(bus);
  const again = new InterruptedTurns(host);
  again.restore(log);
  t.same(host.ids(), ['interrupted:turn:x'], 'restored by ActorHost.restore, not rebuilt by hand');
  t.equal(host.get('interrupted:turn:x')!.getSnapshot().value, 'owing');
  const notices = await again.takeNotices({ session_key: 'api:5' }, { correlation: 'req-3', causation: 1 });
  t.equal(notices.length, 1);
  const delivered = log.read({ stream: 'turn:x', types: ['turn.notice_delivered'] })[0]!;
  t.same([delivered.correlation, delivered.causation], ['req-3', 1]);
  t.equal(await again.takeRetry('main', 'api:5', 'r9'), 'q');
  t.same(host.ids(), [], 'nothing owed any more: the actor ended and left the host');
  const third = new ActorHost(bus);
  new InterruptedTurns(third).restore(log);
  t.same(third.ids(), [], 'and a further restart restores nothing');
  bus.close();
});
