// When cron jobs fire (machines/cron.logic): croner's parsing and next fire in a zone, DST in both
// directions, quiet hours that wrap midnight, what a start-up does with missed fires, how a run's
// end becomes a status, and what the log says is unfinished. Pure: time is given as epoch ms.
import t from 'tap';
import {
  compileSchedule,
  cronDeliveryText,
  cronTimeZone,
  fireIdOf,
  firesBetween,
  foldCronLog,
  jobInQuietHours,
  missedFires,
  nextAverage,
  nextFireAfter,
  runStatusOf,
  scheduleProblem,
  cutOneShots,
  restartsAfterCut,
  type CompiledSchedule,
} from '../../machines/index.js';
import { AUTOMATION_EVENTS, ONESHOT_EVENTS, type AnyEnvelope, type TurnOutcome } from '../../schemas/index.js';

const at = (s: string) => Date.parse(s);
const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
const sched = (expr: string, zone = 'UTC'): CompiledSchedule => {
  const c = compileSchedule(expr, zone);
  if ('error' in c) throw new Error(c.error);
  return c;
};
const next = (expr: string, zone: string, after: string) => iso(nextFireAfter(sched(expr, zone), at(after)));
const fires = (expr: string, zone: string, from: string, to: string) => firesBetween(sched(expr, zone), at(from), at(to)).map((x) => iso(x));

await t.test('expressions: fields, names, ranges, steps, macros; bad ones say why', async (t) => {
  t.equal(next('0 9 * * MON-FRI', 'UTC', '2026-11-27T12:00:00Z'), '2026-11-30T09:00:00.000Z', 'Friday afternoon → Monday 09:00');
  t.equal(next('*/15 * * * *', 'UTC', '2026-01-01T00:07:00Z'), '2026-01-01T00:15:00.000Z', 'step');
  t.equal(next('0 8-10 * * *', 'UTC', '2026-01-01T10:30:00Z'), '2026-01-02T08:00:00.000Z', 'range');
  t.equal(next('0 0 1 JAN,JUL *', 'UTC', '2026-02-01T00:00:00Z'), '2026-07-01T00:00:00.000Z', 'month names');
  t.equal(next('@daily', 'UTC', '2026-01-01T12:00:00Z'), '2026-01-02T00:00:00.000Z', '@daily');
  t.equal(next('@hourly', 'UTC', '2026-01-01T12:00:01Z'), '2026-01-01T13:00:00.000Z', '@hourly');
  t.equal(next('@weekly', 'UTC', '2026-11-27T00:00:00Z'), '2026-11-29T00:00:00.000Z', '@weekly is Sunday midnight');
  t.equal(next('30 9 * * *', 'Asia/Tokyo', '2026-01-01T00:00:00Z'), '2026-01-01T00:30:00.000Z', 'in the job zone: 09:30 JST is 00:30 UTC');
  t.equal(scheduleProblem('0 9 * * 1-5', 'UTC'), null);
  t.match(scheduleProblem('61 * * * *', 'UTC'), /minute/);
  t.match(scheduleProblem('* * * *', 'UTC'), /exactly 5 fields .*not 4/);
  t.match(scheduleProblem('* * * * * * *', 'UTC'), /exactly 5 fields .*not 7/, 'seven fields (years) are refused');
  t.match(scheduleProblem('@every 5m', 'UTC'), /not one of @yearly/, 'only the standard macros');
  t.equal(scheduleProblem('@MIDNIGHT', 'UTC'), null, 'macros in any case');
});

await t.test('standard cron only: a seconds field (6 fields) is refused, so nothing fires every second', async (t) => {
  for (const expr of ['* * * * * *', '*/5 * * * * *', '0 0 9 * * 1-5', '  30 * * * * *  ']) {
    t.match(scheduleProblem(expr, 'UTC'), /exactly 5 fields .*not 6 \(a seconds field is not accepted\)/, expr);
    t.match(compileSchedule(expr, 'UTC'), { error: /seconds/ }, `${expr}: the scheduler cannot compile it either`);
  }
  t.equal(next('* * * * *', 'UTC', '2026-01-01T00:00:00Z'), '2026-01-01T00:01:00.000Z', 'the finest schedule is once a minute');
  t.match(scheduleProblem('* * * * *', 'Nowhere/Atlantis'), /timezone/i);
});

await t.test('zone resolution: job → user_timezone → TZ → host → UTC', async (t) => {
  t.equal(cronTimeZone('Europe/Berlin', 'Asia/Tokyo', 'UTC', null), 'Europe/Berlin');
  t.equal(cronTimeZone(null, 'Asia/Tokyo', 'Europe/Paris', null), 'Asia/Tokyo');
  t.equal(cronTimeZone('Bad/Zone', null, ':Europe/Paris', null), 'Europe/Paris');
  t.equal(cronTimeZone(null, null, null, '/usr/share/zoneinfo/America/New_York'), 'America/New_York');
  t.equal(cronTimeZone(null, null, null, null), 'UTC');
});

await t.test('DST: spring forward runs a 02:30 job once (at 03:00); fall back runs it once', async (t) => {
  // Europe/Berlin: 2026-03-29 02:00 CET → 03:00 CEST; 2026-10-25 03:00 CEST → 02:00 CET.
  t.same(fires('30 2 * * *', 'Europe/Berlin', '2026-03-28T00:00:00Z', '2026-03-30T23:59:00Z'), [
    '2026-03-28T01:30:00.000Z',
    '2026-03-29T01:00:00.000Z',
    '2026-03-30T00:30:00.000Z',
  ], 'the skipped 02:30 fires once at 03:00 CEST (01:00 UTC), not zero or two times');
  t.same(fires('30 2 * * *', 'Europe/Berlin', '2026-10-24T00:00:00Z', '2026-10-26T23:59:00Z'), [
    '2026-10-24T00:30:00.000Z',
    '2026-10-25T00:30:00.000Z',
    '2026-10-26T01:30:00.000Z',
  ], 'the repeated 02:30 fires once');
  // America/New_York: 2026-03-08 02:00 EST → 03:00 EDT; 2026-11-01 02:00 EDT → 01:00 EST.
  t.same(fires('30 2 * * *', 'America/New_York', '2026-03-08T00:00:00Z', '2026-03-09T00:00:00Z'), ['2026-03-08T07:00:00.000Z'], 'New York spring: once, at 03:00 EDT');
  t.same(fires('30 1 * * *', 'America/New_York', '2026-11-01T00:00:00Z', '2026-11-02T00:00:00Z'), ['2026-11-01T05:30:00.000Z'], 'New York fall: 01:30 once');
  t.equal(fires('0 * * * *', 'Europe/Berlin', '2026-10-24T22:00:00Z', '2026-10-25T04:00:00Z').length, 6, 'an hourly job still fires every real hour across the repeat');
});

await t.test('quiet hours: only when the job sets both ends; wrapping windows; in the job zone', async (t) => {
  const utc = (h: string) => at(`2026-06-01T${h}:00Z`);
  t.notOk(jobInQuietHours(null, '08:00', utc('03:00'), 'UTC'), 'one end is no window');
  t.notOk(jobInQuietHours('21:00', '21:00', utc('21:00'), 'UTC'), 'equal ends are no window');
  for (const [h, quiet] of [['20:59', false], ['21:00', true], ['23:30', true], ['00:00', true], ['07:59', true], ['08:00', false], ['12:00', false]] as const) {
    t.equal(jobInQuietHours('21:00', '08:00', utc(h), 'UTC'), quiet, `21→8 wraps: ${h} ${quiet ? 'quiet' : 'not quiet'}`);
  }
  t.ok(jobInQuietHours('12:00', '13:00', utc('12:30'), 'UTC'), 'plain window');
  t.notOk(jobInQuietHours('12:00', '13:00', utc('13:00'), 'UTC'), 'end excluded');
  t.ok(jobInQuietHours('21:00', '08:00', utc('19:30'), 'Europe/Moscow'), '19:30 UTC is 22:30 in Moscow');
});

await t.test('missed fires at start-up: the newest within an hour runs once, the older are skipped', async (t) => {
  const hourly = sched('0 * * * *');
  const m = missedFires(hourly, at('2026-01-01T06:00:00Z'), at('2026-01-01T09:20:00Z'));
  t.equal(iso(m.run), '2026-01-01T09:00:00.000Z');
  t.same(m.skipped.map(iso), ['2026-01-01T07:00:00.000Z', '2026-01-01T08:00:00.000Z']);
  const daily = sched('0 3 * * *');
  const old = missedFires(daily, at('2026-01-01T03:00:00Z'), at('2026-01-03T05:00:00Z'));
  t.equal(old.run, null, 'the last fire is two hours old: none runs');
  t.same(old.skipped.map(iso), ['2026-01-02T03:00:00.000Z', '2026-01-03T03:00:00.000Z']);
  t.same(missedFires(daily, at('2026-01-03T03:00:00Z'), at('2026-01-03T05:00:00Z')), { run: null, skipped: [], skippedTotal: 0 }, 'nothing after the last handled fire');
  const minutely = missedFires(sched('* * * * *'), at('2026-01-01T00:00:00Z'), at('2026-01-02T00:00:30Z'));
  t.equal(iso(minutely.run), '2026-01-02T00:00:00.000Z');
  t.equal(minutely.skipped.length, 100, 'at most 100 written down one by one');
  t.equal(minutely.skippedTotal, 1439, 'the rest are counted');
});

await t.test('ids, statuses, averages, delivery text', async (t) => {
  t.equal(fireIdOf('nightly', at('2026-01-01T03:00:00Z')), 'nightly@2026-01-01T03:00:00.000Z');
  const o = (x: Partial<TurnOutcome>): TurnOutcome => ({
    request_id: 'r', turn_id: 't', agent: 'main', session_key: 'k', status: 'completed', text: '', is_error: false, stream_fallback: false, files: [],
    provider: 'codex', model: null, session_id: null, usage: null, cost_usd: null, duration_ms: null, reason: null, ...x,
  });
  t.equal(runStatusOf(o({})), 'success');
  t.equal(runStatusOf(o({ status: 'timed_out', is_error: true, reason: 'timeout' })), 'error:timeout');
  t.equal(runStatusOf(o({ status: 'failed', is_error: true, reason: 'spawn-failed' })), 'error:cli_not_found_codex');
  t.equal(runStatusOf(o({ status: 'failed', is_error: true, reason: 'exit-code', exit_code: 3 })), 'error:exit_3');
  t.equal(runStatusOf(o({ status: 'failed', is_error: true, reason: 'empty-output' })), 'error:empty_output');
  t.equal(nextAverage(null, 0, 4), 4);
  t.equal(nextAverage(4, 1, 2), 3);
  t.equal(cronDeliveryText('Digest', 'success', 'all good'), 'TASK: Digest\n\nall good');
  t.match(cronDeliveryText('Digest', 'error:exit_1', 'boom'), /^TASK: Digest\n\n\(run ended error:exit_1\)\n\nboom$/);
});

await t.test('the log: handled fires, unfinished fires, undelivered results, unfinished one-shot runs', async (t) => {
  let seq = 0;
  const e = (type: string, data: Record<string, unknown>, correlation?: string): AnyEnvelope =>
    ({ seq: ++seq, at: '2026-01-01T00:00:00.000Z', stream: `cron:${String(data.id ?? data.run_id)}`, type, data, ...(correlation ? { correlation } : {}) }) as AnyEnvelope;
  const s = foldCronLog([
    e(AUTOMATION_EVENTS.fired, { id: 'a', agent: 'main', fire_id: 'a@1', scheduled_at: '2026-01-01T01:00:00.000Z', trigger: 'schedule' }),
    e(AUTOMATION_EVENTS.run_finished, { id: 'a', agent: 'main', fire_id: 'a@1', status: 'success', result: 'r1', deliver: true }),
    e(AUTOMATION_EVENTS.delivery_failed, { id: 'a', fire_id: 'a@1', attempt: 1, error: 'x', retry_at: '2026-01-01T01:00:30.000Z' }),
    e(AUTOMATION_EVENTS.fired, { id: 'a', agent: 'main', fire_id: 'a@2', scheduled_at: '2026-01-01T02:00:00.000Z', trigger: 'schedule' }, 'cron:a@2'),
    e(AUTOMATION_EVENTS.fired, { id: 'a', agent: 'main', fire_id: 'a@manual', scheduled_at: '2026-01-01T05:00:00.000Z', trigger: 'manual' }),
    e(AUTOMATION_EVENTS.run_finished, { id: 'a', agent: 'main', fire_id: 'a@manual', status: 'success', result: '', deliver: false }),
    e(AUTOMATION_EVENTS.fire_skipped, { id: 'b', agent: 'main', fire_id: 'b@1', scheduled_at: '2026-01-01T03:00:00.000Z', status: 'skipped:missed' }),
    e(AUTOMATION_EVENTS.fired, { id: 'gone', agent: 'main', fire_id: 'g@1', scheduled_at: '2026-01-01T03:00:00.000Z', trigger: 'schedule' }),
    e(AUTOMATION_EVENTS.job_deleted, { id: 'gone', agent: 'main', by: null }),
  ]);
  t.equal(iso(s.get('a')!.lastScheduledMs), '2026-01-01T02:00:00.000Z', 'a manual fire does not move the schedule');
  t.same(s.get('a')!.unfinished, [{ fire_id: 'a@2', agent: 'main', correlation: 'cron:a@2' }], 'the correlation finds the fire\'s one-shot run');
  t.match(s.get('a')!.undelivered, [{ fire_id: 'a@1', result: 'r1', attempts: 1, gaveUp: false }]);
  t.equal(iso(s.get('b')!.lastScheduledMs), '2026-01-01T03:00:00.000Z');
  t.notOk(s.has('gone'));
  const request = { source: 'cron:a', agent: 'main', name: 'A', prompt: 'p', provider: null, model: null, reasoning_effort: null, dependency: 'k', principal: {}, correlation: 'c4' };
  const runs = [
    e(ONESHOT_EVENTS.queued, { run_id: 'r1' }, 'c1'),
    e(ONESHOT_EVENTS.queued, { run_id: 'r2' }, 'c2'),
    e(ONESHOT_EVENTS.started, { run_id: 'r2' }),
    e(ONESHOT_EVENTS.finished, { run_id: 'r1', status: 'success' }),
    e(ONESHOT_EVENTS.queued, { run_id: 'r3' }, 'c3'),
    e(ONESHOT_EVENTS.queued, { run_id: 'r4', request }, 'c4'),
  ];
  const cut = cutOneShots(runs);
  t.same(
    cut.map((r) => [r.run_id, r.correlation, r.started, restartsAfterCut(r)]),
    [
      ['r2', 'c2', true, false],
      ['r3', 'c3', false, false],
      ['r4', 'c4', false, true],
    ],
    'queued order; only a run that never started and whose request is kept starts again',
  );
});
