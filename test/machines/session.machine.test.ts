// The agent's actor owns one child per chat session; each child runs the session decider, and the
// host records a child's facts on that session's stream. Driven through the real ActorHost, bus and
// an in-memory log.
import t from 'tap';
import { ActorHost } from '../../actors/index.js';
import { Bus } from '../../bus/index.js';
import { agentMachine, foldSession, sessionStream, type SessionCommand, type sessionMachine } from '../../machines/index.js';
import { MemoryEventLog } from '../../store/index.js';
import type { ActorRefFrom } from 'xstate';

const input = { name: 'main', is_main: true, provider: 'claude', model: 'opus', workspace: '/w' };
const where = (key: string) => ({ agent: 'main', key, transport: 'api', chat_id: 1, topic_id: null });
const record = (now: number): SessionCommand => ({ type: 'record-turn', turn_id: `t${now}`, provider: 'claude', session_id: 's1', session_reset: false, warningHours: 12, now });

function boot() {
  const log = new MemoryEventLog();
  const bus = new Bus({ log, clock: () => 0 });
  const host = new ActorHost(bus);
  const spawn = () => host.spawn('agent:main', agentMachine, { stream: 'agent:main', input, childStream: (key) => sessionStream('main', key) });
  const session = (key: string) => host.get<typeof agentMachine>('agent:main')?.getSnapshot().children[key] as ActorRefFrom<typeof sessionMachine> | undefined;
  const send = (key: string, command: SessionCommand, correlation = 'req-1') => host.sendAndCommit('agent:main', { type: 'session', key, command }, { correlation });
  return { log, bus, host, spawn, session, send };
}

await t.test('a session command creates the session child; its facts go to the session stream with the sender’s correlation', async (t) => {
  const { log, host, spawn, session, send } = boot();
  spawn();
  await send('api:1', { type: 'begin-turn', where: where('api:1'), freshAsked: false, rules: { idleTimeoutMinutes: 0, dailyResetEnabled: false, dailyResetHour: 4, timezone: 'UTC', maxSessionMessages: 0 }, now: 10 }, 'req-a');
  await send('api:1', record(20), 'req-a');
  await send('api:2', { type: 'reset', where: where('api:2'), reason: 'new', now: 30 }, 'req-b');
  t.same(Object.keys(host.get<typeof agentMachine>('agent:main')!.getSnapshot().children).sort(), ['api:1', 'api:2']);
  t.match(session('api:1')!.getSnapshot().context, { state: { messageCount: 1, providerSessions: { claude: 's1' } }, refused: null });
  const facts = log.read({ streamPrefix: 'session:' }).map((e) => [e.stream, e.type, e.correlation]);
  t.same(facts, [
    ['session:main:api:1', 'session.started', 'req-a'],
    ['session:main:api:1', 'session.turn_recorded', 'req-a'],
    ['session:main:api:2', 'session.started', 'req-b'],
  ]);
  t.same(log.read({ streamPrefix: 'agent:' }).map((e) => e.type), ['agent.started'], 'the agent stream holds only the agent’s own facts');
});

await t.test('a refused command is answered on the child and records nothing', async (t) => {
  const { log, spawn, session, send } = boot();
  spawn();
  await send('api:9', record(5));
  t.match(session('api:9')!.getSnapshot().context, { state: null, refused: { code: 'no-session' } });
  t.same(log.read({ streamPrefix: 'session:' }), []);
});

await t.test('after a restart the sessions come back as children with the state their streams fold to, emitting nothing', async (t) => {
  const first = boot();
  first.spawn();
  await first.send('api:1', { type: 'reset', where: where('api:1'), reason: 'reset', now: 1 });
  await first.send('api:1', record(2));
  await first.send('api:1', record(3));

  const bus = new Bus({ log: first.log, clock: () => 0 });
  const host = new ActorHost(bus);
  host.spawn('agent:main', agentMachine, { stream: 'agent:main', input, childStream: (key) => sessionStream('main', key) });
  const before = first.log.read({}).length;
  const restored = host.restoreChildren(first.log, 'agent:main', {
    streamPrefix: 'session:main:',
    fold: (_stream, events) => {
      const state = foldSession(events);
      return state ? { type: 'session.restore', key: state.key, state } : null;
    },
  });
  t.equal(restored, 1);
  const child = host.get<typeof agentMachine>('agent:main')!.getSnapshot().children['api:1'] as ActorRefFrom<typeof sessionMachine>;
  t.match(child.getSnapshot().context.state, { key: 'api:1', messageCount: 2, createdAt: 1, lastActiveAt: 3 });
  // It carries on where it was: the next turn is the third message.
  await host.sendAndCommit('agent:main', { type: 'session', key: 'api:1', command: record(4) });
  t.match(first.log.read({ streamPrefix: 'session:main:api:1' }).at(-1)!.data, { message_count: 3 });
  t.same(first.log.read({}).slice(before).map((e) => e.type), ['agent.started', 'session.turn_recorded'], 'restoring recorded nothing');
});

await t.test('stopping the agent stops its sessions', async (t) => {
  const { host, spawn, session, send } = boot();
  spawn();
  await send('api:1', { type: 'reset', where: where('api:1'), reason: 'new', now: 1 });
  const child = session('api:1')!;
  host.send('agent:main', { type: 'stop', reason: 'test' });
  t.equal(child.getSnapshot().status, 'stopped');
});

await t.test('sendAndCommit rejects when a fact it caused could not be recorded, and only for that send', async (t) => {
  const { log, spawn, send } = boot();
  spawn();
  await send('api:0', { type: 'reset', where: where('api:0'), reason: 'new', now: 0 });
  log.close();
  const failed = send('api:1', { type: 'reset', where: where('api:1'), reason: 'new', now: 1 });
  const other = send('api:2', { type: 'reset', where: where('api:2'), reason: 'new', now: 1 });
  await t.rejects(failed);
  await t.rejects(other, 'each send learns of its own failure');
  await t.resolves(send('api:9', record(5)), 'a send that records nothing (refused) has nothing to fail');
});
