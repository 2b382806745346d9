// The cron scheduler and the one-shot runner on a simulated clock (nothing sleeps): fires in job
// zones and across DST, quiet hours, silent_on_success, run records in cron_jobs.json, the
// dependency queue shared by a cron job and a webhook cron_task, missed fires and restarts that
// never run a fire twice, delivery retry, and hand edits of the file. The agent is a fake on the
// agent contract that records each message and answers when told.
import { recordingTransport, registryOf } from '../fixtures/recording-transport.js';
import t from 'tap';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SimulatedClock } from 'xstate';
import { CRON_FIRE_BATCH } from '../../machines/index.js';
import { CronScheduler, OneShotRuns, dispatchWebhook, prepareCronJobFolder, startChatDelivery } from '../../actors/index.js';
import { Bus, serveAgents, type LogLine } from '../../bus/index.js';
import {
  AUTOMATION_EVENTS,
  CHAT_DELIVERY_CHUNKS,
  CHAT_DELIVERY_EVENTS,
  CHAT_SESSION_COMMANDS,
  ONESHOT_EVENTS,
  defaultConfig,
  type AgentMessage,
  type AnyEnvelope,
  type CronJobRecord,
  type TurnOutcome,
  type WebhookTriggerSettings,
} from '../../schemas/index.js';
import { MemoryEventLog, homePaths, loadCronJobs, saveCronJobs, type HomePaths } from '../../store/index.js';

/**
 * The scheduler's clock with its 0-ms delays on a clock of their own, stepped by the test as the
 * event loop's turns: on one SimulatedClock, a 0-ms delay set while another timer of the same
 * increment is pending runs within that increment, so batches would not be seen one by one.
 */
function loopTurns(clock: SimulatedClock, turns: SimulatedClock) {
  type Handle = { turn: unknown } | { at: unknown };
  return {
    now: () => clock.now(),
    setTimeout: (fn: () => void, ms: number): Handle => (ms <= 0 ? { turn: turns.setTimeout(fn, 0) } : { at: clock.setTimeout(fn, ms) }),
    clearTimeout: (h: Handle) => ('turn' in h ? turns.clearTimeout(h.turn as number) : clock.clearTimeout(h.at as number)),
  };
}

type TT = { testdir(): string; teardown(fn: () => void | Promise<void>): void };
const at = (s: string) => Date.parse(s);

interface Held {
  msg: AgentMessage;
  end(o?: Partial<TurnOutcome>): void;
}

function stand(t: TT, opts: { start: string; jobs: Record<string, unknown>[]; hold?: boolean; failDeliveries?: number; log?: MemoryEventLog; paths?: HomePaths; zone?: () => string; turns?: boolean }) {
  const paths = opts.paths ?? homePaths(join(t.testdir(), 'home'));
  if (!opts.paths) {
    saveCronJobs(paths, opts.jobs as CronJobRecord[]);
    for (const j of opts.jobs) if (!(j as { noFolder?: boolean }).noFolder) prepareCronJobFolder(paths, String(j.id));
  }
  const log = opts.log ?? new MemoryEventLog();
  const clock = new SimulatedClock();
  clock.set(at(opts.start));
  const bus = new Bus({ log, clock: () => clock.now() });
  const logs: LogLine[] = [];
  bus.transient$.subscribe((m) => {
    if (m.type === 'log.line') logs.push(m.data as LogLine);
  });
  const received: AgentMessage[] = [];
  const held: Held[] = [];
  const outcome = (m: AgentMessage, o: Partial<TurnOutcome> = {}): TurnOutcome => ({
    request_id: m.request_id, turn_id: `t${received.indexOf(m)}`, agent: m.agent, session_key: `task:${m.task?.task_id}`, status: 'completed',
    text: `done: ${m.text.split('\n')[0]}`, is_error: false, stream_fallback: false, files: [], provider: m.task?.provider ?? 'claude', model: m.task?.model ?? null,
    session_id: 's', usage: null, cost_usd: null, duration_ms: 5, reason: null, ...o,
  });
  const agents = serveAgents(bus, 'fake-agents', {
    accept: (m) => {
      received.push(m);
      if (!opts.hold) return { outcome: Promise.resolve(outcome(m)) };
      return { outcome: new Promise<TurnOutcome>((resolve) => held.push({ msg: m, end: (o) => resolve(outcome(m, o)) })) };
    },
    abort: () => ({ killed: 0 }),
    list: () => [],
  });
  const envelopes: { agent: string; content: string; kind?: string | undefined; id: string }[] = [];
  let failing = opts.failDeliveries ?? 0;
  const chat = bus.handle(CHAT_SESSION_COMMANDS.recordEnvelope, 'fake-chat', ({ data }) => {
    if (failing > 0) {
      failing--;
      throw new Error('the chat store is down');
    }
    envelopes.push({ agent: data.agent, content: data.message.content, kind: data.message.kind, id: data.message.id });
    return { session_id: 'admin-1' };
  });
  let n = 0;
  const zone = opts.zone ?? (() => 'UTC');
  const turns = opts.turns ? new SimulatedClock() : null;
  const runner = new OneShotRuns({ bus, log, paths, config: defaultConfig, timezone: zone, newId: () => `run${++n}` });
  const scheduler = new CronScheduler({ bus, log, paths, runner, defaultZone: zone, clock: turns ? loopTurns(clock, turns) : clock, watchIntervalMs: 1000 });
  /**
   * Everything fired, queued, recorded or delivered so far has ended, but runs the fake agent holds;
   * a burst the plan hands out batch by batch (0-ms delays on the clock) is handed out to its end.
   */
  const settle = async () => {
    await scheduler.idle();
    while (scheduler.draining()) {
      (turns ?? clock).increment(0);
      await scheduler.idle();
    }
  };
  /** Moves the clock in steps, letting what each step fired run to its end. */
  const advance = async (ms: number, step = 10 * 60_000) => {
    for (let done = 0; done < ms; done += step) {
      clock.increment(Math.min(step, ms - done));
      await settle();
    }
  };
  const facts = (type?: string): AnyEnvelope[] => log.read({ streamPrefix: 'cron:' }).filter((e) => type === undefined || e.type === type);
  const job = (id: string) => loadCronJobs(paths).find((j) => j.id === id)!;
  let stopped = false;
  const stop = () => {
    if (stopped) return;
    stopped = true;
    scheduler.stop();
    runner.stop();
    agents.unsubscribe();
    chat.unsubscribe();
  };
  t.teardown(() => {
    stop();
    bus.close();
  });
  return { turns, paths, log, clock, bus, logs, received, held, envelopes, runner, scheduler, settle, advance, facts, job, stop };
}

const created = (iso: string) => Math.floor(at(iso) / 1000);

await t.test('fires in each job zone, across spring-forward, with quiet hours and silent success; run records and delivery', async (t) => {
  const start = '2026-03-28T00:00:00Z';
  const s = stand(t, {
    start,
    jobs: [
      { id: 'berlin', title: 'Berlin report', schedule: '30 2 * * *', timezone: 'Europe/Berlin', agent: 'main', enabled: true, description: 'Write the Berlin report', created_at: created(start), provider: 'codex', model: 'gpt-x', reasoning_effort: 'high', cli_parameters: { codex: ['--flag', 'v'], claude: ['--no'] } },
      { id: 'tokyo', title: 'Tokyo', schedule: '0 9 * * *', timezone: 'Asia/Tokyo', agent: 'main', enabled: true, description: '', created_at: created(start) },
      { id: 'quiet', title: 'Hourly', schedule: '0 * * * *', agent: 'main', enabled: true, description: 'tick', quiet_start: '21:00', quiet_end: '08:00', silent_on_success: true, created_at: created(start) },
      { id: 'paused', title: 'Off', schedule: '* * * * *', agent: 'main', enabled: false, description: '', created_at: created(start) },
      { id: 'nofolder', title: 'No folder', schedule: '0 12 * * *', agent: 'main', enabled: true, description: '', created_at: created(start), noFolder: true },
    ],
  });
  await s.scheduler.start('start:1');
  t.equal(s.job('berlin').next_run, '2026-03-28T01:30:00.000Z', 'next_run written at start');
  t.equal(s.job('paused').next_run ?? null, null, 'a paused job has no next run');
  await s.advance(2 * 24 * 3600_000);

  const fired = (id: string) => s.facts(AUTOMATION_EVENTS.fired).filter((e) => e.data.id === id).map((e) => e.data.scheduled_at);
  t.same(fired('berlin'), ['2026-03-28T01:30:00.000Z', '2026-03-29T01:00:00.000Z'], 'Berlin 02:30: once on the spring-forward day, at 03:00 CEST');
  t.same(fired('tokyo'), ['2026-03-29T00:00:00.000Z', '2026-03-30T00:00:00.000Z'], '09:00 in Tokyo is 00:00 UTC');
  t.equal(fired('quiet').length, 48, 'the hourly job fires every hour');
  t.same(fired('paused'), [], 'a paused job never fires');
  const statuses = (id: string) => s.facts(AUTOMATION_EVENTS.run_finished).filter((e) => e.data.id === id).map((e) => e.data.status);
  t.equal(statuses('quiet').filter((x) => x === 'skipped:quiet_hours').length, 22, '21:00-08:00 is 11 quiet hours a day');
  t.equal(statuses('quiet').filter((x) => x === 'success').length, 26);
  t.same(statuses('nofolder'), ['error:folder_missing', 'error:folder_missing']);

  // What the agent was asked: a fresh run in the job's folder, the job's own execution fields.
  const berlin = s.received.find((m) => m.task?.folder.endsWith('/berlin'))!;
  t.match(berlin, { agent: 'main', kind: 'cron', principal: { kind: 'system', id: 'cron:berlin', role: 'admin' } });
  t.match(berlin.task, { task_id: /^run\d+$/, folder: join(s.paths.workspace, 'cron_tasks', 'berlin'), provider: 'codex', model: 'gpt-x', resume_session_id: null, reasoning_effort: 'high', cli_parameters: { codex: ['--flag', 'v'], claude: ['--no'] } });
  t.match(berlin.text, /^Write the Berlin report\n[\s\S]*berlin_MEMORY\.md/, 'the prompt reminds the run of its memory file');
  t.ok(existsSync(join(s.paths.workspace, 'cron_tasks', 'berlin', 'berlin_MEMORY.md')));
  const tokyo = s.received.find((m) => m.task?.folder.endsWith('/tokyo'))!;
  t.notOk('cli_parameters' in tokyo.task!, 'no task-level parameters: the config’s apply');
  t.equal(s.received.filter((m) => m.task?.folder.endsWith('/quiet')).length, 26, 'no CLI ran in quiet hours');

  // Records.
  t.match(s.job('berlin'), { last_status: 'success', execution_count: 2, last_run_at: '2026-03-29T01:00:00.000Z', next_run: '2026-03-30T00:30:00.000Z', last_delivery_status: 'delivered', last_result: /^done: Write the Berlin report/ });
  t.type(s.job('berlin').avg_duration, 'number');
  t.match(s.job('nofolder'), { last_status: 'error:folder_missing', execution_count: 2 }, 'an error is an execution; a skip is not');
  t.match(s.job('quiet'), { last_delivery_status: 'none' });

  // Delivery: a header and the result to the job's agent chat; silent success tells nothing, a failure always.
  const berlinMsgs = s.envelopes.filter((e) => e.content.startsWith('TASK: Berlin report'));
  t.equal(berlinMsgs.length, 2);
  t.match(berlinMsgs[0], { agent: 'main', kind: 'cron_result', content: /^TASK: Berlin report\n\ndone: Write the Berlin report/ });
  t.equal(s.envelopes.filter((e) => e.content.startsWith('TASK: Hourly')).length, 0, 'silent_on_success');
  t.equal(s.envelopes.filter((e) => e.content.startsWith('TASK: No folder')).length, 2, 'errors are told');
  t.equal(s.logs.filter((l) => /changed on disk/.test(l.msg)).length, 0, 'its own writes never look like hand edits');
});

await t.test('one FIFO queue per dependency key across a cron job and a webhook cron_task; no key runs at once', async (t) => {
  const start = '2026-01-01T00:59:00Z';
  const s = stand(t, {
    start,
    hold: true,
    jobs: [
      { id: 'first', title: 'First', schedule: '0 1 * * *', agent: 'main', enabled: true, description: 'job one', dependency: 'nightly', created_at: created(start) },
      { id: 'free', title: 'Free', schedule: '0 1 * * *', agent: 'main', enabled: true, description: 'job free', created_at: created(start) },
      { id: 'third', title: 'Third', schedule: '0 1 * * *', agent: 'main', enabled: true, description: 'job three', dependency: 'nightly', created_at: created(start) },
    ],
  });
  await s.scheduler.start('start:1');
  await s.advance(60_000, 60_000);
  const hook = { id: 'deploy', agent: 'main', name: 'Deploy', enabled: true, secret: null, mode: 'cron_task', prompt_template: 'deploy now', auth: 'bearer', signature: null, transport: null, chat_id: null, topic_id: null, provider: null, model: null, reasoning_effort: null, dependency: 'nightly', cli_parameters: null, quiet_start: null, quiet_end: null } as WebhookTriggerSettings;
  const dispatched = await dispatchWebhook(s.bus, { globalToken: () => 'x', config: () => defaultConfig(), timezone: () => 'UTC', oneShot: () => s.runner }, hook, 'deploy now', 'req-1');
  t.match(dispatched, { ok: true, status: 'started' });
  await s.settle();
  const who = () => s.received.map((m) => m.task!.folder.split('/').pop());
  t.same(who(), ['first', 'free'], 'the free job runs beside the first; the third and the webhook wait for "nightly"');
  s.held.find((h) => h.msg.task!.folder.endsWith('/free'))!.end();
  await s.settle();
  t.same(who(), ['first', 'free'], 'the free job ending frees nothing of the queue');
  s.held.find((h) => h.msg.task!.folder.endsWith('/first'))!.end();
  await s.settle();
  const third = who()[2];
  const queuedOrder = s.log.read({ streamPrefix: 'oneshot:' }).filter((e) => e.type === ONESHOT_EVENTS.queued && e.data.dependency === 'nightly').map((e) => e.data.folder);
  t.equal(third, queuedOrder[1], 'the next one is the one queued next');
  s.held.at(-1)!.end();
  await s.settle();
  t.equal(who()[3], queuedOrder[2]);
  s.held.at(-1)!.end({ status: 'failed', is_error: true, reason: 'exit-code', exit_code: 2 });
  await s.settle();
  t.same(new Set(who()), new Set(['first', 'free', 'third', 'webhook_deploy']));
  t.ok(existsSync(join(s.paths.workspace, 'cron_tasks', 'webhook_deploy', 'webhook_deploy_MEMORY.md')), 'the webhook run made its folder');
  const finished = s.log.read({ streamPrefix: 'oneshot:' }).filter((e) => e.type === ONESHOT_EVENTS.finished);
  t.equal(finished.length, 4);
  t.ok(finished.some((e) => e.data.status === 'error:exit_2'), 'exit code in the status');
});

await t.test('more jobs due at once than a batch holds: each fires once, in order, batch by batch, and the run fields are written after the burst', async (t) => {
  const start = '2026-01-01T00:59:30Z';
  const n = 2 * CRON_FIRE_BATCH + 3;
  const ids = Array.from({ length: n }, (_, i) => `j${String(i).padStart(3, '0')}`);
  const jobs = ids.map((id) => ({ id, title: id, schedule: '0 * * * *', agent: 'main', enabled: true, description: `run ${id}`, dependency: 'one-by-one', created_at: created(start) }));
  const s = stand(t, { start, jobs, turns: true });
  await s.scheduler.start('start:1');
  s.clock.increment(30_000);
  await s.scheduler.idle();
  t.equal(s.facts(AUTOMATION_EVENTS.fired).length, CRON_FIRE_BATCH, 'one batch is handed out in the turn the clock moved');
  t.ok(s.scheduler.draining(), 'the rest wait for the next turn of the loop');
  t.equal(s.job('j000').last_fire_id, undefined, 'the run fields wait for the end of the burst');
  let batches = 1;
  while (s.scheduler.draining()) {
    s.turns!.increment(0);
    batches++;
    await s.scheduler.idle();
  }
  t.equal(batches, Math.ceil(n / CRON_FIRE_BATCH), 'batch by batch');
  const fired = s.facts(AUTOMATION_EVENTS.fired).map((e) => e.data.fire_id);
  t.same(fired, ids.map((id) => `${id}@2026-01-01T01:00:00.000Z`), 'every job fired once, in id order across batches');
  const queued = s.log.read({ streamPrefix: 'oneshot:' }).filter((e) => e.type === ONESHOT_EVENTS.queued).map((e) => e.data.folder);
  t.same(queued, ids, 'each run queued after its fire, in the same order');
  const firedSeq = new Map(s.facts(AUTOMATION_EVENTS.fired).map((e) => [e.correlation, e.seq]));
  for (const e of s.log.read({ streamPrefix: 'oneshot:' }).filter((e) => e.type === ONESHOT_EVENTS.queued)) t.ok(e.seq > firedSeq.get(e.correlation)!, `${String(e.data.folder)}: its fire is in the log before its run`);
  t.same(s.received.map((m) => m.task!.folder.split('/').pop()), ids, 'the dependency queue runs them one by one in fire order');
  t.equal(s.facts(AUTOMATION_EVENTS.run_finished).length, n);
  t.ok(ids.every((id) => s.job(id).last_fire_id === `${id}@2026-01-01T01:00:00.000Z` && s.job(id).next_run === '2026-01-01T02:00:00.000Z'), 'each record says so once the burst is over');
  await s.advance(60 * 60_000, 60 * 60_000);
  t.equal(s.facts(AUTOMATION_EVENTS.fired).length, 2 * n, 'the next hour: each once more');
});

await t.test('missed fires at start-up, interrupted fires, and a restart never runs a fire twice', async (t) => {
  const log = new MemoryEventLog();
  const made = '2026-01-01T00:00:00Z';
  const jobs = [
    { id: 'hourly', title: 'Hourly', schedule: '0 * * * *', agent: 'main', enabled: true, description: '', created_at: created(made) },
    { id: 'daily', title: 'Daily', schedule: '0 3 * * *', agent: 'main', enabled: true, description: '', created_at: created(made) },
  ];
  // First life: runs until 05:10, with the hourly job's 05:00 run still going when it "dies".
  const a = stand(t, { start: '2026-01-01T00:30:00Z', jobs, log, hold: true });
  await a.scheduler.start('start:1');
  for (let i = 0; i < 5; i++) {
    await a.advance(3600_000, 3600_000);
    if (i === 4) break;
    a.held.forEach((h) => h.end());
    a.held.length = 0;
    await a.settle();
  }
  t.equal(a.facts(AUTOMATION_EVENTS.fired).filter((e) => e.data.id === 'hourly').length, 5, '01:00 … 05:00');
  t.equal(a.held.length, 1, 'the 05:00 run is still going');
  a.stop(); // as a SIGKILL would: nothing more is written

  // Second life at 08:20: 05:00 was cut; 06:00 and 07:00 are skipped, 08:00 (20 minutes ago) runs; daily 03:00 already ran.
  const b = stand(t, { start: '2026-01-01T08:20:00Z', jobs, log, paths: a.paths });
  await b.scheduler.start('start:2');
  await b.settle();
  const hourly = (type: string) => b.facts(type).filter((e) => e.data.id === 'hourly');
  t.match(hourly(AUTOMATION_EVENTS.run_finished).find((e) => e.data.fire_id === 'hourly@2026-01-01T05:00:00.000Z'), { data: { status: 'error:interrupted' } }, 'the cut run is recorded failed');
  t.ok(b.log.read({ streamPrefix: 'oneshot:' }).some((e) => e.type === ONESHOT_EVENTS.finished && e.data.status === 'error:interrupted'), 'and so is its one-shot run');
  t.same(hourly(AUTOMATION_EVENTS.fire_skipped).map((e) => [e.data.scheduled_at, e.data.status]), [['2026-01-01T06:00:00.000Z', 'skipped:missed'], ['2026-01-01T07:00:00.000Z', 'skipped:missed']]);
  t.match(hourly(AUTOMATION_EVENTS.fired).at(-1), { data: { scheduled_at: '2026-01-01T08:00:00.000Z', trigger: 'missed' } });
  t.equal(b.facts(AUTOMATION_EVENTS.fired).filter((e) => e.data.id === 'daily').length, 1, 'the daily 03:00 is not run again');
  t.equal(b.received.length, 1, 'one CLI run at start-up: the 08:00 fire');
  const firedIds = b.facts(AUTOMATION_EVENTS.fired).map((e) => e.data.fire_id);
  b.stop();

  // Third life, same minute: nothing new fires, nothing runs twice.
  const c = stand(t, { start: '2026-01-01T08:25:00Z', jobs, log, paths: a.paths });
  await c.scheduler.start('start:3');
  await c.settle();
  t.same(c.facts(AUTOMATION_EVENTS.fired).map((e) => e.data.fire_id), firedIds, 'no fire twice');
  t.equal(c.received.length, 0);
  await c.advance(35 * 60_000);
  t.equal(c.facts(AUTOMATION_EVENTS.fired).at(-1)!.data.fire_id, 'hourly@2026-01-01T09:00:00.000Z', 'and the schedule goes on');
  const ids = c.facts(AUTOMATION_EVENTS.fired).map((e) => e.data.fire_id);
  t.equal(new Set(ids).size, ids.length, 'fire ids are unique in the log');
});

await t.test('a restart runs what was still waiting (dependency queue, unqueued fire) in its old order; a started run is interrupted; nothing runs twice', async (t) => {
  const log = new MemoryEventLog();
  const made = '2026-01-01T00:59:00Z';
  const jobs = [
    { id: 'first', title: 'First', schedule: '0 1 * * *', agent: 'main', enabled: true, description: 'job one', dependency: 'k', created_at: created(made) },
    { id: 'second', title: 'Second', schedule: '0 1 * * *', agent: 'main', enabled: true, description: 'job two', dependency: 'k', created_at: created(made) },
    { id: 'lone', title: 'Lone', schedule: '0 4 * * *', agent: 'main', enabled: true, description: 'job lone', created_at: created(made) },
  ];
  const a = stand(t, { start: made, jobs, log, hold: true });
  await a.scheduler.start('start:1');
  await a.advance(60_000, 60_000);
  const hook = { id: 'deploy', agent: 'main', name: 'Deploy', enabled: true, secret: null, mode: 'cron_task', prompt_template: null, auth: 'bearer', signature: null, transport: null, chat_id: null, topic_id: null, provider: null, model: null, reasoning_effort: null, dependency: 'k', cli_parameters: null, quiet_start: null, quiet_end: null } as WebhookTriggerSettings;
  t.match(await dispatchWebhook(a.bus, { globalToken: () => 'x', config: () => defaultConfig(), timezone: () => 'UTC', oneShot: () => a.runner }, hook, 'deploy now', 'req-1'), { ok: true, status: 'started' });
  await a.settle();
  t.equal(a.received.length, 1, 'one run holds "k"; the other job and the webhook wait behind it');
  const queued = a.log.read({ streamPrefix: 'oneshot:' }).filter((e) => e.type === ONESHOT_EVENTS.queued);
  const running = a.received[0]!.task!.folder.split('/').pop();
  const waiting = queued.filter((e) => e.data.folder !== running);
  // A fire cut between its fact and its run's queueing (the narrowest window there is).
  const loneFire = 'lone@2026-01-01T01:00:00.000Z';
  await a.bus.publish({ stream: 'cron:lone', type: AUTOMATION_EVENTS.fired, data: { id: 'lone', agent: 'main', fire_id: loneFire, scheduled_at: '2026-01-01T01:00:00.000Z', trigger: 'manual' }, correlation: 'manual-9' });
  a.stop(); // as a SIGKILL would: nothing more is written

  const b = stand(t, { start: '2026-01-01T01:10:00Z', jobs, log, paths: a.paths });
  const { interrupted, restarted } = await b.runner.recover('start:2');
  t.equal(interrupted.length, 1, 'the run that had asked its CLI is interrupted');
  t.same(restarted.map((r) => r.source), waiting.map((e) => e.data.source), 'the waiting ones are queued again, in their order');
  await b.scheduler.start('start:2');
  await b.settle();
  await b.settle();
  const ran = b.received.map((m) => m.task!.folder.split('/').pop());
  t.same(ran.filter((f) => f !== 'lone'), waiting.map((e) => e.data.folder), 'the waiting runs ran, in the order they were queued');
  t.ok(ran.includes('lone'), 'the fire that never reached the runner ran');
  t.equal(ran.length, 3);
  const finished = (id: string) => b.facts(AUTOMATION_EVENTS.run_finished).filter((e) => e.data.id === id);
  t.match(finished(running!), [{ data: { status: 'error:interrupted' } }]);
  const other = running === 'first' ? 'second' : 'first';
  t.match(finished(other), [{ data: { status: 'success', result: /^done: job/ } }], 'the waiting fire finished when its restarted run did');
  t.match(finished('lone'), [{ data: { fire_id: loneFire, status: 'success' } }]);
  t.match(b.envelopes.map((e) => e.content).sort(), [/^TASK: First/, /^TASK: Lone/, /^TASK: Second/], 'every fire told its chat once');
  const ends = b.log.read({ streamPrefix: 'oneshot:' }).filter((e) => e.type === ONESHOT_EVENTS.finished);
  t.equal(ends.length, 4, 'each run ended once: interrupted, the job, the webhook, the lone fire');
  b.stop();

  const c = stand(t, { start: '2026-01-01T01:20:00Z', jobs, log, paths: a.paths });
  const again = await c.runner.recover('start:3');
  t.same({ interrupted: again.interrupted, restarted: again.restarted }, { interrupted: [], restarted: [] });
  await c.scheduler.start('start:3');
  await c.settle();
  t.equal(c.received.length, 0, 'a second restart runs nothing');
  t.equal(c.facts(AUTOMATION_EVENTS.run_finished).length, 3);
});

await t.test('delivery retry: a failed delivery is retried on the clock and the result is never lost', async (t) => {
  const start = '2026-01-01T00:59:30Z';
  const s = stand(t, { start, failDeliveries: 2, jobs: [{ id: 'rep', title: 'Report', schedule: '0 1 * * *', agent: 'main', enabled: true, description: 'make it', created_at: created(start) }] });
  await s.scheduler.start('start:1');
  await s.advance(30_000, 30_000);
  t.match(s.facts(AUTOMATION_EVENTS.run_finished)[0], { data: { status: 'success', result: /^done: make it/, deliver: true } }, 'the result is in the log');
  t.match(s.facts(AUTOMATION_EVENTS.delivery_failed), [{ data: { attempt: 1, retry_at: '2026-01-01T01:00:30.000Z', error: /chat store is down/ } }]);
  t.match(s.job('rep'), { last_status: 'success', last_delivery_status: 'retrying', last_result: /^done: make it/ }, 'run status and delivery status apart');
  await s.advance(30_000, 30_000);
  t.equal(s.facts(AUTOMATION_EVENTS.delivery_failed).length, 2);
  t.equal(s.envelopes.length, 0);
  await s.advance(120_000, 30_000);
  t.match(s.facts(AUTOMATION_EVENTS.delivered), [{ data: { attempt: 3 } }]);
  t.equal(s.envelopes.length, 1);
  t.match(s.envelopes[0]!.content, /^TASK: Report\n\ndone: make it/);
  t.match(s.job('rep'), { last_delivery_status: 'delivered' });
});

await t.test('delivery to the job’s route: the direct API chat it names; a transport that is not running sends it to the admin chat, and the log says so', async (t) => {
  const start = '2026-01-01T00:59:30Z';
  const s = stand(t, {
    start,
    jobs: [
      { id: 'api', title: 'Api report', schedule: '0 1 * * *', agent: 'main', enabled: true, description: 'make it', transport: 'api', chat_id: 7, topic_id: 3, created_at: created(start) },
      { id: 'tg', title: 'Telegram report', schedule: '0 1 * * *', agent: 'main', enabled: true, description: 'tell tg', transport: 'telegram', chat_id: 42, topic_id: null, created_at: created(start) },
      { id: 'panel', title: 'Panel report', schedule: '0 1 * * *', agent: 'main', enabled: true, description: 'tell panel', created_at: created(start) },
    ],
  });
  const delivery = startChatDelivery({ bus: s.bus, transports: registryOf(recordingTransport('api')) });
  t.teardown(() => delivery.unsubscribe());
  const chunks: { stream: string; data: Record<string, unknown> }[] = [];
  s.bus.transient$.subscribe((m) => {
    if (m.type === CHAT_DELIVERY_CHUNKS.delivered) chunks.push({ stream: m.stream, data: m.data as Record<string, unknown> });
  });
  await s.scheduler.start('start:1');
  await s.advance(30_000, 30_000);

  t.match(chunks, [{ stream: 'chat:api:7', data: { transport: 'api', chat_id: 7, topic_id: 3, source: 'cron:api', text: /^TASK: Api report\n\ndone: make it/ } }], 'the api chat the job names gets it');
  t.match(s.job('api'), { last_status: 'success', last_delivery_status: 'delivered' });
  t.match(s.facts(AUTOMATION_EVENTS.delivered).filter((e) => e.data.id === 'api'), [{ data: { attempt: 1, to: 'api' } }]);

  // Telegram is not running (no bot configured): the result goes to main's admin chat on the first attempt.
  t.same(s.envelopes.map((e) => e.content.split('\n')[0]).sort(), ['TASK: Panel report', 'TASK: Telegram report'], 'the panel job and the telegram job both reach the admin chat');
  t.equal(s.facts(AUTOMATION_EVENTS.delivery_failed).length, 0, 'no failed attempt, no retries');
  t.match(s.facts(AUTOMATION_EVENTS.delivered).filter((e) => e.data.id === 'tg'), [{ data: { attempt: 1, to: 'admin' } }]);
  t.match(s.job('tg'), { last_status: 'success', last_delivery_status: 'delivered' });
  t.match(
    s.log.read({ types: [CHAT_DELIVERY_EVENTS.delivery_rerouted] }),
    [{ stream: 'delivery:telegram:42', data: { transport: 'telegram', chat_id: 42, agent: 'main', source: 'cron:tg', to: 'admin', reason: 'transport telegram is not running' } }],
    'the log records where it went and why',
  );
  await s.advance(2 * 3600_000, 60_000);
  t.equal(s.facts(AUTOMATION_EVENTS.delivery_failed).length, 0, 'nothing retried later either');
  t.equal(chunks.length, 1, 'nothing else went out');
  t.equal(s.envelopes.length, 2);
});

await t.test('an undelivered result is delivered after a restart; run-now fires outside the schedule', async (t) => {
  const start = '2026-01-01T00:59:30Z';
  const jobs = [{ id: 'rep', title: 'Report', schedule: '0 1 * * *', agent: 'main', enabled: true, description: 'make it', created_at: created(start) }];
  const a = stand(t, { start, failDeliveries: 1, jobs });
  await a.scheduler.start('start:1');
  await a.advance(30_000, 30_000);
  t.equal(a.facts(AUTOMATION_EVENTS.delivery_failed).length, 1);
  a.stop();
  const b = stand(t, { start: '2026-01-01T01:05:00Z', jobs, log: a.log, paths: a.paths });
  await b.scheduler.start('start:2');
  await b.settle();
  t.match(b.facts(AUTOMATION_EVENTS.delivered), [{ data: { attempt: 2 } }]);
  t.equal(b.envelopes.length, 1);
  const r = await b.scheduler.runNow('rep', { correlation: 'manual-1' });
  await b.settle();
  t.match(r, { started: true, fire_id: 'rep@manual-2026-01-01T01:05:00.000Z' });
  t.match(b.facts(AUTOMATION_EVENTS.fired).at(-1), { data: { trigger: 'manual' }, correlation: 'manual-1' });
  t.equal(b.job('rep').next_run, '2026-01-02T01:00:00.000Z', 'a manual run does not move the schedule');
  t.equal(b.job('rep').execution_count, 2);
});

await t.test('a hand edit of cron_jobs.json reloads the jobs; a broken file keeps the old ones', async (t) => {
  const start = '2026-01-01T00:00:00Z';
  const s = stand(t, { start, jobs: [{ id: 'j', title: 'J', schedule: '0 5 * * *', agent: 'main', enabled: true, description: '', created_at: created(start) }] });
  await s.scheduler.start('start:1');
  t.equal(s.scheduler.nextRuns().get('j'), at('2026-01-01T05:00:00Z'));
  const file = s.paths.cronJobsFile;
  const jobs = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>[];
  writeFileSync(file, JSON.stringify([{ ...jobs[0], schedule: '30 1 * * *' }, { id: 'k', title: 'K', schedule: '@hourly', agent: 'main', enabled: true }], null, 2));
  await s.advance(1000, 1000);
  t.equal(s.scheduler.nextRuns().get('j'), at('2026-01-01T01:30:00Z'), 'within one watch interval');
  t.equal(s.scheduler.nextRuns().get('k'), at('2026-01-01T01:00:00Z'), 'a job added by hand');
  t.equal(s.job('j').next_run, '2026-01-01T01:30:00.000Z');
  t.equal(s.logs.filter((l) => /changed on disk/.test(l.msg)).length, 1, 'one reload, no loop through its own write of next_run');
  await s.advance(5000, 1000);
  t.equal(s.logs.filter((l) => /changed on disk/.test(l.msg)).length, 1, 'still one');
  t.same(
    s.facts().filter((e) => e.type.startsWith('cron.job_')).map((e) => [e.type, e.data]),
    [
      [AUTOMATION_EVENTS.job_updated, { id: 'j', agent: 'main', fields: ['schedule'], by: null }],
      [AUTOMATION_EVENTS.job_created, { id: 'k', agent: 'main', by: null }],
    ],
    'the hand edit is recorded as facts, its own next_run writes are not',
  );
  writeFileSync(file, '{broken');
  await s.advance(1000, 1000);
  t.equal(s.scheduler.nextRuns().get('j'), at('2026-01-01T01:30:00Z'), 'a broken file keeps the jobs as they were');
  t.ok(s.logs.some((l) => /not reloaded/.test(l.msg)));
});

await t.test('a change of user_timezone moves the jobs without a zone of their own, and their quiet hours', async (t) => {
  const start = '2026-01-01T08:30:00Z';
  let zone = 'UTC';
  const s = stand(t, {
    start,
    zone: () => zone,
    jobs: [
      { id: 'local', title: 'Local', schedule: '0 9 * * *', agent: 'main', enabled: true, description: 'local', created_at: created(start) },
      { id: 'own', title: 'Own', schedule: '0 9 * * *', timezone: 'Asia/Tokyo', agent: 'main', enabled: true, description: 'own', created_at: created(start) },
      { id: 'quiet', title: 'Quiet', schedule: '0 * * * *', agent: 'main', enabled: true, description: 'quiet', quiet_start: '21:00', quiet_end: '08:00', created_at: created(start) },
    ],
  });
  await s.scheduler.start('start:1');
  t.equal(s.scheduler.nextRuns().get('local'), at('2026-01-01T09:00:00Z'));
  const own = s.scheduler.nextRuns().get('own');
  // Noticed by the scheduler's own checks, with no event and no edit of cron_jobs.json.
  zone = 'America/New_York';
  await s.advance(1000, 1000);
  t.equal(s.scheduler.nextRuns().get('local'), at('2026-01-01T14:00:00Z'), '09:00 in New York');
  t.equal(s.job('local').next_run, '2026-01-01T14:00:00.000Z', 'and the record says so');
  t.equal(s.scheduler.nextRuns().get('own'), own, 'a job with its own zone keeps it');
  t.equal(s.scheduler.nextRuns().get('quiet'), at('2026-01-01T09:00:00Z'), 'an hourly job fires on the hour in any zone');
  await s.advance(4 * 3600_000);
  const statuses = s.facts(AUTOMATION_EVENTS.run_finished).filter((e) => e.data.id === 'quiet').map((e) => e.data.status);
  t.same(statuses, ['skipped:quiet_hours', 'skipped:quiet_hours', 'skipped:quiet_hours', 'skipped:quiet_hours'], '09:00-12:00 UTC is 04:00-07:00 in New York: quiet');
  t.same(s.facts(AUTOMATION_EVENTS.fired).filter((e) => e.data.id === 'local').map((e) => e.data.scheduled_at), [], 'not fired at 09:00 UTC');
  // A config reload is acted on at once, without waiting for a check.
  zone = 'Europe/Berlin';
  await s.bus.publish({ stream: 'config', type: 'config.reloaded', data: { hot_applied: ['user_timezone'], restart_required: [] } });
  await s.settle();
  t.equal(s.scheduler.nextRuns().get('local'), at('2026-01-02T08:00:00Z'), '09:00 in Berlin, tomorrow');
  t.equal(s.logs.filter((l) => /changed on disk/.test(l.msg)).length, 0, 'its next_run writes are not hand edits');
});

await t.test('an unreadable cron_jobs.json: run fields wait for it, and it is reported once per change', async (t) => {
  const start = '2026-01-01T00:59:30Z';
  const s = stand(t, { start, jobs: [{ id: 'rep', title: 'Report', schedule: '0 1 * * *', agent: 'main', enabled: true, description: 'make it', created_at: created(start) }] });
  await s.scheduler.start('start:1');
  const file = s.paths.cronJobsFile;
  const good = readFileSync(file, 'utf8');
  writeFileSync(file, good.slice(0, good.length >> 1));
  const noisy = () => s.logs.filter((l) => l.level === 'warn' || l.level === 'error');
  await s.advance(1000, 1000);
  t.equal(noisy().length, 1, 'the broken file is reported');
  await s.advance(60_000, 1000);
  t.equal(s.facts(AUTOMATION_EVENTS.run_finished).length, 1, 'the job fired and ran from what was read before');
  const reported = noisy().length;
  t.ok(reported <= 2, `a few lines, not one per check (${reported})`);
  await s.advance(30_000, 1000);
  t.equal(noisy().length, reported, 'nothing more while the file stays as it is');
  writeFileSync(file, good);
  await s.advance(1000, 1000);
  t.match(s.job('rep'), { last_status: 'success', execution_count: 1, last_run_at: '2026-01-01T01:00:00.000Z', next_run: '2026-01-02T01:00:00.000Z', last_delivery_status: 'delivered', last_result: /^done: make it/ }, 'the run fields are written once the file is readable');
  t.equal(noisy().length, reported, 'and nothing is reported for the good file');
  t.same(s.facts().filter((e) => e.type.startsWith('cron.job_')), [], 'the file came back as it was: no job changed');
});

await t.test('a hand edit found while run fields are written is recorded like one found by the watcher', async (t) => {
  const start = '2026-01-01T00:59:59.500Z';
  const jobs = [
    { id: 'j', title: 'J', schedule: '0 1 * * *', agent: 'main', enabled: true, description: '', created_at: created(start) },
    { id: 'x', title: 'X', schedule: '0 5 * * *', agent: 'main', enabled: true, description: '', created_at: created(start) },
  ];
  const edit = (file: string) => {
    const now = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>[];
    writeFileSync(file, JSON.stringify([{ ...now[0], title: 'J2' }, { id: 'k', title: 'K', schedule: '@hourly', agent: 'main', enabled: true }], null, 2));
  };
  const jobFacts = (s: ReturnType<typeof stand>) => s.facts().filter((e) => e.type.startsWith('cron.job_')).map((e) => [e.type, e.data]);
  const expected = [
    [AUTOMATION_EVENTS.job_updated, { id: 'j', agent: 'main', fields: ['title'], by: null }],
    [AUTOMATION_EVENTS.job_created, { id: 'k', agent: 'main', by: null }],
    [AUTOMATION_EVENTS.job_deleted, { id: 'x', agent: 'main', by: null }],
  ];

  const watched = stand(t, { start, jobs });
  await watched.scheduler.start('start:1');
  edit(watched.paths.cronJobsFile);
  t.ok(watched.scheduler.checkFile(), 'the watcher finds it');
  await watched.settle();
  t.same(jobFacts(watched), expected);

  const flushed = stand(t, { start, jobs });
  await flushed.scheduler.start('start:1');
  edit(flushed.paths.cronJobsFile);
  // 01:00 comes before the next watch check: the fire's next_run patch meets the edit first.
  flushed.clock.increment(500);
  await flushed.settle();
  t.equal(flushed.facts(AUTOMATION_EVENTS.fired).length, 1);
  t.same(jobFacts(flushed), expected, 'the same facts');
  t.match(flushed.job('j'), { title: 'J2', last_status: 'success' }, 'the edit and the run fields are both kept');
});

await t.test('run-now refuses a job whose record is not valid, with cron-job-invalid', async (t) => {
  const start = '2026-01-01T00:00:00Z';
  const s = stand(t, {
    start,
    jobs: [
      { id: 'j', title: 'J', schedule: '0 5 * * *', agent: 'main', enabled: true, description: 'run j', created_at: created(start) },
      { id: 'never', title: 'Never', schedule: '0 5 * * *', agent: 'main', enabled: true, quiet_start: 'soon', created_at: created(start) },
    ],
  });
  await s.scheduler.start('start:1');
  await t.rejects(s.scheduler.runNow('never', { correlation: 'm1' }), { code: 'cron-job-invalid', message: /never.*not valid.*quiet_start/ }, 'a record never valid');
  const file = s.paths.cronJobsFile;
  const jobs = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>[];
  writeFileSync(file, JSON.stringify([{ ...jobs[0], agent: 'not a name!' }, jobs[1]], null, 2));
  await t.rejects(s.scheduler.runNow('j', { correlation: 'm2' }), { code: 'cron-job-invalid' }, 'a hand edit made just before is seen');
  await s.advance(5000, 1000);
  await t.rejects(s.scheduler.runNow('j', { correlation: 'm3' }), { code: 'cron-job-invalid' }, 'and after the watcher found it');
  await t.rejects(s.scheduler.runNow('gone', { correlation: 'm4' }), { code: 'not-found' });
  await s.settle();
  t.same(s.facts(AUTOMATION_EVENTS.fired), [], 'nothing fired');
  t.equal(s.received.length, 0, 'nothing ran');
  writeFileSync(file, JSON.stringify(jobs, null, 2));
  t.match(await s.scheduler.runNow('j', { correlation: 'm5' }), { started: true }, 'fixed, it runs');
});

await t.test('the record keeps a short preview of the result; the log keeps it whole', async (t) => {
  const start = '2026-01-01T00:59:30Z';
  const s = stand(t, { start, hold: true, jobs: [{ id: 'big', title: 'Big', schedule: '0 1 * * *', agent: 'main', enabled: true, description: 'a lot', created_at: created(start) }] });
  await s.scheduler.start('start:1');
  await s.advance(30_000, 30_000);
  const text = 'x'.repeat(50_000);
  s.held[0]!.end({ text });
  await s.settle();
  t.equal(s.facts(AUTOMATION_EVENTS.run_finished)[0]!.data.result, text, 'the log has all of it');
  const preview = String(s.job('big').last_result);
  t.ok(preview.length <= 2_000 && preview.length >= 1_900, `about 2,000 characters on the record (${preview.length})`);
  t.ok(text.startsWith(preview.replace(/…$/, '')), 'its start');
  t.match(s.envelopes[0]!.content, new RegExp(`^TASK: Big\\n\\nx{50000}$`), 'the chat gets the whole result');
});

await t.test('a stored job whose id is a webhook run folder (webhook_<hook>) is not run: its runs would use that hook’s memory', async (t) => {
  const start = '2026-01-01T00:00:00Z';
  const s = stand(t, {
    start,
    jobs: [
      { id: 'webhook_deploy', title: 'Borrowed', schedule: '* * * * *', agent: 'main', enabled: true, description: 'read the hook memory', created_at: created(start) },
      { id: 'mine', title: 'Mine', schedule: '* * * * *', agent: 'main', enabled: true, description: 'mine', created_at: created(start) },
    ],
  });
  await s.scheduler.start('start:1');
  await s.advance(3 * 60_000, 60_000);
  t.equal(s.scheduler.nextRuns().get('webhook_deploy'), null);
  t.same(s.facts(AUTOMATION_EVENTS.fired).filter((e) => e.data.id === 'webhook_deploy'), [], 'never fired');
  t.ok(s.facts(AUTOMATION_EVENTS.fired).some((e) => e.data.id === 'mine'), 'the others run');
  t.notOk(s.received.some((m) => m.task?.folder.endsWith('/webhook_deploy')), 'no run in the hook’s folder');
  t.ok(s.logs.some((l) => /cron job webhook_deploy is not run: .*must not start with webhook_/.test(l.msg)), 'says why');
});

await t.test('a save by svc (the admin API) whose event has not arrived yet is not taken for a hand edit', async (t) => {
  const start = '2026-01-01T00:59:59.500Z';
  const s = stand(t, { start, jobs: [{ id: 'j', title: 'J', schedule: '0 1 * * *', agent: 'main', enabled: true, description: '', created_at: created(start) }] });
  await s.scheduler.start('start:1');
  // As the admin records do: save, then publish the fact (here: not yet).
  saveCronJobs(s.paths, [...loadCronJobs(s.paths), { id: 'k', title: 'K', schedule: '@hourly', agent: 'main', enabled: true } as unknown as CronJobRecord]);
  t.notOk(s.scheduler.checkFile(), 'the watcher leaves it to the event');
  // A fire's run fields are written over the saved file before the event is handled.
  s.clock.increment(500);
  await s.settle();
  t.equal(s.facts(AUTOMATION_EVENTS.fired).length, 1);
  t.same(s.facts().filter((e) => e.type.startsWith('cron.job_')), [], 'no job fact by nobody');
  t.ok(s.job('k'), 'and the saved job is kept');
  t.equal(s.logs.filter((l) => /changed on disk/.test(l.msg)).length, 0);
  // A real hand edit after it is still one.
  writeFileSync(s.paths.cronJobsFile, JSON.stringify(loadCronJobs(s.paths).filter((j) => j.id !== 'k'), null, 2));
  t.ok(s.scheduler.checkFile());
  await s.settle();
  t.match(s.facts().filter((e) => e.type.startsWith('cron.job_')).map((e) => [e.type, e.data.id, e.data.by]), [[AUTOMATION_EVENTS.job_deleted, 'k', null]]);
});

await t.test('a seconds-field schedule written into cron_jobs.json by hand is not run, and the log says why', async (t) => {
  const start = '2026-01-01T00:00:00Z';
  const s = stand(t, {
    start,
    jobs: [
      { id: 'secs', title: 'Every second', schedule: '* * * * * *', agent: 'main', enabled: true, description: 'too often', created_at: created(start) },
      { id: 'ok', title: 'Every minute', schedule: '* * * * *', agent: 'main', enabled: true, description: 'fine', created_at: created(start) },
    ],
  });
  await s.scheduler.start('start:1');
  t.ok(s.logs.some((l) => l.level === 'warn' && /cron job secs is not run: .*seconds field is not accepted/.test(l.msg)));
  t.equal(s.scheduler.nextRuns().get('secs') ?? null, null, 'no next fire');
  await s.advance(3 * 60_000, 60_000);
  t.same(s.facts(AUTOMATION_EVENTS.fired).map((e) => e.data.id), ['ok', 'ok', 'ok'], 'only the 5-field job fired, once a minute');
});
