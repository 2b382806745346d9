import t from 'tap';
import {
  CHECKPOINT_MAX_CHARS,
  NOTICE_QUOTE_CHARS,
  checkpointDue,
  interruptedNotification,
  interruptedReplyText,
  partialText,
  traceTurns,
} from '../../machines/index.js';
import type { Envelope } from '../../schemas/index.js';

let seq = 0;
const ev = (stream: string, type: string, data: Record<string, unknown> = {}): Envelope =>
  ({ seq: ++seq, stream, type, data, at: '2026-01-01T00:00:00.000Z', v: 1 }) as unknown as Envelope;
const started = (stream: string, prompt: string | null = 'q', key = 'api:7') =>
  ev(stream, 'turn.started', { agent: 'main', session_key: key, ...(prompt === null ? {} : { prompt }) });

await t.test('given turns in every state, when traced, then only open ones and interrupted ones still owing remain', async (t) => {
  const { open, owing } = traceTurns([
    started('turn:done'),
    ev('turn:done', 'turn.spawned', { pid: 10, start_time: 5, boot_id: 'b' }),
    started('turn:open'),
    ev('turn:open', 'turn.spawned', { pid: 11, start_time: 6, boot_id: 'b' }),
    ev('turn:open', 'turn.recovering', {}),
    ev('turn:open', 'turn.spawned', { pid: 12, start_time: 9, boot_id: 'b' }),
    ev('turn:done', 'turn.completed', { text: 'ok' }),
    started('turn:cut'),
    ev('turn:cut', 'turn.failed', { reason: 'daemon-restarted', text: 'half' }),
    started('turn:shown', 'q', 'api:8'),
    ev('turn:shown', 'turn.failed', { reason: 'daemon-restarted', text: '' }),
    ev('turn:shown', 'turn.notice_delivered', {}),
    started('turn:settled', 'q', 'api:9'),
    ev('turn:settled', 'turn.failed', { reason: 'daemon-restarted', text: '' }),
    ev('turn:settled', 'turn.notice_delivered', {}),
    ev('turn:settled', 'turn.retried', {}),
    started('turn:old', null),
    ev('turn:old', 'turn.failed', { reason: 'daemon-restarted', text: '' }),
    started('turn:failed'),
    ev('turn:failed', 'turn.failed', { reason: 'exit-code', text: '' }),
    ev('turn:nobody', 'turn.spawned', { pid: 13 }),
  ]);
  t.same(open.map((x) => [x.stream, x.groups]), [['turn:open', [{ pgid: 11, startTime: 6, bootId: 'b' }, { pgid: 12, startTime: 9, bootId: 'b' }]]]);
  t.same(owing.map((x) => [x.stream, x.interrupted?.text, x.noticeDelivered, x.retried]), [['turn:cut', 'half', false, false], ['turn:shown', '', true, false]]);
});

await t.test('given two cut-off turns in one chat, then only the later can be retried, but both notices are owed', async (t) => {
  const { owing } = traceTurns([
    started('turn:1', 'older'),
    ev('turn:1', 'turn.failed', { reason: 'daemon-restarted', text: '' }),
    started('turn:2', 'newer'),
    ev('turn:2', 'turn.failed', { reason: 'daemon-restarted', text: '' }),
    started('turn:3', 'elsewhere', 'api:99'),
    ev('turn:3', 'turn.failed', { reason: 'daemon-restarted', text: '' }),
  ]);
  t.same(owing.map((x) => [x.prompt, x.retried]), [['older', true], ['newer', false], ['elsewhere', false]]);
});

await t.test('given turns aborted by svc stopping and by the user, then only the stop owes the chat', async (t) => {
  const { owing } = traceTurns([
    started('turn:stop', 'q1', 'api:1'),
    ev('turn:stop', 'turn.aborted', { reason: 'aborted', cause: 'shutdown', text: 'so far' }),
    started('turn:user', 'q2', 'api:2'),
    ev('turn:user', 'turn.aborted', { reason: 'aborted', cause: 'user', text: 'x' }),
    started('turn:agent', 'q3', 'api:3'),
    ev('turn:agent', 'turn.aborted', { reason: 'aborted', cause: 'agent-stopped', text: 'y' }),
  ]);
  t.same(owing.map((x) => [x.stream, x.interrupted?.text]), [['turn:stop', 'so far']]);
});

await t.test('given an older svc recorded the spawn without identity or with junk, then the group has nulls, and junk pids are dropped', async (t) => {
  const { open } = traceTurns([started('turn:a'), ev('turn:a', 'turn.spawned', { pid: 20 }), ev('turn:a', 'turn.spawned', { pid: '21; rm -rf' }), ev('turn:a', 'turn.spawned', { pid: -1 })]);
  t.same(open[0]!.groups, [{ pgid: 20, startTime: null, bootId: null }]);
  t.equal(open[0]!.prompt, 'q');
});

await t.test('given checkpoints across a recovery, then the partial text is the current attempt only', async (t) => {
  t.equal(partialText([ev('s', 'turn.progressed', { text: 'ab' }), ev('s', 'turn.progressed', { text: 'c' })]), 'abc');
  t.equal(partialText([ev('s', 'turn.progressed', { text: 'old' }), ev('s', 'turn.recovering'), ev('s', 'turn.progressed', { text: 'new' })]), 'new');
  t.equal(partialText([ev('s', 'turn.progressed', { text: 42 })]), '', 'a non-string checkpoint adds nothing');
  t.equal(partialText([]), '');
});

await t.test('given a partial answer, then the chat reads it with a clear end and the way to retry', async (t) => {
  t.equal(interruptedReplyText('Once upon'), 'Once upon\n\n[This answer was cut off by a restart of svc; send /retry to ask again.]');
  t.match(interruptedReplyText('  \n'), /^\[Your message got no answer: svc restarted while working on it; send \/retry to ask again\.\]$/);
  const long = 'x'.repeat(NOTICE_QUOTE_CHARS + 50);
  const n = interruptedNotification({ agent: 'main', sessionKey: 'api:7' }, long);
  t.equal(n.title, 'Answer interrupted by a restart');
  t.ok(n.body.includes(`${'x'.repeat(NOTICE_QUOTE_CHARS)}…`) && !n.body.includes('x'.repeat(NOTICE_QUOTE_CHARS + 1)), 'quotes only the start');
  t.match(n.body, /chat api:7[\s\S]*send \/retry/);
  t.match(interruptedNotification({ agent: 'main', sessionKey: 'api:7' }, '').body, /nothing had arrived yet/);
});

await t.test('checkpointDue: nothing new, later, or now at the size cap or when a tool follows text', async (t) => {
  t.equal(checkpointDue(0, []), 'none');
  t.equal(checkpointDue(0, [{ kind: 'tool', name: 'Bash' }]), 'none');
  t.equal(checkpointDue(0, [{ kind: 'tool', name: 'Bash' }, { kind: 'text', text: 'a' }]), 'later', 'text after a tool waits');
  t.equal(checkpointDue(3, [{ kind: 'tool', name: 'Bash' }]), 'now');
  t.equal(checkpointDue(0, [{ kind: 'text', text: 'a' }, { kind: 'tool', name: 'Read' }]), 'now');
  t.equal(checkpointDue(CHECKPOINT_MAX_CHARS - 1, [{ kind: 'text', text: 'a' }]), 'now');
  t.equal(checkpointDue(CHECKPOINT_MAX_CHARS - 2, [{ kind: 'text', text: 'a' }]), 'later');
});
