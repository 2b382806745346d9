import t from 'tap';
import {
  EMPTY_BODIES,
  EMPTY_THROTTLE_STATE,
  MAX_NOTIFICATION_BODY_CHARS,
  THROTTLE_WINDOW_MS,
  TRUNCATION_MARK,
  classify,
  outcomeNotification,
  countsAsUnread,
  isEmptyBody,
  shouldThrottle,
  truncateBody,
  type NotificationOccurrence,
} from '../../machines/index.js';
import { NOTIFICATION_SEVERITIES, SvcError, type Severity } from '../../schemas/index.js';

await t.test('the severity table, row by row', async (t) => {
  const rows: [NotificationOccurrence, ReturnType<typeof classify>][] = [
    [{ source: 'cron', outcome: 'success', body: '' }, { persist: false }],
    [{ source: 'cron', outcome: 'success', body: 'disk at 91%, rotated logs' }, { persist: true, severity: 'silent', type: 'cron' }],
    [{ source: 'cron', outcome: 'failed', body: 'exit 1' }, { persist: true, severity: 'critical', type: 'cron' }],
    [{ source: 'cron', outcome: 'failed', body: '' }, { persist: true, severity: 'critical', type: 'cron' }],
    [{ source: 'task', outcome: 'success', body: 'done' }, { persist: false }],
    [{ source: 'task', outcome: 'success', body: 'Refactored 3 files' }, { persist: true, severity: 'silent', type: 'task' }],
    [{ source: 'task', outcome: 'failed', body: 'timeout' }, { persist: true, severity: 'critical', type: 'task' }],
    [{ source: 'webhook', outcome: 'success', body: '' }, { persist: true, severity: 'info', type: 'webhook' }],
    [{ source: 'webhook', outcome: 'success', body: 'payload handled' }, { persist: true, severity: 'info', type: 'webhook' }],
    [{ source: 'webhook', outcome: 'error', body: 'bad signature' }, { persist: true, severity: 'warning', type: 'webhook' }],
  ];
  for (const [occ, want] of rows) t.same(classify(occ), want, `${occ.source} ${occ.outcome} ${JSON.stringify(occ.body)}`);
});

await t.test('every empty-body spelling, any case, trimmed, for cron and task', async (t) => {
  const spellings = [
    '', '   ', '\n\t', 'done', 'DONE', 'Done', ' done\n', 'ok', 'OK', 'Ok', '  ok  ', 'success', 'Success', 'SUCCESS\n',
    'completed', 'Completed', '\tCOMPLETED ',
  ];
  t.same(EMPTY_BODIES, ['', 'done', 'ok', 'success', 'completed']);
  for (const source of ['cron', 'task'] as const) {
    for (const body of spellings) t.same(classify({ source, outcome: 'success', body }), { persist: false }, `${source} ${JSON.stringify(body)}`);
    t.same(classify({ source, outcome: 'success' }), { persist: false }, `${source} with no body`);
    t.same(classify({ source, outcome: 'success', body: null }), { persist: false }, `${source} with a null body`);
    // Near misses are real bodies.
    for (const body of ['done.', 'okay', 'not done', 'success!', 'completed 3 items', 'd one']) {
      t.same(classify({ source, outcome: 'success', body }), { persist: true, severity: 'silent', type: source }, `${source} ${JSON.stringify(body)}`);
    }
  }
  t.ok(isEmptyBody(' Ok '));
  t.notOk(isEmptyBody('okay'));
});

await t.test('rows SPEC.md leaves out: other failure spellings and system notifications', async (t) => {
  t.same(classify({ source: 'cron', outcome: 'error' }), { persist: true, severity: 'critical', type: 'cron' });
  t.same(classify({ source: 'task', outcome: 'error' }), { persist: true, severity: 'critical', type: 'task' });
  t.same(classify({ source: 'webhook', outcome: 'failed' }), { persist: true, severity: 'warning', type: 'webhook' });
  t.same(classify({ source: 'system', outcome: 'success', body: '' }), { persist: true, severity: 'info', type: 'system' });
  t.same(classify({ source: 'system', outcome: 'failed' }), { persist: true, severity: 'critical', type: 'system' });
  t.same(classify({ source: 'system', outcome: 'error' }), { persist: true, severity: 'warning', type: 'system' });
});

await t.test('classify refuses what is not in the table', async (t) => {
  t.throws(() => classify({ source: 'mail', outcome: 'success' } as never), new SvcError('invalid-notification', 'notification source "mail" is not one of cron, task, webhook, system'));
  t.throws(() => classify({ source: 'cron', outcome: 'ok' } as never), { code: 'invalid-notification', message: /outcome "ok"/ });
  t.throws(() => classify({ source: undefined, outcome: 'success' } as never), { code: 'invalid-notification' });
});

await t.test('unread: critical, warning and info count while unread; silent never', async (t) => {
  const want: Record<Severity, boolean> = { critical: true, warning: true, info: true, silent: false };
  for (const severity of NOTIFICATION_SEVERITIES) {
    t.equal(countsAsUnread({ read: false, severity }), want[severity], `${severity} unread`);
    t.equal(countsAsUnread({ read: true, severity }), false, `${severity} read`);
  }
});

await t.test('throttle windows', async (t) => {
  const t0 = 1_700_000_000_000;
  t.equal(THROTTLE_WINDOW_MS, 60_000);

  await t.test('warning and info: throttled inside 60 s, not at 60 s', async (t) => {
    for (const severity of ['warning', 'info'] as const) {
      const first = shouldThrottle(EMPTY_THROTTLE_STATE, 'hook-1', severity, t0);
      t.equal(first.throttled, false, `${severity}: first sighting`);
      t.equal(shouldThrottle(first.state, 'hook-1', severity, t0 + 59_900).throttled, true, `${severity}: 59.9 s later`);
      t.equal(shouldThrottle(first.state, 'hook-1', severity, t0 + 59_999).throttled, true, `${severity}: 59.999 s later`);
      t.equal(shouldThrottle(first.state, 'hook-1', severity, t0 + 60_000).throttled, false, `${severity}: 60 s later`);
      t.equal(shouldThrottle(first.state, 'hook-2', severity, t0 + 1).throttled, false, `${severity}: another source`);
    }
    // warning and info share one memory per source.
    const w = shouldThrottle(EMPTY_THROTTLE_STATE, 'hook-1', 'warning', t0);
    t.equal(shouldThrottle(w.state, 'hook-1', 'info', t0 + 10_000).throttled, true);
  });

  await t.test('a throttled sighting still counts as seen', async (t) => {
    let s = shouldThrottle(EMPTY_THROTTLE_STATE, 'h', 'info', t0).state;
    const mid = shouldThrottle(s, 'h', 'info', t0 + 50_000);
    t.equal(mid.throttled, true);
    s = mid.state;
    t.equal(shouldThrottle(s, 'h', 'info', t0 + 100_000).throttled, true, '50 s after the last sighting');
    t.equal(shouldThrottle(s, 'h', 'info', t0 + 110_000).throttled, false, '60 s after the last sighting');
  });

  await t.test('critical never, silent always, neither touches the memory', async (t) => {
    const seen = shouldThrottle(EMPTY_THROTTLE_STATE, 'job', 'warning', t0).state;
    for (const at of [t0, t0 + 1, t0 + 59_900, t0 + 60_000]) {
      const c = shouldThrottle(seen, 'job', 'critical', at);
      t.equal(c.throttled, false);
      t.equal(c.state, seen, 'critical leaves the state as it was');
      const s = shouldThrottle(EMPTY_THROTTLE_STATE, 'fresh', 'silent', at);
      t.equal(s.throttled, true);
      t.equal(s.state, EMPTY_THROTTLE_STATE);
    }
  });

  await t.test('pure: input state is never changed; old entries are pruned', async (t) => {
    const a = shouldThrottle(EMPTY_THROTTLE_STATE, 'a', 'info', t0).state;
    t.equal(EMPTY_THROTTLE_STATE.size, 0);
    const b = shouldThrottle(a, 'b', 'info', t0 + 30_000).state;
    t.same([...a.keys()], ['a']);
    t.same([...b.keys()].sort(), ['a', 'b']);
    const c = shouldThrottle(b, 'c', 'info', t0 + 61_000).state;
    t.same([...c.keys()].sort(), ['b', 'c'], 'a is older than the window and dropped');
  });

  await t.test('no source id: nothing to match, never throttled, nothing remembered', async (t) => {
    for (const id of [null, undefined, '']) {
      const r = shouldThrottle(EMPTY_THROTTLE_STATE, id, 'warning', t0);
      t.equal(r.throttled, false);
      t.equal(shouldThrottle(r.state, id, 'warning', t0 + 1).throttled, false);
      t.equal(r.state.size, 0);
    }
  });

  await t.test('out-of-order and bad input', async (t) => {
    const s = shouldThrottle(EMPTY_THROTTLE_STATE, 'h', 'info', t0).state;
    t.equal(shouldThrottle(s, 'h', 'info', t0 - 5_000).throttled, true, 'a clock that stepped back still counts as just seen');
    t.equal(shouldThrottle(s, 'h', 'info', t0 - 5_000).state.get('h'), t0, 'and does not move the last sighting back');
    t.throws(() => shouldThrottle(s, 'h', 'info', Number.NaN), { code: 'invalid-clock' });
    t.throws(() => shouldThrottle(s, 'h', 'info', Infinity), { code: 'invalid-clock' });
    t.throws(() => shouldThrottle(s, 'h', 'loud' as Severity, t0), { code: 'invalid-notification', message: /"loud"/ });
  });
});

await t.test('oversized bodies are cut to the cap with a mark', async (t) => {
  t.equal(truncateBody('short'), 'short');
  const exact = 'x'.repeat(MAX_NOTIFICATION_BODY_CHARS);
  t.equal(truncateBody(exact), exact);
  const cut = truncateBody('y'.repeat(MAX_NOTIFICATION_BODY_CHARS + 1));
  t.equal(cut.length, MAX_NOTIFICATION_BODY_CHARS);
  t.ok(cut.endsWith(TRUNCATION_MARK));
});

await t.test('outcomeNotification: each outcome fact of SPEC.md severity table becomes a notification naming what ended and its id', async (t) => {
  const task = { name: 'Nightly report', agent: 'coder' };
  const done = outcomeNotification({ type: 'task.completed', stream: 'task:t1', data: { result: 'all green', at: 1 } }, task);
  t.same(done, { source: 'task', outcome: 'success', title: 'Task "Nightly report" (t1) finished', body: 'all green', agent: 'coder', source_id: 't1', status: 'done' });
  t.match(classify(done!), { persist: true, severity: 'silent', type: 'task' }, 'task success with a real body: silent');
  const failed = outcomeNotification({ type: 'task.failed', stream: 'task:t1', data: { reason: 'exit-code', result: 'boom', at: 2 } }, task);
  t.match(failed, { source: 'task', outcome: 'failed', title: 'Task "Nightly report" (t1) failed: exit-code', body: 'boom', agent: 'coder', source_id: 't1' });
  t.match(classify(failed!), { severity: 'critical' }, 'task failed: critical');
  t.same(classify(outcomeNotification({ type: 'task.completed', stream: 'task:t2', data: { result: ' Done ' } })!), { persist: false }, 'task success with an empty body: not persisted');
  t.match(outcomeNotification({ type: 'task.failed', stream: 'task:t3', data: { reason: 'timeout', result: '' } }), { title: 'Task t3 failed: timeout', agent: null }, 'a task whose created fact is unknown is named by its id');

  const cron = (status: string, result: string) => outcomeNotification({ type: 'cron.run_finished', stream: 'cron:daily', data: { id: 'daily', agent: 'main', fire_id: 'f', status, result, name: 'Daily digest' } });
  t.match(cron('success', 'the digest'), { source: 'cron', outcome: 'success', title: 'Cron job "Daily digest" (daily) finished', body: 'the digest', agent: 'main', source_id: 'daily' });
  t.match(classify(cron('success', 'the digest')!), { severity: 'silent', type: 'cron' }, 'cron success with a real body: silent');
  t.same(classify(cron('success', 'ok')!), { persist: false }, 'cron success with an empty body: not persisted');
  t.match(cron('error:exit_1', 'stderr tail'), { outcome: 'failed', title: 'Cron job "Daily digest" (daily) failed: error:exit_1', body: 'stderr tail' });
  t.match(classify(cron('error:timeout', '')!), { persist: true, severity: 'critical' }, 'cron failed: critical, even with no output');
  t.equal(cron('skipped:quiet_hours', ''), null, 'a skipped fire ran nothing: no notification');

  const hook = outcomeNotification({ type: 'webhook.completed', stream: 'webhook:gh', data: { id: 'gh', agent: 'main', mode: 'wake', request_id: 'r1', status: 'completed', turn_id: 'x', task_id: null, name: 'GitHub' } });
  t.match(hook, { source: 'webhook', outcome: 'success', title: 'Webhook "GitHub" (gh) called', body: /wake call r1 ran: completed/, agent: 'main', source_id: 'gh' });
  t.match(classify(hook!), { severity: 'info', type: 'webhook' }, 'webhook success: info');
  const hookErr = outcomeNotification({ type: 'webhook.failed', stream: 'webhook:gh', data: { id: 'gh', agent: 'main', mode: 'wake', request_id: 'r2', reason: 'turn-failed', error: 'the turn ended failed' } });
  t.match(hookErr, { outcome: 'error', title: 'Webhook gh failed', body: /r2 failed \(turn-failed\): the turn ended failed/ });
  t.match(classify(hookErr!), { severity: 'warning' }, 'webhook error: warning');

  // A cron_task call: its start says nothing to the bell; its run's end does, once.
  t.equal(outcomeNotification({ type: 'webhook.completed', stream: 'webhook:gh', data: { id: 'gh', agent: 'main', mode: 'cron_task', request_id: 'r3', status: 'started', turn_id: null, task_id: 'run1' } }), null);
  const run = (status: string, result: string) => outcomeNotification({ type: 'webhook.run_ended', stream: 'webhook:gh', data: { id: 'gh', agent: 'main', request_id: 'r3', run_id: 'run1', status, result, name: 'GitHub' } });
  t.match(run('success', 'triaged 3 issues'), { source: 'webhook', outcome: 'success', title: 'Webhook "GitHub" (gh) run finished', body: 'triaged 3 issues', agent: 'main', source_id: 'gh' });
  t.match(classify(run('success', 'triaged 3 issues')!), { severity: 'info' }, 'webhook run success: info');
  t.match(run('error:timeout', ''), { outcome: 'error', title: 'Webhook "GitHub" (gh) run failed: error:timeout' });
  t.match(classify(run('error:timeout', '')!), { severity: 'warning' }, 'webhook run error: warning');

  t.equal(outcomeNotification({ type: 'cron.fired', stream: 'cron:x', data: { id: 'x' } }), null, 'other facts raise nothing');
  t.equal(outcomeNotification({ type: 'cron.run_finished', stream: 'cron:x', data: { status: 'success' } }), null, 'a fact without its id names nothing');
  const long = outcomeNotification({ type: 'task.failed', stream: `task:${'i'.repeat(300)}`, data: { reason: 'r'.repeat(300) } }, { name: 'n'.repeat(600), agent: 'a' });
  t.ok(long!.title.length <= 500 && long!.source_id!.length <= 200, 'long names are cut to what a notification holds');
});
