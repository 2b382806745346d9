import type tap from 'tap';
import { isSvcError } from '../../schemas/index.js';
import type { AnyEnvelope, ErrorCode, AnyNewEvent } from '../../schemas/index.js';
import { MAX_EVENT_DATA_BYTES } from '../../store/index.js';
import type { EventLog } from '../../store/index.js';

type T = Parameters<Parameters<typeof tap.test>[0]>[0];

/** Both implementations import golden logs; it is not on the EventLog interface. */
type WithRaw = EventLog & { appendRaw?: (envs: readonly AnyEnvelope[]) => number };

const AT = '2024-05-01T12:00:00.000Z';
const at = (s: number) => new Date(Date.parse(AT) + s * 1000).toISOString();
const ev = (stream: string, type: string, data: Record<string, unknown> = {}): AnyNewEvent => ({ stream, type, data: data as AnyNewEvent['data'] });

function throwsCode(t: T, fn: () => unknown, code: ErrorCode, msg: string, match?: RegExp): void {
  try {
    fn();
    t.fail(`${msg}: expected SvcError ${code}, nothing thrown`);
  } catch (err) {
    t.ok(isSvcError(err, code), `${msg}: ${code}${isSvcError(err) ? '' : ` (got ${String(err)})`}`);
    if (match) t.match((err as Error).message, match, `${msg}: message`);
  }
}

/**
 * The EventLog contract, run against every implementation. `make` opens a log in a fresh
 * directory; `reopen` (durable implementations only) opens the same directory again.
 */
export async function conformance(t: T, name: string, make: (dir: string) => EventLog, reopen?: (dir: string) => EventLog): Promise<void> {
  await t.test(`${name}: appends get consecutive seqs across batches, in order`, async (t) => {
    const log = make(t.testdir());
    t.teardown(() => log.close());
    t.equal(log.lastSeq(), 0, 'empty log');
    t.same(log.read(), [], 'nothing to read');
    const a = log.append([ev('task:1', 'task.created', { n: 1 }), ev('task:2', 'task.created', { n: 2 })], at(0));
    const b = log.append([ev('task:1', 'task.finished', { n: 3 })], at(1));
    const c = log.append([ev('agent:x', 'agent.started'), ev('task:1', 'task.resumed'), ev('task:2', 'task.failed', { reason: 'boom' })], at(2));
    t.same([...a, ...b, ...c].map((e) => e.seq), [1, 2, 3, 4, 5, 6]);
    t.same(a.map((e) => e.at), [at(0), at(0)], 'a batch shares its at');
    t.equal(log.lastSeq(), 6);
    t.same(log.read(), [...a, ...b, ...c], 'read returns exactly what append returned');
    t.same(a[0], { seq: 1, at: at(0), stream: 'task:1', type: 'task.created', data: { n: 1 } }, 'envelope shape, no undefined keys');
    t.same(Object.keys(a[0]!).sort(), ['at', 'data', 'seq', 'stream', 'type']);
  });

  await t.test(`${name}: every ReadQuery field filters, alone and combined`, async (t) => {
    const log = make(t.testdir());
    t.teardown(() => log.close());
    const streams = ['task:1', 'task:2', 'Task:3', 'task_x', 'tas%', 'agent:a', 'task:10', 'tasé:1'];
    const types = ['task.created', 'task.waiting', 'task.finished'];
    for (let i = 0; i < 21; i++) log.append([ev(streams[i % streams.length]!, types[i % types.length]!, { i })], at(i));
    const all = log.read();
    t.equal(all.length, 21);
    const seqs = (es: AnyEnvelope[]) => es.map((e) => e.seq);
    const expect = (pred: (e: AnyEnvelope) => boolean) => seqs(all.filter(pred));

    t.same(seqs(log.read({ stream: 'task:1' })), expect((e) => e.stream === 'task:1'), 'stream');
    t.same(log.read({ stream: 'nope' }), [], 'unknown stream');
    t.same(seqs(log.read({ streamPrefix: 'task:' })), expect((e) => e.stream.startsWith('task:')), 'prefix');
    t.same(seqs(log.read({ streamPrefix: 'task:1' })), expect((e) => e.stream === 'task:1' || e.stream === 'task:10'), 'prefix includes longer names');
    t.same(seqs(log.read({ streamPrefix: 'Task' })), expect((e) => e.stream === 'Task:3'), 'prefix is case-sensitive');
    t.same(seqs(log.read({ streamPrefix: 'tas%' })), expect((e) => e.stream === 'tas%'), '% is not a wildcard');
    t.same(seqs(log.read({ streamPrefix: 'task_' })), expect((e) => e.stream === 'task_x'), '_ is not a wildcard');
    t.same(seqs(log.read({ streamPrefix: '' })), seqs(all), 'empty prefix matches everything');
    t.same(seqs(log.read({ streamPrefix: 'tasé' })), expect((e) => e.stream === 'tasé:1'), 'non-ASCII prefix');
    t.same(seqs(log.read({ streamPrefix: 'tas' })), expect((e) => e.stream.startsWith('tas')), 'short prefix');
    t.same(seqs(log.read({ types: ['task.waiting'] })), expect((e) => e.type === 'task.waiting'), 'one type');
    t.same(seqs(log.read({ types: ['task.waiting', 'task.finished'] })), expect((e) => e.type !== 'task.created'), 'several types');
    t.same(seqs(log.read({ types: [] })), seqs(all), 'empty types list = no type filter');
    t.same(seqs(log.read({ after: 15 })), [16, 17, 18, 19, 20, 21], 'after');
    t.same(log.read({ after: 21 }), [], 'after the last seq');
    t.same(seqs(log.read({ since: at(18) })), [19, 20, 21], 'since is inclusive');
    t.same(seqs(log.read({ since: '2024-05-01T14:00:18+02:00' })), [19, 20, 21], 'since in another offset means the same instant');
    t.same(seqs(log.read({ limit: 3 })), [1, 2, 3], 'limit keeps the oldest');
    t.same(seqs(log.read({ limit: 3, descending: true })), [21, 20, 19], 'limit + descending keeps the newest');
    t.same(seqs(log.read({ descending: true })), seqs(all).reverse(), 'descending');
    t.same(log.read({ limit: 0 }), [], 'limit 0');
    t.same(
      seqs(log.read({ streamPrefix: 'task:', types: ['task.created', 'task.finished'], after: 2, since: at(3), limit: 2, descending: true })),
      expect((e) => e.stream.startsWith('task:') && e.type !== 'task.waiting' && e.seq > 2 && e.at >= at(3)).reverse().slice(0, 2),
      'all fields at once',
    );
    t.same(seqs(log.read({ stream: 'task:1', after: 1, limit: 1 })), expect((e) => e.stream === 'task:1' && e.seq > 1).slice(0, 1), 'stream paging');
  });

  await t.test(`${name}: bad queries are rejected clearly`, async (t) => {
    const log = make(t.testdir());
    t.teardown(() => log.close());
    log.append([ev('a:1', 'a.done')], AT);
    throwsCode(t, () => log.read({ limit: -1 }), 'invalid-query', 'negative limit', /limit/);
    throwsCode(t, () => log.read({ limit: 1.5 }), 'invalid-query', 'fractional limit');
    throwsCode(t, () => log.read({ after: 'x' as unknown as number }), 'invalid-query', 'string after', /after/);
    throwsCode(t, () => log.read({ since: 'yesterday' }), 'invalid-query', 'unparseable since', /since.*yesterday/);
    throwsCode(t, () => log.read({ types: 'a.done' as unknown as string[] }), 'invalid-query', 'types not an array', /types/);
    throwsCode(t, () => log.read({ stream: 5 as unknown as string }), 'invalid-query', 'numeric stream');
  });

  await t.test(`${name}: an empty batch commits nothing`, async (t) => {
    const log = make(t.testdir());
    t.teardown(() => log.close());
    log.append([ev('a:1', 'a.done')], AT);
    t.same(log.append([], at(1)), []);
    t.equal(log.lastSeq(), 1);
    t.same(log.append([ev('a:1', 'a.done')], at(2)).map((e) => e.seq), [2], 'no seq was used up');
  });

  await t.test(`${name}: data and optional fields round-trip exactly`, async (t) => {
    const log = make(t.testdir());
    t.teardown(() => log.close());
    const data = {
      text: 'héllo 世界 🎉 \u0000 nul, "quotes", \\ back\nslash, \u202e rtl, lone-ish \ud83d\ude00',
      nested: { a: [1, 2.5, -3, 0, 1e21, 9007199254740991, { deep: [[[]]] }], b: {}, c: [] },
      flags: [true, false, null],
      '': 'empty key',
      'ключ': 'юникод key',
      big: 'x'.repeat(100_000),
    };
    const [e] = log.append([{ stream: 'chat:ü', type: 'chat.message_added', data, causation: 7, correlation: 'corr-1', by: 'user:anna' }], AT);
    const got = log.read()[0]!;
    t.same(got, e);
    t.strictSame(got.data, data, 'data deep-equal, types preserved');
    t.equal(got.causation, 7);
    t.equal(got.correlation, 'corr-1');
    t.equal(got.by, 'user:anna');
    data.nested.a.push(99);
    t.notOk((log.read()[0]!.data.nested as { a: unknown[] }).a.includes(99), 'mutating the input after append changes nothing');
    (got.data as { text: string }).text = 'changed';
    t.equal((log.read()[0]!.data as { text: string }).text, data.text, 'mutating a read result changes nothing');
    const [plain] = log.append([ev('chat:ü', 'chat.read')], AT);
    t.notOk('causation' in plain! || 'correlation' in plain! || 'by' in plain!, 'absent optionals stay absent');
  });

  await t.test(`${name}: a bad event anywhere in a batch rejects the whole batch`, async (t) => {
    const log = make(t.testdir());
    t.teardown(() => log.close());
    log.append([ev('a:1', 'a.done', { ok: 1 })], AT);
    const before = log.read();
    const good = ev('a:1', 'a.done');
    const bad: [string, unknown, ErrorCode, RegExp?][] = [
      ['type not dot-named', ev('a:1', 'Done'), 'invalid-event', /#1.*type/],
      ['empty stream', ev('', 'a.done'), 'invalid-event', /stream/],
      ['stream over 200 chars', ev('s'.repeat(201), 'a.done'), 'invalid-event'],
      ['data is an array', { stream: 'a:1', type: 'a.done', data: [1] }, 'invalid-event', /data/],
      ['data missing', { stream: 'a:1', type: 'a.done' }, 'invalid-event', /data/],
      ['null event', null, 'invalid-event'],
      ['undefined in data', ev('a:1', 'a.done', { x: { y: undefined } }), 'invalid-event', /data\.x\.y/],
      ['NaN in data', ev('a:1', 'a.done', { n: Number.NaN }), 'invalid-event', /data\.n.*NaN/],
      ['Date in data', ev('a:1', 'a.done', { when: new Date() }), 'invalid-event', /data\.when.*Date/],
      ['function in data', ev('a:1', 'a.done', { f: () => 1 }), 'invalid-event', /data\.f/],
      ['bigint in data', ev('a:1', 'a.done', { b: 1n }), 'invalid-event', /bigint/],
      ['causation not a seq', { ...ev('a:1', 'a.done'), causation: 1.5 }, 'invalid-event', /causation/],
      ['correlation not a string', { ...ev('a:1', 'a.done'), correlation: 5 }, 'invalid-event', /correlation/],
      ['oversized data', ev('a:1', 'a.done', { blob: 'x'.repeat(MAX_EVENT_DATA_BYTES) }), 'event-too-large', /limit/],
    ];
    for (const [what, e, code, match] of bad) {
      throwsCode(t, () => log.append([good, e as AnyNewEvent, good], at(1)), code, what, match);
    }
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    throwsCode(t, () => log.append([ev('a:1', 'a.done', circular)], at(1)), 'invalid-event', 'circular data', /circular/);
    throwsCode(t, () => log.append([good], 'yesterday'), 'invalid-event', 'at not ISO', /at must be/);
    throwsCode(t, () => log.append([good], '2024-05-01T12:00:00+02:00'), 'invalid-event', 'at not UTC');
    throwsCode(t, () => log.append('nope' as unknown as AnyNewEvent[], AT), 'invalid-event', 'batch not an array');
    t.same(log.read(), before, 'the log is unchanged');
    t.equal(log.lastSeq(), 1);
    t.same(log.append([good], at(2)).map((e) => e.seq), [2], 'no seq was used up by the failures');
  });

  await t.test(`${name}: 20 interleaved producers lose nothing and keep their order`, async (t) => {
    const log = make(t.testdir());
    t.teardown(() => log.close());
    const returned: AnyEnvelope[] = [];
    const producer = async (p: number) => {
      for (let b = 0; b < 200; b++) {
        // Yields so the producers interleave; the test awaits them all, not a number of turns.
        await new Promise<void>((r) => setImmediate(r));
        const size = 1 + ((p + b) % 3);
        const batch = Array.from({ length: size }, (_, i) => ev(`p:${p}`, 'load.tested', { p, b, i }));
        returned.push(...log.append(batch, at(b)));
      }
    };
    await Promise.all(Array.from({ length: 20 }, (_, p) => producer(p)));
    const all = log.read();
    const expected = Array.from({ length: 20 }, (_, p) => Array.from({ length: 200 }, (_, b) => 1 + ((p + b) % 3)).reduce((x, y) => x + y, 0)).reduce((x, y) => x + y, 0);
    t.equal(all.length, expected, 'every event is there');
    t.ok(all.every((e, i) => e.seq === i + 1), 'seqs are 1..N without gaps');
    t.same(all, [...returned].sort((x, y) => x.seq - y.seq), 'the log holds what append returned');
    let ordered = true;
    for (let p = 0; p < 20; p++) {
      const mine = log.read({ stream: `p:${p}` }).map((e) => (e.data.b as number) * 10 + (e.data.i as number));
      if (mine.some((v, i) => i > 0 && v <= mine[i - 1]!)) ordered = false;
    }
    t.ok(ordered, "each producer's events are in the order it appended them");
    // Batches stay contiguous: interleaving happens between batches, never inside one.
    let contiguous = true;
    for (let i = 1; i < all.length; i++) {
      const d = all[i]!.data;
      if ((d.i as number) > 0) {
        const prev = all[i - 1]!.data;
        if (prev.p !== d.p || prev.b !== d.b || (prev.i as number) !== (d.i as number) - 1) contiguous = false;
      }
    }
    t.ok(contiguous, 'each batch occupies consecutive seqs');
  });

  await t.test(`${name}: a stream's version is the seq of its last event, 0 before any`, async (t) => {
    const log = make(t.testdir());
    t.teardown(() => log.close());
    t.equal(log.version('task:1'), 0, 'no events yet');
    log.append([ev('task:1', 'task.created'), ev('task:2', 'task.created'), ev('task:1', 'task.waiting')], AT);
    t.equal(log.version('task:1'), 3);
    t.equal(log.version('task:2'), 2);
    t.equal(log.version('task:'), 0, 'a prefix is not a stream');
    t.equal(log.version('TASK:1'), 0, 'stream names are case-sensitive');
  });

  await t.test(`${name}: an append that expects the current version commits; a stale one conflicts and commits nothing`, async (t) => {
    const log = make(t.testdir());
    t.teardown(() => log.close());
    const [created] = log.append([ev('task:1', 'task.created')], AT, new Map([['task:1', 0]]));
    t.equal(created!.seq, 1, 'expecting 0 creates the stream');
    log.append([ev('other:1', 'other.noise')], at(1));
    const [next] = log.append([ev('task:1', 'task.waiting')], at(2), new Map([['task:1', 1]]));
    t.equal(next!.seq, 3, 'writes to other streams do not move this stream');
    const before = log.read();
    throwsCode(t, () => log.append([ev('task:1', 'task.finished')], at(3), new Map([['task:1', 1]])), 'version-conflict', 'stale version', /task:1 is at version 3, not 1/);
    throwsCode(t, () => log.append([ev('task:9', 'task.created')], at(3), new Map([['task:9', 4]])), 'version-conflict', 'expecting events on an empty stream', /task:9 is at version 0, not 4/);
    throwsCode(t, () => log.append([ev('task:1', 'task.created')], at(3), new Map([['task:1', 0]])), 'version-conflict', 'creating a stream that exists');
    try {
      log.append([ev('task:1', 'task.finished')], at(3), new Map([['task:1', 2]]));
    } catch (err) {
      t.same((err as { details?: unknown }).details, { stream: 'task:1', expected: 2, actual: 3 }, 'the error names stream, expected and actual');
    }
    t.same(log.read(), before, 'conflicts change nothing');
    t.same(log.append([ev('task:1', 'task.finished')], at(4)).map((e) => e.seq), [4], 'an append without expectation still works, and no seq was used up');
  });

  await t.test(`${name}: a batch over several streams commits only when every expectation holds`, async (t) => {
    const log = make(t.testdir());
    t.teardown(() => log.close());
    log.append([ev('a:1', 'a.made'), ev('b:1', 'b.made')], AT);
    const before = log.read();
    const batch = [ev('a:1', 'a.moved'), ev('c:1', 'c.noted'), ev('b:1', 'b.moved'), ev('a:1', 'a.moved')];
    throwsCode(t, () => log.append(batch, at(1), new Map([['a:1', 1], ['b:1', 1]])), 'version-conflict', 'one stale stream among good ones', /b:1 is at version 2, not 1/);
    t.same(log.read(), before, 'none of the batch was committed, not even the streams whose expectation held');
    const ok = log.append(batch, at(2), new Map([['a:1', 1], ['b:1', 2], ['c:1', 0]]));
    t.same(ok.map((e) => e.seq), [3, 4, 5, 6], 'every expectation holds: the whole batch commits');
    t.equal(log.version('a:1'), 6, 'several events to one stream: the version is the last of them');
    t.same(log.append([], at(3), new Map([['a:1', 6]])), [], 'an empty batch whose expectation holds commits nothing');
    throwsCode(t, () => log.append([], at(3), new Map([['a:1', 5]])), 'version-conflict', 'an empty batch still checks its expectation');
  });

  await t.test(`${name}: malformed expectations are refused before anything is written`, async (t) => {
    const log = make(t.testdir());
    t.teardown(() => log.close());
    log.append([ev('a:1', 'a.made')], AT);
    const good = [ev('a:1', 'a.moved')];
    const bad: [string, unknown, RegExp][] = [
      ['not a Map', { 'a:1': 1 }, /Map/],
      ['negative version', new Map([['a:1', -1]]), /a:1.*-1/],
      ['fractional version', new Map([['a:1', 1.5]]), /1\.5/],
      ['string version', new Map([['a:1', '1']]), /"1"/],
      ['empty stream name', new Map([['', 0]]), /non-empty/],
      ['non-string stream', new Map([[7, 0]]), /stream/],
    ];
    for (const [what, expected, match] of bad) {
      throwsCode(t, () => log.append(good, at(1), expected as Map<string, number>), 'invalid-event', what, match);
    }
    t.equal(log.lastSeq(), 1, 'nothing was committed');
  });

  await t.test(`${name}: concurrent writers that decided on the same version: exactly one wins per round`, async (t) => {
    const log = make(t.testdir());
    t.teardown(() => log.close());
    // Each writer reads the version, yields (as a real decider awaiting I/O would), then appends
    // expecting what it read; a loser rereads and retries. Bounded in rounds.
    const writers = 8;
    const perWriter = 5;
    const conflicts: number[] = Array(writers).fill(0);
    const writer = async (w: number) => {
      for (let done = 0, rounds = 0; done < perWriter; rounds++) {
        if (rounds > writers * perWriter * 4) throw new Error(`writer ${w} starved`);
        const seen = log.version('counter:1');
        await new Promise<void>((r) => setImmediate(r));
        try {
          log.append([ev('counter:1', 'counter.bumped', { w, after: seen })], at(done), new Map([['counter:1', seen]]));
          done++;
        } catch (err) {
          if (!isSvcError(err, 'version-conflict')) throw err;
          conflicts[w]!++;
        }
      }
    };
    await Promise.all(Array.from({ length: writers }, (_, w) => writer(w)));
    const events = log.read({ stream: 'counter:1' });
    t.equal(events.length, writers * perWriter, 'every writer got all its events in');
    t.ok(conflicts.reduce((a, b) => a + b, 0) > 0, 'the writers did collide');
    let prev = 0;
    let chained = true;
    for (const e of events) {
      if (e.data.after !== prev) chained = false;
      prev = e.seq;
    }
    t.ok(chained, 'each committed event was decided on the version right before it: no lost update');
  });

  await t.test(`${name}: appendRaw imports envelopes keeping seq and at`, async (t) => {
    const log = make(t.testdir()) as WithRaw;
    t.teardown(() => log.close());
    if (!log.appendRaw) {
      t.comment('no appendRaw: import not supported by this implementation');
      return;
    }
    const golden: AnyEnvelope[] = [
      { seq: 3, at: '2023-01-01T00:00:00.000Z', stream: 'task:1', type: 'task.created', data: { a: 1 } },
      { seq: 7, at: '2023-01-01T00:00:01.000Z', stream: 'task:1', type: 'task.finished', data: {}, causation: 3, by: 'agent:x' },
    ];
    t.equal(log.appendRaw(golden), 2);
    t.same(log.read(), golden);
    t.equal(log.lastSeq(), 7);
    t.same(log.append([ev('task:2', 'task.created')], AT).map((e) => e.seq), [8], 'append continues after the imported seqs');
    throwsCode(t, () => log.appendRaw!([{ ...golden[0]!, seq: 9 }, { ...golden[0]!, seq: 9 }]), 'out-of-order', 'duplicate seq', /seq 9 is not after 9/);
    throwsCode(t, () => log.appendRaw!([{ ...golden[0]!, seq: 5 }]), 'out-of-order', 'seq below the last', /not after 8/);
    throwsCode(t, () => log.appendRaw!([{ ...golden[0]!, seq: 10, at: 'soon' }]), 'invalid-event', 'bad at');
    throwsCode(t, () => log.appendRaw!([{ ...golden[0]!, seq: 0 }]), 'invalid-event', 'seq 0');
    t.equal(log.lastSeq(), 8, 'failed imports change nothing');
    t.equal(log.read().length, 3);
  });

  await t.test(`${name}: a closed log refuses work`, async (t) => {
    const log = make(t.testdir());
    log.close();
    log.close();
    throwsCode(t, () => log.append([ev('a:1', 'a.done')], AT), 'log-closed', 'append');
    throwsCode(t, () => log.read(), 'log-closed', 'read');
    throwsCode(t, () => log.lastSeq(), 'log-closed', 'lastSeq');
  });

  if (reopen) {
    await t.test(`${name}: reopening after close keeps everything`, async (t) => {
      const dir = t.testdir();
      const log = make(dir);
      const first = [...log.append([ev('a:1', 'a.done', { x: 'ü' }), ev('b:1', 'b.done')], AT), ...log.append([ev('a:1', 'a.redone')], at(1))];
      log.close();
      const again = reopen(dir);
      t.teardown(() => again.close());
      t.same(again.read(), first);
      t.equal(again.lastSeq(), 3);
      t.same(again.append([ev('a:1', 'a.done')], at(2)).map((e) => e.seq), [4]);
    });
  }
}
