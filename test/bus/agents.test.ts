// The agent contract on a real Bus: both sides from bus/agents.ts, a scripted service behind it.
import t from 'tap';
import { toArray, lastValueFrom } from 'rxjs';
import { Bus, MAX_MERGED_DELTA_CHARS, agentsOf, serveAgents, turnStreamOf } from '../../bus/index.js';
import { SvcError, type AgentMessage, type Principal, type TurnChunk, type TurnOutcome } from '../../schemas/index.js';
import { MemoryEventLog } from '../../store/index.js';

const WHO: Principal = { kind: 'user', id: 'ann', acting_for: null, role: 'operator', allowed_agents: [], origin: { transport: 'api', chat_id: 1, topic_id: null } };
const ASK = { agent: 'main', transport: 'api', chat_id: 1, topic_id: null, kind: 'foreground' as const };

function outcomeOf(m: AgentMessage, text: string): TurnOutcome {
  return {
    request_id: m.request_id, turn_id: 't', agent: m.agent, session_key: 'k', status: 'completed', text, is_error: false, stream_fallback: false,
    files: [], provider: null, model: null, session_id: null, usage: null, cost_usd: null, duration_ms: null, reason: null,
  };
}

function setup(t: { teardown(f: () => void): void }) {
  const bus = new Bus({ log: new MemoryEventLog() });
  t.teardown(() => bus.close());
  const received: AgentMessage[] = [];
  const release: (() => void)[] = [];
  const out = turnStreamOf(bus);
  serveAgents(bus, 'script', {
    accept: (m) => {
      if (m.text === 'refuse') throw new SvcError('empty', 'nothing to ask');
      if (m.text === 'explode') throw new Error('secret detail');
      received.push(m);
      const base = { request_id: m.request_id, turn_id: 't', agent: m.agent, session_key: 'k', transport: m.transport, chat_id: m.chat_id, topic_id: m.topic_id };
      const chunk = (c: Omit<TurnChunk, 'stream'>) => out.chunk({ stream: 'turn:t', ...c } as TurnChunk);
      const outcome = (async () => {
        if (m.text === 'hold') await new Promise<void>((r) => release.push(r));
        if (m.text === 'fail later') throw new SvcError('agent-stopped', 'stopped');
        if (m.text === 'burst') {
          for (let i = 0; i < 1000; i++) chunk({ type: 'turn.text_delta', data: { ...base, text: 'x'.repeat(200) } });
          return outcomeOf(m, 'burst done');
        }
        chunk({ type: 'turn.text_delta', data: { ...base, text: 'a' } });
        chunk({ type: 'turn.text_delta', data: { ...base, text: 'b' } });
        chunk({ type: 'turn.tool_activity', data: { ...base, tool: 'Read' } });
        // Someone else's chunk between this request's own: never merged in, never delivered here.
        chunk({ type: 'turn.text_delta', data: { ...base, request_id: 'other', text: 'LEAK' } });
        chunk({ type: 'turn.text_delta', data: { ...base, text: 'c' } });
        return outcomeOf(m, 'abc');
      })();
      return { outcome };
    },
    abort: () => ({ killed: 0 }),
    list: ({ principal }) => [{ name: principal.id ?? '?', provider: 'claude', model: 'm', online: true, is_main: true }],
  });
  return { bus, received, release };
}

await t.test('accepted, then chunks merged once and in order, then the outcome; the principal rides along', async (t) => {
  const { bus, received } = setup(t);
  const asked = agentsOf(bus).ask({ ...ASK, text: 'hi' }, WHO, { requestId: 'r1' });
  const chunks = lastValueFrom(asked.chunks$.pipe(toArray()));
  t.same(await asked.accepted, { accepted: true });
  t.equal((await asked.outcome).text, 'abc');
  t.same(
    (await chunks).map((c) => [c.type, c.type === 'turn.text_delta' ? c.data.text : c.type === 'turn.tool_activity' ? c.data.tool : c.data.status]),
    [['turn.text_delta', 'ab'], ['turn.tool_activity', 'Read'], ['turn.text_delta', 'c']],
    'consecutive deltas of one tick merged; another request\'s chunk neither merged nor delivered',
  );
  t.match(received[0], { request_id: 'r1', text: 'hi', principal: WHO });
  t.same((await agentsOf(bus).list(WHO)).map((a) => a.name), ['ann']);
});

await t.test('a burst is merged into frames of at most MAX_MERGED_DELTA_CHARS', async (t) => {
  const { bus } = setup(t);
  const asked = agentsOf(bus).ask({ ...ASK, text: 'burst' }, WHO);
  const chunks = lastValueFrom(asked.chunks$.pipe(toArray()));
  await asked.outcome;
  const texts = (await chunks).map((c) => (c.type === 'turn.text_delta' ? c.data.text : ''));
  t.equal(texts.join('').length, 200_000);
  t.ok(texts.every((x) => x.length <= MAX_MERGED_DELTA_CHARS) && texts.length <= 5, `${texts.length} chunks for 1,000`);
});

await t.test('refusals: an accepted step, not a race; no chunks; the outcome rejects with the same code', async (t) => {
  const { bus, received } = setup(t);
  const refused = agentsOf(bus).ask({ ...ASK, text: 'refuse' }, WHO);
  t.same(await refused.accepted, { accepted: false, code: 'empty', message: 'nothing to ask' });
  await t.rejects(refused.outcome, { code: 'empty' });
  t.same(await lastValueFrom(refused.chunks$.pipe(toArray())), []);

  const exploded = agentsOf(bus).ask({ ...ASK, text: 'explode' }, WHO);
  t.match(await exploded.accepted, { accepted: false, code: 'internal-error' }, 'a broken invariant is internal, for the edge to log');

  const invalid = agentsOf(bus).ask({ ...ASK, chat_id: 1.5, text: 'x' }, WHO);
  t.match(await invalid.accepted, { accepted: false, code: 'invalid-body' });
  const forged = agentsOf(bus).ask({ ...ASK, text: 'x' }, { ...WHO, role: 'root' } as unknown as Principal);
  t.match(await forged.accepted, { accepted: false, code: 'invalid-body' }, 'a principal outside the schema is refused');
  t.equal(received.length, 0);

  const bare = new Bus({ log: new MemoryEventLog() });
  t.teardown(() => bare.close());
  const none = agentsOf(bare).ask({ ...ASK, text: 'x' }, WHO);
  t.match(await none.accepted, { accepted: false, code: 'no-handler' });
});

await t.test('after acceptance: a failure rejects the outcome; a deadline gives command-timeout and stops routing', async (t) => {
  const { bus, release } = setup(t);
  const failed = agentsOf(bus).ask({ ...ASK, text: 'fail later' }, WHO);
  t.same(await failed.accepted, { accepted: true });
  await t.rejects(failed.outcome, { code: 'agent-stopped' });

  const slow = agentsOf(bus).ask({ ...ASK, text: 'hold' }, WHO, { timeoutMs: 20 });
  t.same(await slow.accepted, { accepted: true });
  await t.rejects(slow.outcome, { code: 'command-timeout' });
  const late: TurnChunk[] = [];
  slow.chunks$.subscribe((c) => late.push(c));
  release[0]!();
  const after = agentsOf(bus).ask({ ...ASK, text: 'hi' }, WHO);
  await after.outcome;
  t.same(late, [], 'the late turn reaches no one');
});

await t.test('closing the bus ends what still waits, with bus-closed', async (t) => {
  const { bus } = setup(t);
  const held = agentsOf(bus).ask({ ...ASK, text: 'hold' }, WHO);
  t.same(await held.accepted, { accepted: true });
  bus.close();
  await t.rejects(held.outcome, { code: 'bus-closed' });
});

await t.test('a second request under an id still running is refused and leaves the first one whole', async (t) => {
  const { bus, received, release } = setup(t);
  const first = agentsOf(bus).ask({ ...ASK, text: 'hold' }, WHO, { requestId: 'same' });
  t.same(await first.accepted, { accepted: true });
  const second = agentsOf(bus).ask({ ...ASK, text: 'hi' }, WHO, { requestId: 'same' });
  t.match(await second.accepted, { accepted: false, code: 'duplicate-request' });
  await t.rejects(second.outcome, { code: 'duplicate-request' });
  t.equal(received.length, 1, 'the runtime never saw the second');
  release.forEach((r) => r());
  t.equal((await first.outcome).text, 'abc', 'the first gets its own answer');
});
