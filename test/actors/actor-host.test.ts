import t from 'tap';
import { filter, firstValueFrom, take, toArray } from 'rxjs';
import { assign, emit, fromPromise, setup } from 'xstate';
import { ActorHost } from '../../actors/index.js';
import { Bus, ofType } from '../../bus/index.js';
import { daemonMachine, previousRun } from '../../machines/index.js';
import { MemoryEventLog } from '../../store/index.js';

const clock = () => Date.parse('2026-11-22T10:00:00.000Z');

// A tiny job machine: the side effect (`work`) is bound by .provide(), as every real actor does.
const jobMachine = setup({
  types: { input: {} as { n: number }, context: {} as { n: number; out: number | null }, emitted: {} as { type: string; data: Record<string, number | string | null> } },
  actors: { work: fromPromise<number, number>(async () => 0) },
}).createMachine({
  id: 'job',
  initial: 'working',
  context: ({ input }) => ({ n: input.n, out: null }),
  states: {
    working: {
      entry: emit(({ context }) => ({ type: 'job.started', data: { n: context.n } })),
      invoke: {
        src: 'work',
        input: ({ context }) => context.n,
        onDone: { target: 'done', actions: assign({ out: ({ event }) => event.output }) },
        onError: { target: 'failed' },
      },
    },
    done: { type: 'final', entry: emit(({ context }) => ({ type: 'job.finished', data: { out: context.out } })) },
    failed: { type: 'final', entry: emit({ type: 'job.failed', data: { reason: 'work-failed' } }) },
  },
});

await t.test('emitted facts are recorded on the actor stream with side effects bound by provide()', async (t) => {
  const log = new MemoryEventLog();
  const bus = new Bus({ log, clock });
  const host = new ActorHost(bus);
  const finished = firstValueFrom(bus.events$.pipe(filter((e) => ['job.finished', 'job.failed'].includes(e.type)), take(2), toArray()));
  host.spawn('job:1', jobMachine.provide({ actors: { work: fromPromise<number, number>(async ({ input }) => input * 10) } }), {
    stream: 'job:1',
    input: { n: 4 },
    by: 'alice',
  });
  host.spawn('job:2', jobMachine.provide({ actors: { work: fromPromise<number, number>(async () => { throw new Error('nope'); }) } }), {
    stream: 'job:2',
    input: { n: 1 },
  });
  const facts = await finished;
  t.same(facts.map((f) => [f.stream, f.type, f.data]).sort(), [
    ['job:1', 'job.finished', { out: 40 }],
    ['job:2', 'job.failed', { reason: 'work-failed' }],
  ]);
  const job1 = log.read({ stream: 'job:1' });
  t.same(job1.map((e) => e.type), ['job.started', 'job.finished']);
  t.equal(job1[0]!.by, 'alice');
  t.same(host.ids(), [], 'final actors leave the host');
  bus.close();
});

await t.test('spawning a duplicate id is refused; stop and stopAll end actors', async (t) => {
  const bus = new Bus({ log: new MemoryEventLog(), clock });
  const host = new ActorHost(bus);
  const never = jobMachine.provide({ actors: { work: fromPromise(() => new Promise<number>(() => undefined)) } });
  host.spawn('a', never, { stream: 'a', input: { n: 1 } });
  host.spawn('b', never, { stream: 'b', input: { n: 1 } });
  t.throws(() => host.spawn('a', never, { stream: 'a', input: { n: 1 } }), { code: 'actor-exists' });
  host.stop('a');
  t.same(host.ids(), ['b']);
  host.stopAll();
  t.same(host.ids(), []);
  bus.close();
});

await t.test('restore re-creates unfinished actors from their streams and skips finished ones', async (t) => {
  const log = new MemoryEventLog();
  const at = new Date(clock()).toISOString();
  log.append(
    [
      { stream: 'daemon', type: 'daemon.started', data: { pid: 11 } },
      { stream: 'daemon', type: 'daemon.stopped', data: { reason: 'SIGTERM' } },
      { stream: 'daemon', type: 'daemon.started', data: { pid: 12 } },
    ],
    at,
  );
  t.same(previousRun(log.read({ stream: 'daemon' })), { pid: 12, started_at: at, clean: false }, 'the second run never stopped');

  const bus = new Bus({ log, clock });
  const host = new ActorHost(bus);
  const restored = host.restore(
    log,
    {
      streamPrefix: 'daemon',
      machine: daemonMachine,
      fold: (events) => {
        const prev = previousRun(events);
        return prev && !prev.clean
          ? { value: 'running', context: { pid: prev.pid, version: '0', home: '/h', node: 'v20', previous: null, reason: 'unknown' } }
          : null;
      },
    },
    (stream) => stream,
  );
  t.same(restored, ['daemon']);
  const actor = host.get<typeof daemonMachine>('daemon')!;
  t.equal(actor.getSnapshot().value, 'running', 'resumed in the state the log implies, without re-running entry actions');
  const stopped = firstValueFrom(bus.events$.pipe(ofType('daemon.stopped')));
  actor.send({ type: 'stop', reason: 'test' });
  actor.send({ type: 'stopped' });
  t.same((await stopped).data, { reason: 'test' });
  bus.close();
});

await t.test('a machine that throws is reported as actor.crashed', async (t) => {
  const bus = new Bus({ log: new MemoryEventLog(), clock });
  const host = new ActorHost(bus);
  const bad = setup({ types: { events: {} as { type: 'go' } } }).createMachine({
    on: {
      go: {
        actions: () => {
          throw new Error('invariant broken');
        },
      },
    },
  });
  const crashed = firstValueFrom(bus.events$.pipe(ofType('actor.crashed')));
  host.spawn('bad', bad, { stream: 'bad:1' });
  host.get('bad')!.send({ type: 'go' });
  const e = await crashed;
  t.equal(e.stream, 'bad:1');
  t.match(e.data.error, /invariant broken/);
  t.same(host.ids(), []);
  bus.close();
});

await t.test('every fact carries its cause: the actor’s own by default, the sender’s while it handles an event', async (t) => {
  const log = new MemoryEventLog();
  const bus = new Bus({ log, clock });
  const host = new ActorHost(bus);
  host.spawn('daemon', daemonMachine, {
    stream: 'daemon',
    input: { pid: 1, version: '0', home: '/h', node: 'v20', previous: null },
    correlation: 'start:1',
  });
  host.send('daemon', { type: 'ready', subsystems: ['daemon'] }, { causation: 1, correlation: 'req-7' });
  await host.sendAndCommit('daemon', { type: 'stop', reason: 'SIGTERM' });
  const facts = log.read({ stream: 'daemon' }).map((e) => [e.type, e.causation ?? null, e.correlation ?? null]);
  t.same(facts, [
    ['daemon.started', null, 'start:1'],
    ['daemon.ready', 1, 'req-7'],
    ['daemon.stopping', null, 'start:1'],
  ]);
  t.throws(() => host.send('nobody', { type: 'stop' }), { code: 'no-actor' }, 'sending to an actor that is not running is refused');
  bus.close();
});
