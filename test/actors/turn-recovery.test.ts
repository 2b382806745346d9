import t from 'tap';
import { spawn, type ChildProcess } from 'node:child_process';
import { readBootId, readProcStat, recoverOrphanTurns } from '../../actors/index.js';
import { Bus, type LogLine } from '../../bus/index.js';
import { MemoryEventLog } from '../../store/index.js';
import { until } from '../bin/cli-helpers.js';

const alive = (pid: number) => {
  const s = readProcStat(pid);
  return s !== null && s.state !== 'Z';
};

/** A real process leading its own group, as a CLI does; killed at teardown if the test left it. */
function groupLeader(t: { teardown(f: () => unknown): void }): ChildProcess & { pid: number } {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1 << 30)'], { detached: true, stdio: 'ignore' });
  t.teardown(() => void child.kill('SIGKILL'));
  return child as ChildProcess & { pid: number };
}

async function recordTurn(bus: Bus, stream: string, spawned: Record<string, unknown>) {
  await bus.publish({ stream, type: 'turn.started', data: { agent: 'main', session_key: 'api:1', prompt: 'hi' } });
  await bus.publish({ stream, type: 'turn.spawned', data: { attempt: 1, streaming: true, ...spawned } });
}

function setup() {
  const log = new MemoryEventLog();
  const bus = new Bus({ log });
  const lines: LogLine[] = [];
  bus.transient$.subscribe((m) => m.type === 'log.line' && lines.push(m.data as LogLine));
  return { log, bus, lines };
}

t.test('a recorded pid now held by a process with another start time, or from another boot, is never touched', async (t) => {
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

t.test('the recorded group itself is ended, and counted', async (t) => {
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
