import t from 'tap';
import { decideGroup, type RecordedGroup } from '../../machines/index.js';
import { parseProcStat, type ProcEntry } from '../../schemas/index.js';

const stat = (pid: number, comm: string, state: string, pgid: number, start: number) =>
  `${pid} (${comm}) ${state} 1 ${pgid} ${pgid} 0 -1 4194304 100 0 0 0 0 0 0 0 20 0 1 0 ${start} 3133440 356 18446744073709551615 0 0 0\n`;

await t.test('parseProcStat counts fields from the last ")", whatever the command name holds', async (t) => {
  t.same(parseProcStat(stat(10676, 'cat', 'R', 10673, 41859)), { pid: 10676, state: 'R', pgid: 10673, startTime: 41859 });
  t.same(parseProcStat(stat(42, 'evil) S 1 1 1', 'S', 40, 99)), { pid: 42, state: 'S', pgid: 40, startTime: 99 }, 'a comm forging fields');
  t.same(parseProcStat(stat(43, 'two words (x)', 'Z', 43, 7)), { pid: 43, state: 'Z', pgid: 43, startTime: 7 });
  t.same(parseProcStat(stat(44, '', 'S', 44, 8)), { pid: 44, state: 'S', pgid: 44, startTime: 8 }, 'empty comm');
  for (const bad of ['', 'garbage', '12 (x', '12 (x) S 1', 'x (y) S 1 2 3', stat(0, 'z', 'S', 0, 1), stat(5, 'a', 'S', 5, 1).replace(' 5 5 0', ' -5 5 0')]) {
    t.equal(parseProcStat(bad), null, `refused: ${JSON.stringify(bad.slice(0, 30))}`);
  }
});

const p = (pid: number, pgid: number, startTime: number, state = 'S'): ProcEntry => ({ pid, pgid, startTime, state });
const group: RecordedGroup = { pgid: 100, startTime: 5000, bootId: 'boot-a' };

await t.test('given the leader died and a grandchild of its group lives on, when deciding, then the grandchild is ended', async (t) => {
  const now = { bootId: 'boot-a', procs: [p(1, 1, 1), p(101, 100, 5001), p(200, 200, 9000)] };
  t.same(decideGroup(group, now), { end: true, pids: [101] });
});

await t.test('given the leader lives with its start time, then it and every live member started since are ended; zombies are not counted', async (t) => {
  const now = { bootId: 'boot-a', procs: [p(100, 100, 5000), p(101, 100, 5002), p(102, 100, 5003, 'Z'), p(103, 100, 4000), p(104, 7, 5004)] };
  t.same(decideGroup(group, now), { end: true, pids: [100, 101] }, 'a member older than the leader and other groups are left alone');
});

await t.test('given a zombie leader, then the live members are still ours', async (t) => {
  t.same(decideGroup(group, { bootId: 'boot-a', procs: [p(100, 100, 5000, 'Z'), p(101, 100, 5001)] }), { end: true, pids: [101] });
});

await t.test('given the leader left the group, then it is still ended by its identity', async (t) => {
  t.same(decideGroup(group, { bootId: 'boot-a', procs: [p(100, 300, 5000)] }), { end: true, pids: [100] });
});

await t.test('given the pid now names a younger process, then nothing is touched, members or not', async (t) => {
  t.same(decideGroup(group, { bootId: 'boot-a', procs: [p(100, 100, 8000), p(101, 100, 8001)] }), { end: false, why: 'pid-reused' });
});

await t.test('given another boot, then nothing is touched even if every number matches', async (t) => {
  t.same(decideGroup(group, { bootId: 'boot-b', procs: [p(100, 100, 5000)] }), { end: false, why: 'other-boot' });
  t.same(decideGroup({ ...group, bootId: null }, { bootId: 'boot-a', procs: [p(100, 100, 5000)] }), { end: false, why: 'unverifiable' });
  t.same(decideGroup(group, { bootId: null, procs: [p(100, 100, 5000)] }), { end: false, why: 'unverifiable' });
});

await t.test('given nothing of the group is left (or only zombies), then there is nothing to end', async (t) => {
  t.same(decideGroup(group, { bootId: 'boot-a', procs: [p(1, 1, 1)] }), { end: false, why: 'gone' });
  t.same(decideGroup(group, { bootId: 'boot-a', procs: [p(101, 100, 5001, 'Z')] }), { end: false, why: 'gone' });
});

await t.test('given a turn recorded without a start time, then the caller must fall back', async (t) => {
  t.same(decideGroup({ pgid: 100, startTime: null, bootId: null }, { bootId: 'boot-a', procs: [p(100, 100, 1)] }), { end: false, why: 'legacy' });
});

await t.test('given the old group emptied and its id now leads a leaderless group started after this daemon, then nothing is touched', async (t) => {
  const now = { bootId: 'boot-a', selfStartTime: 7000, procs: [p(101, 100, 5001), p(150, 100, 7500)] };
  t.same(decideGroup(group, now), { end: true, pids: [101] }, 'the straggler from before the restart goes; the newer member stays');
  t.same(decideGroup(group, { ...now, procs: [p(150, 100, 7500)] }), { end: false, why: 'gone' });
});
