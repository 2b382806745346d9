// The edit-stream decider (machines/edit-stream.logic.ts): given what happened to a streamed answer,
// when asked at some moment, then the one thing to do. Time is given as ms, so every rule is a row.
import t from 'tap';
import { SimulatedClock } from 'xstate';
import { startEditStream } from '../../actors/index.js';
import { decideEditStream, evolveEditStream, initialEditStream, startedEditStream, type EditStreamEvent, type EditStreamRules, type EditStreamState } from '../../machines/index.js';

/** `started` is not an event of the decider but the driver's own step (startedEditStream); the history needs both. */
type Step = EditStreamEvent | { type: 'started'; at: number };

const RULES: EditStreamRules = { enabled: true, min_chars: 10, idle_ms: 500, edit_interval_seconds: 1, max_edit_failures: 3, sentence_break: false };

function given(steps: Step[], over: Partial<EditStreamRules> = {}) {
  const rules = { ...RULES, ...over };
  const state = steps.reduce<EditStreamState>((s, e) => (e.type === 'started' ? startedEditStream(s) : evolveEditStream(s, e, rules)), initialEditStream(rules));
  return { state, when: (now: number) => decideEditStream(state, now, rules) };
}

const text = (t: string, at: number): Step => ({ type: 'text', text: t, at });
const started = (at: number): Step => ({ type: 'started', at });
const sent = (t: string, at: number, ok = true): Step => ({ type: 'sent', ok, at, text: t });
const edited = (t: string, at: number, ok = true): Step => ({ type: 'edited', ok, at, text: t });

const LONG = 'Ten or more characters';
/** An answer whose first preview is showing, its send back at 0. */
const previewed = (more: Step[] = []) => [text(LONG, 0), started(0), sent(LONG, 0), ...more];

await t.test('nothing is sent until min_chars are there or idle_ms passed since the last delta', async (t) => {
  t.same(given([text('short', 0)]).when(100), { kind: 'wait', until: 500 }, 'too short, still coming: wait for a pause');
  t.same(given([text('short', 0)]).when(500), { kind: 'send', text: 'short' }, 'a pause: the short text goes out');
  t.same(given([text('sh', 0), text('short', 400)]).when(600), { kind: 'wait', until: 900 }, 'the pause counts from the last delta');
  t.same(given([text(LONG, 0)]).when(0), { kind: 'send', text: LONG }, 'min_chars reached: at once');
  t.same(given([text('   ', 0)]).when(10_000), { kind: 'none' }, 'only whitespace is never sent');
  t.same(given([]).when(10_000), { kind: 'none' }, 'nothing said yet');
});

await t.test('the first request is a send, every later one an edit of that message', async (t) => {
  t.match(given([text(LONG, 0)], { min_chars: 0 }).when(0), { kind: 'send' });
  t.same(given(previewed([text(`${LONG} and more`, 100)])).when(1000), { kind: 'edit', text: `${LONG} and more` });
});

await t.test('never two requests in flight: while one runs, nothing, however much time or text passes', async (t) => {
  t.same(given([text(LONG, 0), started(0), text(`${LONG}!`, 10)]).when(60_000), { kind: 'none' }, 'the send has not come back');
  t.same(given(previewed([text(`${LONG} more`, 100), started(1000), text(`${LONG} more still`, 1100)])).when(60_000), { kind: 'none' }, 'the edit has not come back');
  t.same(given(previewed([text(`${LONG} more`, 100), started(1000), edited(`${LONG} more`, 1200), text(`${LONG} more still`, 1300)])).when(2200), {
    kind: 'edit',
    text: `${LONG} more still`,
  }, 'back: the latest text goes next');
});

await t.test('an edit starts no sooner than edit_interval_seconds after the previous request came back', async (t) => {
  const g = given(previewed([text(`${LONG} more`, 100)]));
  t.same(g.when(100), { kind: 'wait', until: 1000 });
  t.same(g.when(999), { kind: 'wait', until: 1000 });
  t.same(g.when(1000), { kind: 'edit', text: `${LONG} more` });
  // Paced from when the send came back: one the throttler held in its queue cannot reach Telegram right before the next.
  t.same(given([text(LONG, 0), started(0), sent(LONG, 900), text(`${LONG} more`, 950)]).when(1000), { kind: 'wait', until: 1900 });
  const fractional = given(previewed([text(`${LONG} more`, 100)]), { edit_interval_seconds: 0.3 });
  t.same(fractional.when(100), { kind: 'wait', until: 300 });
});

await t.test('sentence_break: an edit waits for a sentence or line to end, but at most one interval more', async (t) => {
  const rules = { sentence_break: true, idle_ms: 5000 };
  const midSentence = given(previewed([text(`${LONG}, and then the`, 100)]), rules);
  t.same(midSentence.when(1000), { kind: 'wait', until: 2000 }, 'paced, but mid-sentence');
  t.same(midSentence.when(1999), { kind: 'wait', until: 2000 });
  t.same(midSentence.when(2000), { kind: 'edit', text: `${LONG}, and then the` }, 'one extra interval at most');
  for (const end of ['. ', '!', '?', '…', ':', ')', '."', '.»', '\n', 'line\n  ']) {
    t.same(given(previewed([text(`${LONG} more${end}`, 100)]), rules).when(1000), { kind: 'edit', text: `${LONG} more${end}` }, `ends with ${JSON.stringify(end)}`);
  }
  const paused = given(previewed([text(`${LONG}, and then the`, 100)]), { sentence_break: true, idle_ms: 300 });
  t.same(paused.when(1000), { kind: 'edit', text: `${LONG}, and then the` }, 'a pause (idle_ms) also ends the wait');
  t.same(given(previewed([text(`${LONG}, and then the`, 1500)]), { sentence_break: true, idle_ms: 300 }).when(1600), { kind: 'wait', until: 1800 }, 'the pause counts from the last delta');
  t.same(given(previewed([text(`${LONG}, and then the`, 100)])).when(1000), { kind: 'edit', text: `${LONG}, and then the` }, 'off: mid-sentence is fine');
});

await t.test('the text the message shows already is never sent again', async (t) => {
  t.same(given(previewed()).when(60_000), { kind: 'none' });
  t.same(given(previewed([text(LONG, 2000)])).when(60_000), { kind: 'none' }, 'a delta that changed nothing');
  t.same(given(previewed([text(`${LONG}!`, 100), started(1000), edited(`${LONG}!`, 1100)])).when(60_000), { kind: 'none' });
});

await t.test('failed edits count; max_edit_failures in a row turns editing off; a success resets the count', async (t) => {
  const more = (n: number) => `${LONG}${'.'.repeat(n)}`;
  const fails = (from: number, n: number) => Array.from({ length: n }, (_, i) => [started(from + i * 1000), edited(more(1), from + i * 1000 + 10, false)]).flat();
  const twice = given(previewed([text(more(1), 100), ...fails(1000, 2)]));
  t.match(twice.state, { failures: 2, off: false, shown: LONG });
  t.same(twice.when(2500), { kind: 'wait', until: 3010 }, 'a failed edit is retried, paced from when it came back');
  t.same(twice.when(3010), { kind: 'edit', text: more(1) });
  const thrice = given(previewed([text(more(1), 100), ...fails(1000, 3)]));
  t.match(thrice.state, { failures: 3, off: true });
  t.same(given(previewed([text(more(1), 100), ...fails(1000, 3), text(more(2), 5000)])).when(60_000), { kind: 'none' }, 'off stays off, whatever comes');
  const reset = given(previewed([text(more(1), 100), ...fails(1000, 2), started(3000), edited(more(1), 3010), text(more(2), 3100), ...fails(4000, 2)]));
  t.match(reset.state, { failures: 2, off: false }, 'the success in between started the count again');
  t.match(given(previewed([text(more(1), 100), ...fails(1000, 1)]), { max_edit_failures: 1 }).state, { off: true });
  t.match(given(previewed([text(more(1), 100), ...fails(1000, 1)]), { max_edit_failures: 0 }).state, { off: true }, '0 gives up at the first failure too');
});

await t.test('a first send that fails turns streaming off: the final text goes out whole instead', async (t) => {
  const g = given([text(LONG, 0), started(0), sent(LONG, 50, false), text(`${LONG} more`, 100)]);
  t.match(g.state, { off: true, shown: null });
  t.same(g.when(60_000), { kind: 'none' });
});

await t.test('enabled: false never sends', async (t) => {
  const g = given([text(LONG, 0), text(`${LONG} and a sentence.`, 100)], { enabled: false });
  t.match(g.state, { off: true });
  for (const now of [0, 1000, 60_000]) t.same(g.when(now), { kind: 'none' });
});

await t.test('the driver: 100 updates within 1 s make at most ceil(1000 / (interval + latency)) + 1 requests, one at a time; finish waits for the one in flight', async (t) => {
  const clock = new SimulatedClock();
  const rules: EditStreamRules = { ...RULES, min_chars: 1, edit_interval_seconds: 0.25 };
  const LATENCY = 50;
  const requests: Array<{ kind: 'send' | 'edit'; text: string; at: number; done: number | null }> = [];
  const request = (kind: 'send' | 'edit') => (text: string) => {
    const r = { kind, text, at: clock.now(), done: null as number | null };
    requests.push(r);
    return new Promise<void>((resolve) =>
      clock.setTimeout(() => {
        r.done = clock.now();
        resolve();
      }, LATENCY),
    );
  };
  const stream = startEditStream({ send: request('send'), edit: request('edit') }, rules, { now: () => clock.now(), timers: clock });
  // Not a wait for time: the simulated clock runs timers synchronously, and the driver's reaction to a
  // settled request is a chain of promise callbacks that only the microtask queue runs.
  const settle = () => new Promise((r) => setImmediate(r));
  const say = (i: number) => `answer part ${i}`;
  for (let i = 0; i < 100; i++) {
    stream.update(say(i));
    clock.increment(10);
    await settle();
  }
  t.ok(requests.length <= Math.ceil(1000 / (250 + LATENCY)) + 1, `${requests.length} requests for 100 updates`);
  t.equal(requests[0]?.kind, 'send');
  t.ok(requests.slice(1).every((r) => r.kind === 'edit'));
  for (let i = 1; i < requests.length; i++) {
    t.ok(requests[i]!.at >= requests[i - 1]!.done!, `request ${i} started after the one before came back`);
    t.ok(requests[i]!.at - requests[i - 1]!.done! >= 250, `request ${i} paced from the one before coming back`);
  }
  clock.increment(300);
  await settle();
  const last = requests.at(-1)!;
  t.equal(last.text, say(99), 'the last request carries the last text');
  t.equal(last.done, null, 'and is still in flight');
  let finished: { shown: string | null } | null = null;
  const done = stream.finish().then((r) => (finished = r));
  await settle();
  t.equal(finished, null, 'finish waits for the request in flight');
  clock.increment(LATENCY);
  await done;
  t.same(finished, { shown: say(99) });
  const before = requests.length;
  stream.update('after finish');
  clock.increment(10_000);
  await settle();
  t.equal(requests.length, before, 'nothing is sent after finish');
});
