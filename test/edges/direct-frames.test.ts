import t from 'tap';
import * as v from 'valibot';
import { classifyClientPayload } from '../../edges/direct/index.js';
import { ServerFrameSchema } from '../../schemas/index.js';

const payload = (s: string) => new Uint8Array(Buffer.from(s, 'utf8'));

await t.test('client frames are parsed by ClientFrameSchema with the same answers as before', async (t) => {
  const table: [string, unknown][] = [
    ['{"type":"message","text":"hi"}', { kind: 'message', text: 'hi' }],
    ['{"type":"message","text":"hi","extra":[1]}', { kind: 'message', text: 'hi' }],
    ['{"type":"abort"}', { kind: 'abort' }],
    ['{"type":"abort","text":5}', { kind: 'abort' }],
    ['{"type":"message","text":"  /stop "}', { kind: 'abort' }],
    ['{"type":"message","text":"/STOP@my_bot"}', { kind: 'abort' }],
    ['{"type":"message","text":"/stop now"}', { kind: 'message', text: '/stop now' }],
    ['{"type":"message"}', { kind: 'error', code: 'empty', message: 'message.text is empty; send a non-empty string' }],
    ['{"type":"message","text":" \\n\\t"}', { kind: 'error', code: 'empty' }],
    ['{"type":"message","text":5}', { kind: 'error', code: 'empty' }],
    ['{"type":"message","text":null}', { kind: 'error', code: 'empty' }],
    ['not json', { kind: 'error', code: 'unknown_type', message: /^payload is not JSON; / }],
    ['', { kind: 'error', code: 'unknown_type', message: /^payload is not JSON; / }],
    ['[{"type":"abort"}]', { kind: 'error', code: 'unknown_type', message: /^payload is not a JSON object; / }],
    ['null', { kind: 'error', code: 'unknown_type', message: /^payload is not a JSON object; / }],
    ['"abort"', { kind: 'error', code: 'unknown_type', message: /^payload is not a JSON object; / }],
    ['{"type":"auth","token":"x"}', { kind: 'error', code: 'unknown_type', message: 'type "auth" is not allowed (one of message, abort)' }],
    ['{"type":5}', { kind: 'error', code: 'unknown_type', message: 'type missing is not allowed (one of message, abort)' }],
    ['{}', { kind: 'error', code: 'unknown_type', message: 'type missing is not allowed (one of message, abort)' }],
    [`{"type":"${'x'.repeat(500)}"}`, { kind: 'error', code: 'unknown_type', message: `type "${'x'.repeat(64)}" is not allowed (one of message, abort)` }],
    ['{"__proto__":{"type":"abort"}}', { kind: 'error', code: 'unknown_type' }],
  ];
  for (const [raw, want] of table) t.match(classifyClientPayload(payload(raw)), want as object, raw.slice(0, 60));
});

await t.test('ServerFrameSchema describes what the edge sends and refuses what it must not', async (t) => {
  const good = [
    { type: 'auth_ok', chat_id: 1, e2e_pk: 'k', providers: [{ id: 'claude', name: 'Claude', models: ['opus'] }], active_provider: 'claude', active_model: 'opus' },
    { type: 'text_delta', data: 'x' },
    { type: 'system_status', data: null },
    { type: 'result', text: 'a', stream_fallback: false, files: [], interrupted: true },
    { type: 'error', code: 'no_handler', message: 'm' },
  ];
  for (const f of good) t.ok(v.is(ServerFrameSchema, f), f.type);
  for (const f of [{ type: 'error', code: 'internal-error', message: 'm' }, { type: 'result', text: 'a' }, { type: 'nope' }]) {
    t.notOk(v.is(ServerFrameSchema, f), JSON.stringify(f));
  }
});
