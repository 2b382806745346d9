// The cron plan and the one-shot dependency queues as machines: which fires are due when the clock
// says so (an xstate delay on a SimulatedClock asks for the time, the test answers as the driver
// does), that an idle tick leaves every job alone, edits and removals, broken expressions, and the
// order runs that share a dependency key start in.
import t from 'tap';
import { SimulatedClock, createActor } from 'xstate';
import { CRON_FIRE_BATCH, CRON_MAX_TICK_MS, cronScheduleMachine, heapOf, heapPop, heapPush, oneShotQueueMachine, waitingRuns, type CronDue, type CronScheduleJob } from '../../machines/index.js';

const at = (s: string) => Date.parse(s);
const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

function plan(start: string, jobs: CronScheduleJob[]) {
  const clock = new SimulatedClock();
  clock.set(at(start));
  const actor = createActor(cronScheduleMachine, { input: { now: clock.now() }, clock });
  const due: CronDue[][] = [];
  const more: boolean[] = [];
  let wakes = 0;
  actor.on('due', (e) => {
    due.push(e.fires);
    more.push(e.more);
  });
  actor.on('wake', () => {
    wakes++;
    actor.send({ type: 'clock', now: clock.now() });
  });
  actor.start();
  actor.send({ type: 'jobs.set', jobs, now: clock.now() });
  const fired = () => due.flat().map((f) => `${f.id}@${iso(f.at)}`);
  /** The next batches, each after the plan's 0-ms delay, until none is left (as the driver's loop turns). */
  const drain = () => {
    for (let i = 0; actor.getSnapshot().matches('draining'); i++) {
      if (i > 1000) throw new Error('the plan never stops draining');
      clock.increment(0);
    }
  };
  return { clock, actor, due, more, fired, drain, wakes: () => wakes, next: (id: string) => iso(actor.getSnapshot().context.next[id] ?? null) };
}

const job = (id: string, expr: string, zone = 'UTC', enabled = true): CronScheduleJob => ({ id, expr, zone, enabled });

await t.test('each job fires at its own times, in its zone; the delay wakes for the soonest only', async (t) => {
  const p = plan('2026-03-28T23:50:00Z', [job('minute5', '*/5 * * * *'), job('berlin', '30 2 * * *', 'Europe/Berlin'), job('off', '* * * * *', 'UTC', false)]);
  t.equal(p.next('minute5'), '2026-03-28T23:55:00.000Z');
  t.equal(p.next('berlin'), '2026-03-29T01:00:00.000Z', 'spring-forward: 02:30 Berlin does not exist, 03:00 CEST is 01:00 UTC');
  t.equal(p.next('off'), null, 'a disabled job has no next fire');
  p.clock.increment(4 * 60_000);
  t.same(p.fired(), [], 'nothing is due before its time');
  p.clock.increment(60_000);
  t.same(p.fired(), ['minute5@2026-03-28T23:55:00.000Z']);
  t.equal(p.next('minute5'), '2026-03-29T00:00:00.000Z', 'the fired job moves on');
  for (let i = 0; i < 13; i++) p.clock.increment(5 * 60_000);
  t.ok(p.fired().includes('berlin@2026-03-29T01:00:00.000Z'), 'the Berlin job fired once, at 03:00 CEST');
  t.equal(p.fired().filter((f) => f.startsWith('off')).length, 0, 'the disabled job never fires');
  t.equal(p.due.every((d) => d.length > 0), true, 'no empty `due` is told');
});

await t.test('a timer that fires late does not make the plan fall behind: the clock the driver gives decides', async (t) => {
  const p = plan('2026-01-01T00:00:30Z', [job('m', '* * * * *')]);
  // One jump of ten minutes: a single wake; the job fires once for its oldest due time and moves past now.
  p.clock.increment(10 * 60_000);
  t.same(p.fired(), ['m@2026-01-01T00:01:00.000Z']);
  t.equal(p.next('m'), '2026-01-01T00:11:00.000Z', 'the next fire is after the time the clock gave');
});

await t.test('an idle tick touches no job; a clock input fires what is due; jobs.set moves only changed jobs', async (t) => {
  const jobs = Array.from({ length: 200 }, (_, i) => job(`j${i}`, '0 9 * * *'));
  const p = plan('2026-01-01T00:00:00Z', jobs);
  const heapBefore = p.actor.getSnapshot().context.heap.length;
  const nextBefore = { ...p.actor.getSnapshot().context.next };
  p.actor.send({ type: 'clock', now: at('2026-01-01T08:59:59Z') });
  t.same(p.fired(), []);
  t.same(p.actor.getSnapshot().context.next, nextBefore, 'no next fire recomputed');
  t.equal(p.actor.getSnapshot().context.heap.length, heapBefore);
  // One job edited, one removed, the rest as they were.
  const edited = [job('j0', '30 8 * * *'), ...jobs.slice(2)];
  p.actor.send({ type: 'jobs.set', jobs: edited, now: at('2026-01-01T08:59:59Z') });
  t.equal(p.next('j0'), '2026-01-02T08:30:00.000Z', 'the edited job is planned again from now');
  t.equal(p.next('j1'), null, 'a removed job has no next fire');
  t.notOk('j1' in p.actor.getSnapshot().context.next);
  p.actor.send({ type: 'clock', now: at('2026-01-01T09:00:00Z') });
  t.equal(p.fired().length, CRON_FIRE_BATCH, 'one batch at a time');
  p.drain();
  t.equal(p.fired().length, 198, 'the removed job does not fire from its stale heap entry');
  t.notOk(p.fired().includes('j1@2026-01-01T09:00:00.000Z'));
  t.notOk(p.fired().some((f) => f.startsWith('j0@')), 'nor does the edited one at its old time');
});

await t.test('bad input: a broken expression or zone is never planned; a clock going back fires nothing twice', async (t) => {
  const p = plan('2026-01-01T00:00:00Z', [job('secs', '* * * * * *'), job('zone', '* * * * *', 'Mars/Olympus'), job('ok', '0 * * * *')]);
  t.equal(p.next('secs'), null);
  t.equal(p.next('zone'), null);
  p.clock.increment(60 * 60_000);
  t.same(p.fired(), ['ok@2026-01-01T01:00:00.000Z']);
  p.actor.send({ type: 'clock', now: at('2026-01-01T00:30:00Z') });
  p.actor.send({ type: 'clock', now: at('2026-01-01T01:00:00Z') });
  t.same(p.fired(), ['ok@2026-01-01T01:00:00.000Z'], 'an earlier time is not taken: the plan never moves back');
});

await t.test('more fires due than a batch holds: handed out batch by batch, in (time, id) order, each once, each batch after a 0-ms delay', async (t) => {
  const n = 2 * CRON_FIRE_BATCH + 5;
  const ids = Array.from({ length: n }, (_, i) => `j${String(i).padStart(3, '0')}`);
  // Every job at 09:00; the first ten also at 08:59, so their older time comes before the rest.
  const p = plan('2026-01-01T08:58:30Z', ids.map((id, i) => job(id, i < 10 ? '59,0 8,9 * * *' : '0 9 * * *')));
  p.actor.send({ type: 'clock', now: at('2026-01-01T09:00:00Z') });
  t.equal(p.due.length, 1, 'a transition hands out one batch');
  t.equal(p.due[0]!.length, CRON_FIRE_BATCH);
  t.ok(p.actor.getSnapshot().matches('draining'), 'and the plan is draining the rest');
  p.clock.increment(0);
  t.equal(p.due.length, 2, 'the next batch after a 0-ms delay, with no new clock input');
  // A job edited while its fire waits for a batch: its old time does not fire.
  const last = ids.at(-1)!;
  p.actor.send({ type: 'jobs.set', jobs: ids.map((id, i) => (id === last ? job(id, '30 9 * * *') : job(id, i < 10 ? '59,0 8,9 * * *' : '0 9 * * *'))), now: at('2026-01-01T09:00:00Z') });
  p.drain();
  t.ok(p.actor.getSnapshot().matches('armed'), 'armed again once nothing is due');
  t.ok(p.due.every((d) => d.length <= CRON_FIRE_BATCH && d.length > 0), 'no batch over the bound, none empty');
  t.same(p.more, [...p.more.slice(0, -1).map(() => true), false], '`more` says whether a batch follows');
  // A job more than one fire behind fires once, for its oldest (as without batches): the first ten at 08:59 only.
  const expected = [...ids.slice(0, 10).map((id) => `${id}@2026-01-01T08:59:00.000Z`), ...ids.slice(10, -1).map((id) => `${id}@2026-01-01T09:00:00.000Z`)];
  t.same(p.fired(), expected, 'every due fire once, oldest time first, then by id; the edited job not at its old time');
  t.equal(p.next(last), '2026-01-01T09:30:00.000Z');
  t.equal(p.next(ids[0]!), '2026-01-01T09:59:00.000Z', 'each fired job moved on from the time it was handed out at');
});

await t.test('with nothing planned, the delay still wakes within CRON_MAX_TICK_MS, so a jump of the wall clock is noticed', async (t) => {
  const p = plan('2026-01-01T00:00:00Z', []);
  p.clock.increment(CRON_MAX_TICK_MS - 1);
  t.equal(p.wakes(), 0);
  p.clock.increment(1);
  t.equal(p.wakes(), 1);
});

await t.test('the heap gives fires in time order and drops nothing', async (t) => {
  const heap = heapOf({ c: 3, a: 1, none: null, b: 2 });
  heapPush(heap, { id: 'a2', at: 1 });
  const out: string[] = [];
  for (let e = heapPop(heap); e; e = heapPop(heap)) out.push(`${e.id}:${e.at}`);
  t.same(out, ['a:1', 'a2:1', 'b:2', 'c:3']);
  t.equal(heapPop([]), undefined);
});

await t.test('one-shot queue: runs sharing a key start one at a time in queued order; others start at once', async (t) => {
  const q = createActor(oneShotQueueMachine);
  const started: string[] = [];
  q.on('start', (e) => void started.push(e.run_id));
  q.start();
  q.send({ type: 'queued', run_id: 'a1', dependency: 'db' });
  q.send({ type: 'queued', run_id: 'a2', dependency: 'db' });
  q.send({ type: 'queued', run_id: 'free', dependency: null });
  q.send({ type: 'queued', run_id: 'blank', dependency: '' });
  q.send({ type: 'queued', run_id: 'a3', dependency: 'db' });
  t.same(started, ['a1', 'free', 'blank']);
  t.same(waitingRuns(q.getSnapshot().context), { db: ['a2', 'a3'] });
  q.send({ type: 'finished', run_id: 'free' });
  t.same(started, ['a1', 'free', 'blank'], 'a run without a key starts nothing when it ends');
  q.send({ type: 'finished', run_id: 'a3' });
  t.same(waitingRuns(q.getSnapshot().context), { db: ['a2'] }, 'a waiting run that ends just leaves the queue');
  q.send({ type: 'finished', run_id: 'a1' });
  t.same(started, ['a1', 'free', 'blank', 'a2']);
  q.send({ type: 'queued', run_id: 'a2', dependency: 'db' });
  t.same(started, ['a1', 'free', 'blank', 'a2'], 'the same run queued twice waits once');
  q.send({ type: 'finished', run_id: 'a2' });
  q.send({ type: 'finished', run_id: 'unknown' });
  t.same(q.getSnapshot().context.queues, {}, 'empty queues are dropped');
  q.send({ type: 'queued', run_id: 'b1', dependency: 'db' });
  t.same(started.at(-1), 'b1', 'an emptied key starts its next run at once');
});
