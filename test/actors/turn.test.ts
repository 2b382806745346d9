import t from 'tap';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SimulatedClock, fromCallback, toPromise, type EventObject } from 'xstate';
import { ActorHost, claudeAdapter, cliTurnLogic, codexAdapter, geminiAdapter, type ProviderAdapter, type StreamEvent } from '../../actors/index.js';
import { Bus } from '../../bus/index.js';
import { CHECKPOINT_MAX_CHARS, partialText, turnMachine, type CliAttempt, type TurnEvent, type TurnInput } from '../../machines/index.js';
import { MemoryEventLog } from '../../store/index.js';
import { anyEvent } from '../fixtures/any-event.js';
import { until } from '../fixtures/until.js';

const BIN = fileURLToPath(new URL('../fixtures/bin', import.meta.url));

const baseInput = (over: Partial<TurnInput> = {}): TurnInput => ({
  turn_id: 't1',
  request_id: 'r1',
  agent: 'main',
  session_key: 'api:1',
  kind: 'foreground',
  prompt: 'hello',
  provider: 'claude',
  model: 'opus',
  resumeSessionId: null,
  timeoutMs: 10_000,
  extendOnActivity: true,
  extensionMs: 1_000,
  maxExtensions: 2,
  ...over,
});

/** A scripted stand-in for the CLI process: the test says what it prints and when it exits. */
function scriptedCli() {
  const script = { send: (_e: TurnEvent) => undefined as void, killed: 0, attempts: [] as CliAttempt[] };
  const logic = fromCallback<EventObject, CliAttempt>(({ input, sendBack, receive }) => {
    script.attempts.push(input);
    script.send = (e) => sendBack(e);
    receive((e) => {
      if (e.type === 'kill') {
        script.killed++;
        queueMicrotask(() => sendBack({ type: 'cli.exited', exit: { code: null, signal: 'SIGTERM', killedByUs: true, errorText: '', spawnError: null } }));
      }
    });
    queueMicrotask(() => sendBack({ type: 'cli.spawned', pid: 4242, startTime: 777, bootId: 'boot-a' }));
  });
  return { script, logic };
}

/** A turn on the scripted CLI under a simulated clock, started and waiting for what the CLI prints. */
async function scriptedTurn(stream: string) {
  const log = new MemoryEventLog();
  const bus = new Bus({ log });
  const clock = new SimulatedClock();
  const { script, logic } = scriptedCli();
  const actor = new ActorHost(bus).spawn(stream, turnMachine.provide({ actors: { cli: logic } }), { stream, input: baseInput(), clock });
  const done = toPromise(actor);
  await Promise.resolve();
  return { log, bus, clock, script, actor, done };
}

const text = (s: string): TurnEvent => ({ type: 'cli.events', events: [{ kind: 'text', text: s }] });
const exit0: TurnEvent = { type: 'cli.exited', exit: { code: 0, signal: null, killedByUs: false, errorText: '', spawnError: null } };

await t.test('deadline: extended while output keeps coming, up to max_extensions, then timed out', async (t) => {
  const { log, bus, clock, script, done } = await scriptedTurn('turn:t1');
  script.send(text('a'));
  clock.increment(9_500); // output 9.5 s in: recent at the 10 s deadline
  script.send(text('b'));
  clock.increment(600); // deadline passes with recent output: extension 1
  script.send(text('c'));
  clock.increment(1_000); // extension 2 (output 0.9 s ago)
  script.send(text('d'));
  clock.increment(1_000); // max reached: killed
  const r = await done;
  t.equal(r.status, 'timed_out');
  t.equal(r.text, 'abcd', 'what streamed before the kill is kept');
  t.equal(script.killed, 1);
  await bus.publish(anyEvent({ stream: 'x', type: 'x.flush', data: {} }));
  const facts = log.read({ stream: 'turn:t1' });
  t.same(
    facts.map((e) => e.type),
    ['turn.started', 'turn.spawned', 'turn.progressed', 'turn.extended', 'turn.progressed', 'turn.extended', 'turn.timed_out'],
  );
  t.same(facts.filter((e) => e.type === 'turn.progressed').map((e) => e.data.text), ['a', 'bc'], 'each checkpoint a second after the text it saves');
  bus.close();
});

await t.test('checkpoints: streamed text reaches the log a second late at most, sooner at a size cap or before a tool, never per delta', async (t) => {
  const { log, bus, clock, script, done } = await scriptedTurn('turn:cp');
  const saved = async () => {
    await bus.publish(anyEvent({ stream: 'x', type: 'x.flush', data: {} }));
    return log.read({ stream: 'turn:cp', types: ['turn.progressed'] }).map((e) => e.data.text);
  };
  for (let i = 0; i < 50; i++) script.send(text(String(i % 10)));
  t.same(await saved(), [], 'fifty deltas, no write yet');
  clock.increment(999);
  t.same(await saved(), []);
  clock.increment(1);
  t.same(await saved(), ['01234567890123456789012345678901234567890123456789'], 'one checkpoint holds them all');
  script.send(text('before the tool '));
  script.send({ type: 'cli.events', events: [{ kind: 'tool', name: 'Bash' }, { kind: 'text', text: 'after' }] });
  t.same((await saved()).slice(1), ['before the tool after'], 'a tool call after unsaved text saves at once');
  script.send({ type: 'cli.events', events: [{ kind: 'tool', name: 'Read' }] });
  t.equal((await saved()).length, 2, 'a tool with nothing unsaved writes nothing');
  const big = 'x'.repeat(CHECKPOINT_MAX_CHARS);
  script.send(text(big));
  t.same((await saved()).slice(2), [big], 'past the size cap: at once');
  clock.increment(5_000);
  t.equal((await saved()).length, 3, 'no timer left behind');
  script.send(text('tail'));
  script.send(exit0);
  const r = await done;
  t.equal(r.text, `01234567890123456789012345678901234567890123456789before the tool after${big}tail`, 'the answer is whole; the log has it in turn.completed');
  const spawned = log.read({ stream: 'turn:cp', types: ['turn.started', 'turn.spawned'] });
  t.equal(spawned[0]!.data.prompt, 'hello', 'the question is kept for /retry');
  t.same([spawned[1]!.data.pid, spawned[1]!.data.start_time, spawned[1]!.data.boot_id], [4242, 777, 'boot-a'], 'the group is named for recovery');
  bus.close();
});

await t.test('checkpoints restart with the attempt: a SIGKILL recovery does not mix the old answer in', async (t) => {
  const { log, bus, clock, script, done } = await scriptedTurn('turn:rc');
  script.send(text('first try'));
  clock.increment(1_000);
  script.send({ type: 'cli.exited', exit: { code: null, signal: 'SIGKILL', killedByUs: false, errorText: '', spawnError: null } });
  await Promise.resolve();
  script.send(text('second'));
  clock.increment(1_000);
  script.send(exit0);
  t.equal((await done).text, 'second');
  await bus.publish(anyEvent({ stream: 'x', type: 'x.flush', data: {} }));
  const events = log.read({ stream: 'turn:rc' });
  t.same(events.filter((e) => e.type === 'turn.progressed').map((e) => e.data.text), ['first try', 'second']);
  t.equal(partialText(events), 'second', 'recovery folds only the current attempt');
  bus.close();
});

await t.test('deadline: no output near the deadline means no extension', async (t) => {
  const { bus, clock, script, done } = await scriptedTurn('turn:t2');
  script.send(text('early'));
  clock.increment(5_000);
  clock.increment(5_000);
  t.equal((await done).status, 'timed_out');
  bus.close();
});

await t.test('abort while streaming kills, keeps the partial text; a second abort is harmless', async (t) => {
  const { log, bus, script, actor, done } = await scriptedTurn('turn:t3');
  script.send(text('partial'));
  actor.send({ type: 'abort', reason: 'user' });
  actor.send({ type: 'abort', reason: 'user' });
  const r = await done;
  t.same([r.status, r.text, r.reason, script.killed], ['aborted', 'partial', 'aborted', 1]);
  await bus.publish(anyEvent({ stream: 'x', type: 'x.flush', data: {} }));
  t.equal(log.read({ stream: 'turn:t3', types: ['turn.aborted'] })[0]!.data.cause, 'user', 'who stopped it is recorded');
  bus.close();
});

await t.test('exit rules: text without result completes; nothing retries without streaming; SIGKILL recovers once', async (t) => {
  const run = async (steps: (s: { send(e: TurnEvent): void }) => Promise<void> | void, input = baseInput()) => {
    const bus = new Bus({ log: new MemoryEventLog() });
    const { script, logic } = scriptedCli();
    const actor = new ActorHost(bus).spawn('turn', turnMachine.provide({ actors: { cli: logic } }), { stream: 'turn:x', input, clock: new SimulatedClock() });
    const done = toPromise(actor);
    await Promise.resolve();
    await steps(script);
    const r = await done;
    bus.close();
    return { r, attempts: script.attempts };
  };
  let { r, attempts } = await run((s) => {
    s.send(text('hello'));
    s.send(exit0);
  });
  t.same([r.status, r.text, attempts.length], ['completed', 'hello', 1]);

  ({ r, attempts } = await run(async (s) => {
    s.send(exit0);
    await Promise.resolve();
    s.send({ type: 'cli.events', events: [{ kind: 'result', sessionId: 's9', text: 'one-shot answer', isError: false, usage: { input_tokens: 1, output_tokens: 2 } }] });
    s.send(exit0);
  }));
  t.same([r.status, r.text, r.stream_fallback], ['completed', 'one-shot answer', true]);
  t.same(attempts.map((a) => a.streaming), [true, false], 'the retry runs without streaming');

  ({ r, attempts } = await run(
    async (s) => {
      s.send(text('lost'));
      s.send({ type: 'cli.exited', exit: { code: null, signal: 'SIGKILL', killedByUs: false, errorText: '', spawnError: null } });
      await Promise.resolve();
      s.send(text('again'));
      s.send(exit0);
    },
    baseInput({ resumeSessionId: 'old-session' }),
  ));
  t.same([r.status, r.text, r.session_reset], ['completed', 'again', true]);
  t.same(attempts.map((a) => a.resumeSessionId), ['old-session', null], 'the retry starts a fresh session');

  ({ r } = await run((s) => {
    s.send({ type: 'cli.exited', exit: { code: 3, signal: null, killedByUs: false, errorText: 'bad flag', spawnError: null } });
  }));
  t.same([r.status, r.reason, r.error], ['failed', 'exit-code', 'bad flag']);
});

/** The real thing: the fake CLI in its own process group, through the adapter and the line parser. */
async function runReal(t: { teardown(f: () => void): void }, adapter: ProviderAdapter, env: Record<string, string>, over: Partial<TurnInput> = {}, prompt = 'hello there') {
  const log = new MemoryEventLog();
  const bus = new Bus({ log });
  const chunks: StreamEvent[] = [];
  const tempDir = mkdtempSync(join(tmpdir(), 'svc-turn-'));
  const cli = cliTurnLogic({
    adapter,
    request: { provider: adapter.id, prompt, permissionMode: 'bypassPermissions', additionalDirectories: [], cliParameters: [], cwd: tempDir },
    env: { PATH: `${BIN}:${process.env.PATH}`, HOME: tempDir, ...env },
    tempDir,
    graceMs: 300,
    live: (events) => void chunks.push(...events),
  });
  const machine = turnMachine.provide({ actors: { cli }, actions: { forward: (_, p: { events: StreamEvent[] }) => void chunks.push(...p.events) } });
  const actor = new ActorHost(bus).spawn('turn', machine, { stream: 'turn:real', input: baseInput({ provider: adapter.id, ...over }) });
  t.teardown(() => bus.close());
  return { actor, done: toPromise(actor), chunks, log, bus, tempDir };
}

await t.test('real CLIs stream text, tools and status in order and record the turn', async (t) => {
  for (const adapter of [claudeAdapter, codexAdapter, geminiAdapter]) {
    // Codex reports each agent message whole, so it gets one; the others stream two chunks.
    const chunked = adapter.id === 'codex' ? '1' : '2';
    const { done, chunks, log, bus } = await runReal(t, adapter, { FAKE_CLI_REPLY: 'Hello world', FAKE_CLI_CHUNKS: chunked, FAKE_CLI_TOOLS: 'Read' });
    const r = await done;
    t.equal(r.status, 'completed', adapter.id);
    t.equal(r.text, 'Hello world', adapter.id);
    t.equal(r.session_id, `fake-${adapter.id}-session`, adapter.id);
    t.ok(chunks.some((c) => c.kind === 'tool'), `${adapter.id}: tool activity forwarded`);
    const texts = chunks.filter((c) => c.kind === 'text').map((c) => (c as { text: string }).text);
    t.equal(texts.join(''), 'Hello world', `${adapter.id}: chunks in order`);
    await bus.publish(anyEvent({ stream: 'x', type: 'x.flush', data: {} }));
    const types = log.read({ stream: 'turn:real' }).map((e) => e.type);
    t.same(types, ['turn.started', 'turn.spawned', 'turn.completed'], adapter.id);
  }
});

await t.test('abort mid-stream kills the whole process tree, including a grandchild that ignores SIGTERM', async (t) => {
  const pidFile = join(t.testdir(), 'grandchild.pid');
  const { actor, done } = await runReal(t, claudeAdapter, { FAKE_CLI_HANG: '1', FAKE_CLI_IGNORE_TERM: '1', FAKE_CLI_CHILD_PID_FILE: pidFile });
  await until('the grandchild to write its pid', () => existsSync(pidFile), 10_000);
  const grandchild = Number(readFileSync(pidFile, 'utf8'));
  actor.send({ type: 'abort', reason: 'user' });
  const r = await done;
  t.equal(r.status, 'aborted');
  const alive = (() => {
    try {
      process.kill(grandchild, 0);
      return !/\bZ\b/.test(readFileSync(`/proc/${grandchild}/stat`, 'utf8').split(' ')[2] ?? '');
    } catch {
      return false;
    }
  })();
  t.notOk(alive, 'the grandchild is gone');
});

await t.test('an external SIGKILL resets the session and retries once with status recovering', async (t) => {
  const { actor, done, chunks } = await runReal(t, claudeAdapter, { FAKE_CLI_DELAY_MS: '150', FAKE_CLI_CHUNKS: '3', FAKE_CLI_REPLY: 'abcdef' }, { resumeSessionId: 'prev' });
  await until('the CLI to be spawned', () => actor.getSnapshot().context.pid !== null, 10_000);
  process.kill(actor.getSnapshot().context.pid!, 'SIGKILL');
  const r = await done;
  t.equal(r.status, 'completed');
  t.equal(r.text, 'abcdef');
  t.equal(r.session_reset, true);
  t.ok(chunks.some((c) => c.kind === 'status' && c.status === 'recovering'));
});

await t.test('stream fallback, non-zero exit, missing binary, malformed and huge lines', async (t) => {
  let { done } = await runReal(t, claudeAdapter, { FAKE_CLI_STREAM_SILENT: '1', FAKE_CLI_REPLY: 'from one-shot' });
  let r = await done;
  t.same([r.status, r.text, r.stream_fallback], ['completed', 'from one-shot', true]);

  ({ done } = await runReal(t, claudeAdapter, { FAKE_CLI_EXIT: '2', FAKE_CLI_STDERR: 'Invalid API key' }));
  r = await done;
  t.same([r.status, r.reason], ['failed', 'exit-code']);
  t.match(r.error, /Invalid API key/);

  ({ done } = await runReal(t, claudeAdapter, { PATH: '/nonexistent' }));
  r = await done;
  t.same([r.status, r.reason], ['failed', 'spawn-failed']);

  ({ done } = await runReal(t, claudeAdapter, { FAKE_CLI_MALFORMED: '1', FAKE_CLI_HUGE: '1', FAKE_CLI_REPLY: 'still fine' }));
  r = await done;
  t.same([r.status, r.text], ['completed', 'still fine'], 'bad lines are reported, never fatal');
});
