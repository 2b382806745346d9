import t from 'tap';
import { filter, firstValueFrom, take, toArray } from 'rxjs';
import { Bus, ofType, ofStream } from '../../bus/index.js';
import * as v from 'valibot';
import { AGENT_COMMANDS, REGISTRY_EVENTS, SvcError, defineCommand, isSvcError, type Envelope, type ErrorCode, type NewEvent } from '../../schemas/index.js';
import { MemoryEventLog, type EventLog } from '../../store/index.js';
import { anyChunk, anyEvent, rawCommand } from '../fixtures/any-event.js';

const clock = () => Date.parse('2026-11-22T10:00:00.000Z');
const ev = (type: string, stream = 's:1', data: Record<string, string | number> = {}): NewEvent => anyEvent({ stream, type, data });

await t.test('publish appends before delivering, in order, with one transaction per tick', async (t) => {
  const log = new MemoryEventLog();
  const appends: number[] = [];
  const counting: EventLog = {
    append: (events, at) => {
      appends.push(events.length);
      return log.append(events, at);
    },
    read: (q) => log.read(q),
    version: (s) => log.version(s),
    lastSeq: () => log.lastSeq(),
    close: () => log.close(),
  };
  const bus = new Bus({ log: counting, clock });
  const seen: Envelope[] = [];
  bus.subscribe('spy', (e) => {
    // Delivered only once the log holds it.
    t.ok(log.read({ after: e.seq - 1, limit: 1 })[0]?.seq === e.seq, `seq ${e.seq} is in the log when delivered`);
    seen.push(e);
  });
  const results = await Promise.all([bus.publish(ev('a.one')), bus.publish(ev('a.two')), bus.publish(ev('a.three'))]);
  await bus.publish(ev('a.four'));
  t.same(appends, [3, 1], 'three publishes in one tick share a batch');
  t.same(results.map((r) => r.seq), [1, 2, 3]);
  t.same(seen.map((e) => e.type), ['a.one', 'a.two', 'a.three', 'a.four']);
  t.equal(seen[0]!.at, '2026-11-22T10:00:00.000Z', 'time comes from the injected clock');
  bus.close();
});

await t.test('a failed append rejects every publish of the batch and delivers none of it', async (t) => {
  const log = new MemoryEventLog();
  const broken: EventLog = { ...log, append: () => { throw new SvcError('disk-full' as ErrorCode, 'no space'); }, read: (q) => log.read(q), version: () => 0, lastSeq: () => 0, close: () => {} };
  const bus = new Bus({ log: broken, clock });
  let delivered = 0;
  bus.subscribe('spy', () => void delivered++);
  const logs: string[] = [];
  bus.transient$.subscribe((m) => logs.push((m.data as { msg: string }).msg));
  const r = await Promise.allSettled([bus.publish(ev('a.one')), bus.publish(ev('a.two'))]);
  t.same(r.map((x) => x.status), ['rejected', 'rejected']);
  t.equal(delivered, 0);
  t.match(logs.join('\n'), /event log append failed: no space/);
  bus.close();
});

await t.test('a throwing subscriber is isolated and reported as an event', async (t) => {
  const bus = new Bus({ log: new MemoryEventLog(), clock });
  const good: string[] = [];
  bus.subscribe('bad', (e) => {
    if ((e.type as string) === 'x.boom') throw new Error('kaboom');
  });
  bus.subscribe('async-bad', async (e) => {
    if ((e.type as string) === 'x.boom') throw new Error('async kaboom');
  });
  bus.subscribe('good', (e) => void good.push(e.type));
  const failures = firstValueFrom(bus.events$.pipe(ofType('bus.subscriber_failed'), take(2), toArray()));
  await bus.publish(ev('x.boom'));
  await bus.publish(ev('x.after'));
  const f = await failures;
  t.same(f.map((e) => e.data.subscriber).sort(), ['async-bad', 'bad']);
  t.match(f.map((e) => e.data.error).join(' '), /kaboom/);
  t.ok(good.includes('x.boom') && good.includes('x.after'), 'the other subscriber got both events');
  t.equal(f[0]!.stream, 'bus');
  bus.close();
});

await t.test('a raw events$ observer that throws does not crash the process', async (t) => {
  const bus = new Bus({ log: new MemoryEventLog(), clock });
  bus.events$.pipe(filter((e) => (e.type as string) === 'x.raw')).subscribe(() => {
    throw new Error('raw observer broke');
  });
  const reported = firstValueFrom(bus.events$.pipe(ofType('bus.subscriber_failed')));
  await bus.publish(ev('x.raw'));
  const f = await reported;
  t.match(f.data.error, /raw observer broke/);
  bus.close();
});

await t.test('send: request/reply by correlation id, rejections, no handler, timeout', async (t) => {
  const bus = new Bus({ log: new MemoryEventLog(), clock });
  const double = defineCommand('math.double', v.object({ n: v.number() }), v.number());
  bus.handle(double, 'doubler', async ({ data }) => {
    if (data.n < 0) throw new SvcError('negative' as ErrorCode, 'n must be >= 0');
    return data.n * 2;
  });
  const [a, b] = await Promise.all([
    bus.send(rawCommand<number>('math.double'), { n: 2 }),
    bus.send(rawCommand<number>('math.double'), { n: 21 }),
  ]);
  t.equal(a, 4);
  t.equal(b, 42, 'replies are matched to their own request');
  await t.rejects(bus.send(rawCommand('math.double'), { n: -1 }), { code: 'negative' });
  await t.rejects(bus.send(rawCommand('math.triple'), {}), { code: 'no-handler' });
  t.throws(() => bus.handle(double, 'other', () => 0), { code: 'handler-exists' });
  bus.handle(rawCommand('slow.thing'), 'sloth', () => new Promise(() => undefined));
  const err = await bus.send(rawCommand('slow.thing'), {}, { timeoutMs: 20 }).catch((e) => e);
  t.ok(isSvcError(err, 'command-timeout'), 'a command nobody answers times out with a clear code');
  bus.close();
  await t.rejects(bus.send(rawCommand('math.double'), { n: 1 }), { code: 'bus-closed' });
  await t.rejects(bus.publish(ev('a.late')), { code: 'bus-closed' });
});

await t.test('transient messages reach listeners and never the log', async (t) => {
  const log = new MemoryEventLog();
  const bus = new Bus({ log, clock });
  const got = firstValueFrom(bus.transient$.pipe(filter((m) => m.type === 'turn.text_delta')));
  bus.emitTransient(anyChunk({ stream: 'turn:1', type: 'turn.text_delta', data: { text: 'hi' } }));
  t.same((await got).data, { text: 'hi' });
  t.equal(log.lastSeq(), 0);
  bus.close();
});

await t.test('ofStream matches exact names and prefixes', async (t) => {
  const bus = new Bus({ log: new MemoryEventLog(), clock });
  const tasks = firstValueFrom(bus.events$.pipe(ofStream('task:'), take(2), toArray()));
  const one = firstValueFrom(bus.events$.pipe(ofStream('task:2')));
  await bus.publishAll([ev('t.a', 'task:1'), ev('t.b', 'run:1'), ev('t.c', 'task:2')]);
  t.same((await tasks).map((e) => e.type), ['t.a', 't.c']);
  t.equal((await one).type, 't.c');
  bus.close();
});

await t.test('publish with an expected version: a stale publisher alone gets the conflict, the tick still commits', async (t) => {
  const log = new MemoryEventLog();
  const appends: number[] = [];
  const counting: EventLog = {
    append: (events, at, expected) => {
      appends.push(events.length);
      return log.append(events, at, expected);
    },
    read: (q) => log.read(q),
    version: (s) => log.version(s),
    lastSeq: () => log.lastSeq(),
    close: () => log.close(),
  };
  const bus = new Bus({ log: counting, clock });
  const seen: string[] = [];
  bus.subscribe('spy', (e) => void seen.push(`${e.stream} ${e.type}`));
  await bus.publish(ev('turn.started', 'turn:1'));
  await bus.publish(ev('task.created', 'task:1'));
  appends.length = 0;

  const r = await Promise.allSettled([
    bus.publish(ev('noise.made', 'other:1')),
    bus.publish(ev('turn.finished', 'turn:1'), { expectedVersion: 1 }),
    bus.publish(ev('task.started', 'task:1'), { expectedVersion: 1 }), // stale: task:1 is at 2
    bus.publish(ev('turn.aborted', 'turn:1'), { expectedVersion: 1 }), // lost the race inside this tick
    bus.publish(ev('task.noted', 'task:1')), // no expectation: commits regardless
  ]);
  t.same(r.map((x) => x.status), ['fulfilled', 'fulfilled', 'rejected', 'rejected', 'fulfilled']);
  const stale = (r[2] as PromiseRejectedResult).reason;
  t.ok(isSvcError(stale, 'version-conflict'), 'stale against the log');
  t.same(stale.details, { stream: 'task:1', expected: 1, actual: 2 }, 'the error names stream, expected and actual');
  const raced = (r[3] as PromiseRejectedResult).reason;
  t.ok(isSvcError(raced, 'version-conflict'), 'second writer of the tick to the same stream');
  t.match(raced.message, /turn:1 is at version \d+, not 1/);
  t.same(seen.slice(2), ['other:1 noise.made', 'turn:1 turn.finished', 'task:1 task.noted'], 'the others committed and were delivered, in order');
  t.same(log.read({ stream: 'turn:1' }).map((e) => e.type), ['turn.started', 'turn.finished'], 'the loser left no trace');
  t.equal(appends.at(-1), 3, 'the winners still share one append');
  t.ok(appends.length <= 2, 'one retry for the one stale expectation');

  const ok = await bus.publish(ev('task.started', 'task:1'), { expectedVersion: log.version('task:1') });
  t.equal(ok.seq, 6, 'rereading the version and publishing again succeeds');
  bus.close();
});

await t.test('publish with an expected version: a broken log still rejects every publish of the tick', async (t) => {
  const log = new MemoryEventLog();
  const broken: EventLog = { ...log, append: () => { throw new SvcError('disk-full' as ErrorCode, 'no space'); }, read: (q) => log.read(q), version: () => 0, lastSeq: () => 0, close: () => {} };
  const bus = new Bus({ log: broken, clock });
  const r = await Promise.allSettled([bus.publish(ev('a.one'), { expectedVersion: 0 }), bus.publish(ev('a.two')), bus.publish(ev('a.three'), { expectedVersion: 0 })]);
  t.same(r.map((x) => x.status), ['rejected', 'rejected', 'rejected']);
  t.ok(r.every((x) => isSvcError((x as PromiseRejectedResult).reason, 'disk-full' as ErrorCode) || isSvcError((x as PromiseRejectedResult).reason, 'version-conflict')), 'each gets a clear reason');
  bus.close();
});

await t.test('handle parses the data with the declaration: a refused payload never reaches the handler', async (t) => {
  const bus = new Bus({ log: new MemoryEventLog(), clock });
  const seen: unknown[] = [];
  const greet = defineCommand('greet.someone', v.strictObject({ name: v.pipe(v.string(), v.trim(), v.minLength(1)) }), v.string());
  const strict = defineCommand('greet.strictly', v.strictObject({ name: v.string() }), v.string(), { invalidCode: 'invalid-body' });
  bus.handle(greet, 'greeter', ({ data }) => {
    seen.push(data);
    return `hello ${data.name}`;
  });
  bus.handle(strict, 'greeter', ({ data }) => `hello ${data.name}`);
  t.equal(await bus.send(greet, { name: '  ada ' }), 'hello ada', 'the handler gets the schema output (trimmed)');
  for (const bad of [undefined, null, 42, 'ada', [], {}, { name: '' }, { name: 7 }, { name: 'x', extra: true }]) {
    await t.rejects(bus.send(rawCommand('greet.someone'), bad), { code: 'invalid-command', message: /^greet\.someone data/ }, JSON.stringify(bad));
  }
  await t.rejects(bus.send(rawCommand('greet.strictly'), { name: 1 }), { code: 'invalid-body', message: /^greet\.strictly data\.name: / });
  t.same(seen, [{ name: 'ada' }], 'nothing refused was handled');
  bus.close();
});

await t.test('the compiler refuses an undeclared event type, a wrong payload and a wrong command payload', async (t) => {
  const bus = new Bus({ log: new MemoryEventLog(), clock });
  // Never called: these lines are here for `tsc`, which fails the build if any of them compiles.
  const neverCalled = () => {
    // @ts-expect-error not a declared event type
    void bus.publish({ stream: 's:1', type: 'x.unknown', data: {} });
    // @ts-expect-error a declared type with a payload its schema does not describe
    void bus.publish({ stream: 'registry', type: 'registry.agent_added', data: { nom: 'x' } });
    // @ts-expect-error agent.abort takes a chat id, not text
    void bus.send(AGENT_COMMANDS.abort, { text: 'stop' });
  };
  t.type(neverCalled, 'function');
  const added = await bus.publish({ stream: 'registry', type: REGISTRY_EVENTS.agent_added, data: { name: 'x' } });
  t.same([added.type, added.data.name], ['registry.agent_added', 'x'], 'a declared fact publishes and comes back typed');
  bus.close();
});
