import t from 'tap';
import { SessionLanes } from '../../actors/index.js';

/** A run function whose calls finish only when the test says so. */
function gated() {
  const started: string[] = [];
  const gates = new Map<string, (v: string) => void>();
  const waiters: Array<() => void> = [];
  const run = (item: string, key: string) => {
    started.push(`${key}/${item}`);
    for (const w of waiters.splice(0)) w();
    return new Promise<string>((resolve) => gates.set(item, resolve));
  };
  const finish = (item: string) => gates.get(item)!(`done ${item}`);
  /** Resolves once `n` runs have started (the lane starts the next one after the previous settles). */
  const untilStarted = async (n: number) => {
    while (started.length < n) await new Promise<void>((r) => waiters.push(r));
  };
  return { run, started, finish, untilStarted };
}

await t.test('one item at a time per key, keys in parallel, in arrival order', async (t) => {
  const g = gated();
  const lanes = new SessionLanes<string, string>(g.run);
  const a1 = lanes.enqueue('a', 'a1');
  const a2 = lanes.enqueue('a', 'a2');
  void lanes.enqueue('b', 'b1');
  t.same(g.started, ['a/a1', 'b/b1']);
  t.same(g.started, ['a/a1', 'b/b1'], 'a2 waits for a1');
  g.finish('a1');
  t.equal(await a1, 'done a1');
  await g.untilStarted(3);
  t.same(g.started, ['a/a1', 'b/b1', 'a/a2']);
  g.finish('a2');
  t.equal(await a2, 'done a2');
});

await t.test('a full lane refuses with session-busy and queues nothing; other keys are unaffected', async (t) => {
  const g = gated();
  const lanes = new SessionLanes<string, string>(g.run, 2);
  void lanes.enqueue('a', 'a1');
  void lanes.enqueue('a', 'a2');
  t.throws(() => lanes.enqueue('a', 'a3'), { code: 'session-busy' });
  t.doesNotThrow(() => void lanes.enqueue('b', 'b1'));
  g.finish('a1');
  await g.untilStarted(3);
  g.finish('a2');
  t.same(g.started, ['a/a1', 'b/b1', 'a/a2'], 'the refused item never ran');
});

await t.test('drop answers only the matching waiting items; the running one goes on', async (t) => {
  const g = gated();
  const lanes = new SessionLanes<string, string>(g.run);
  const running = lanes.enqueue('a', 'x1');
  const dropped = lanes.enqueue('a', 'x2');
  const kept = lanes.enqueue('a', 'y1');
  lanes.drop((item) => item.startsWith('x'), (item) => `dropped ${item}`);
  t.equal(await dropped, 'dropped x2');
  g.finish('x1');
  t.equal(await running, 'done x1');
  await g.untilStarted(2);
  t.same(g.started, ['a/x1', 'a/y1']);
  g.finish('y1');
  t.equal(await kept, 'done y1');
});

await t.test('failAll rejects what waits and leaves the running item to finish', async (t) => {
  const g = gated();
  const lanes = new SessionLanes<string, string>(g.run);
  const running = lanes.enqueue('a', 'a1');
  const waiting = lanes.enqueue('a', 'a2');
  lanes.failAll(new Error('stopped'));
  await t.rejects(waiting, { message: 'stopped' });
  g.finish('a1');
  t.equal(await running, 'done a1');
  t.same(g.started, ['a/a1']);
});

await t.test('a run that throws rejects its item and the lane moves on', async (t) => {
  const lanes = new SessionLanes<string, string>(async (item) => {
    if (item === 'bad') throw new Error('boom');
    return item;
  });
  const bad = lanes.enqueue('a', 'bad');
  const good = lanes.enqueue('a', 'good');
  await t.rejects(bad, { message: 'boom' });
  t.equal(await good, 'good');
});
