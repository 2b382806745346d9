// The /ws/admin connection machine, driven through events: given/when/then on its verdicts.
import t from 'tap';
import { createActor } from 'xstate';
import { adminConnectionMachine } from '../../machines/index.js';
import type { AdminConnectionEvent } from '../../schemas/index.js';

function drive(...events: AdminConnectionEvent[]) {
  const actor = createActor(adminConnectionMachine, { input: { maxFrames: 3, windowMs: 1000 } }).start();
  for (const e of events) actor.send(e);
  const s = actor.getSnapshot();
  return { value: s.value, ...s.context };
}

const ok = { type: 'auth', ok: true, role: 'operator' } as const;
const frame = (kind: Extract<AdminConnectionEvent, { type: 'frame' }>['kind'], at = 0) => ({ type: 'frame', kind, at }) as const;

await t.test('before auth: only an auth frame; anything else, a failure or the timer closes with its rejection', async (t) => {
  t.match(drive(ok), { value: 'open', role: 'operator', rejection: null });
  t.match(drive({ type: 'auth', ok: false, role: null }), { value: 'closing', rejection: 'auth_failed', closeReason: 'auth_failed' });
  t.match(drive(frame('message')), { value: 'closing', rejection: 'auth_required' });
  t.match(drive(frame('invalid')), { value: 'closing', rejection: 'auth_required' });
  t.match(drive({ type: 'timeout' }), { value: 'closing', rejection: 'auth_timeout' });
  t.match(drive({ type: 'timeout' }, ok), { value: 'closing', role: null }, 'a late auth changes nothing');
  t.match(drive({ type: 'close', code: 1006 }), { value: 'closed', closeReason: 'client' });
});

await t.test('open: verdict per frame kind, a second auth is out of order, nothing closes the connection but a drop', async (t) => {
  t.match(drive(ok, frame('message')), { value: 'open', lastFrame: 'accepted' });
  t.match(drive(ok, frame('abort')), { lastFrame: 'accepted' });
  t.match(drive(ok, frame('auth')), { value: 'open', lastFrame: 'out_of_order' });
  t.match(drive(ok, frame('invalid')), { value: 'open', lastFrame: 'invalid_frame' });
  t.match(drive(ok, frame('unknown')), { value: 'open', lastFrame: 'unknown_type' });
  t.match(drive(ok, frame('too_large')), { value: 'open', lastFrame: 'frame_too_large' });
  t.match(drive(ok, { type: 'drop', reason: 'revoked' }), { value: 'closing', closeReason: 'revoked' });
  t.match(drive(ok, { type: 'drop', reason: 'backpressure' }, { type: 'close', code: 1006 }), { value: 'closed', closeReason: 'backpressure' });
});

await t.test('rate: every frame counts, the one past the window limit is refused, a new window starts afresh', async (t) => {
  t.match(drive(ok, frame('message', 0), frame('invalid', 10), frame('message', 20)), { lastFrame: 'accepted', windowCount: 3 });
  t.match(drive(ok, frame('message', 0), frame('message', 10), frame('message', 20), frame('message', 30)), { value: 'open', lastFrame: 'rate_limited' });
  t.match(drive(ok, frame('message', 0), frame('message', 10), frame('message', 20), frame('message', 30), frame('message', 1000)), { lastFrame: 'accepted', windowCount: 1, windowStart: 1000 });
  t.match(drive(ok, frame('message', 5000), frame('message', 10)), { lastFrame: 'accepted', windowStart: 10 }, 'a clock that went back opens a new window');
});
