import t from 'tap';
import { ChatCommands, type ChatCommandDeps } from '../../actors/index.js';
import { parseChatCommand } from '../../machines/index.js';
import type { AgentMessage, Principal } from '../../schemas/index.js';

const principal: Principal = { kind: 'user', id: null, acting_for: null, role: null, allowed_agents: [], origin: { transport: 'api', chat_id: 7, topic_id: null } };
const msg = (text: string): AgentMessage => ({ request_id: 'r1', agent: 'main', transport: 'api', chat_id: 7, topic_id: null, text, principal, kind: 'foreground' });

function harness(over: Partial<ChatCommandDeps> = {}) {
  const calls: string[] = [];
  let model = { model: 'opus', provider: 'claude' };
  const commands = new ChatCommands({
    currentModel: () => model,
    setModel: (m, p) => {
      calls.push(`set ${m} ${p}`);
      model = { model: m, provider: p };
    },
    discoveredGemini: () => [],
    resetSession: async (_m, key, reason) => void calls.push(`reset ${key} ${reason}`),
    abortChat: (chat) => (calls.push(`abort ${chat}`), 2),
    ...over,
  });
  const inLane = (text: string) => commands.inLane(parseChatCommand(text), msg(text), 'api:7');
  return { commands, calls, inLane };
}

await t.test('/new and /reset start a session, answered without a turn', async (t) => {
  const h = harness();
  t.match(await h.inLane('/new'), { outcome: { text: 'Started a new session.', status: 'completed', turn_id: null, session_key: 'api:7', model: 'opus' } });
  t.match(await h.inLane('/reset'), { outcome: { status: 'completed' } });
  t.same(h.calls, ['reset api:7 new', 'reset api:7 reset']);
});

await t.test('/stop aborts the chat and says how many turns it stopped', async (t) => {
  const h = harness();
  t.match(await h.inLane('/stop'), { outcome: { text: 'Stopped 2 running turn(s).' } });
  t.same(h.calls, ['abort 7']);
});

await t.test('/model shows, sets, and refuses what is not a model id without setting anything', async (t) => {
  const h = harness();
  t.match(await h.inLane('/model'), { outcome: { text: 'Model: opus (claude). Change it with /model <id>.' } });
  t.match(await h.inLane('/model gpt-5'), { outcome: { text: 'Model set to gpt-5 (codex).', model: 'gpt-5' } });
  t.match(await h.inLane('/model $(rm -rf /)'), { outcome: { status: 'failed', reason: 'invalid-model', is_error: true } });
  t.same(h.calls, ['set gpt-5 codex']);
});

await t.test('/retry turns into the cut-off prompt, or says there is nothing to retry', async (t) => {
  const none = harness();
  t.match(await none.inLane('/retry'), { outcome: { status: 'failed', reason: 'nothing-to-retry' } });
  const some = harness({ takeRetry: async () => 'the question' });
  t.match(await some.inLane('/retry'), { turn: { text: 'the question', request_id: 'r1' } });
});

await t.test('plain text is no command', async (t) => {
  const h = harness();
  t.equal(await h.inLane('hello /new'), null);
  t.equal(h.commands.immediate(parseChatCommand('hello'), msg('hello')), null);
});

await t.test('/agent_restart is answered at once: usage, unknown agent, restarted, did not come back', async (t) => {
  const restarts: string[] = [];
  const h = harness({
    restartAgent: async (name) => {
      restarts.push(name);
      return name === 'ghost' ? 'unknown' : name === 'broken' ? 'not-started' : 'restarted';
    },
  });
  const ask = (text: string) => h.commands.immediate(parseChatCommand(text), msg(text));
  t.equal(ask('/new'), null, 'lane commands are not immediate');
  t.match(await ask('/agent_restart'), { text: 'Usage: /agent_restart <name>', reason: 'invalid-command', session_key: '', model: null });
  t.match(await ask('/agent_restart ghost'), { text: 'No agent named ghost.', status: 'failed' });
  t.match(await ask('/agent_restart broken'), { text: 'broken did not start again; see the log.', status: 'failed' });
  t.match(await ask('/agent_restart helper'), { text: 'Restarted helper.', status: 'completed', reason: null });
  t.same(restarts, ['ghost', 'broken', 'helper']);
});

await t.test('/tasks: disabled, refused actions, the selector with its buttons, answered at once', async (t) => {
  const off = harness({ tasksEnabled: () => false, taskSelector: async () => t.fail('not asked') as never });
  const o = await off.commands.immediate(parseChatCommand('/tasks'), msg('/tasks'));
  t.match(o, { text: 'Task system is not enabled.', status: 'completed', buttons: [] });
  t.equal(await off.inLane('/tasks'), null, 'not a lane command');

  const asked: unknown[] = [];
  const on = harness({
    tasksEnabled: () => true,
    taskSelector: async (req, correlation) => (asked.push([req, correlation]), { text: 'list', buttons: [{ label: 'Refresh', data: 'tsc:refresh' }], ok: true }),
  });
  t.match(await on.commands.immediate(parseChatCommand('/tasks'), msg('/tasks')), { text: 'list', status: 'completed', buttons: [{ data: 'tsc:refresh' }] });
  t.match(await on.commands.immediate(parseChatCommand('tsc:cancel:t9'), msg('tsc:cancel:t9')), { text: 'list' });
  t.same(asked, [
    [{ agent: 'main', chat_id: 7, action: { kind: 'refresh' } }, 'r1'],
    [{ agent: 'main', chat_id: 7, action: { kind: 'cancel', task_id: 't9' } }, 'r1'],
  ]);
  const bad = await on.commands.immediate(parseChatCommand('tsc:cancel:../../etc'), msg('tsc:cancel:../../etc'));
  t.match(bad, { status: 'failed', reason: 'task-action-refused', text: /does not name a task id; nothing changed/ });
  t.equal(asked.length, 2, 'a hostile id never reaches the hub');
  const none = harness({ tasksEnabled: () => true });
  t.match(await none.commands.immediate(parseChatCommand('/tasks'), msg('/tasks')), { status: 'failed', text: 'The task system is not running.' });
});
