import t from 'tap';
import { runStatus } from '../../machines/index.js';
import type { AnyEnvelope } from '../../schemas/index.js';

let seq = 0;
const at = (s: number) => new Date(Date.UTC(2026, 10, 25, 2, 0, s)).toISOString();
const e = (stream: string, type: string, data: Record<string, unknown>): AnyEnvelope => ({ seq: ++seq, at: at(seq), stream, type, data: data as AnyEnvelope['data'] });

await t.test('the last run, folded from its facts: listeners, agents, turns still running, the last error', async (t) => {
  const run = runStatus([
    e('turn:old', 'turn.started', { agent: 'main', session_key: 'api:1' }), // a previous run's: ignored
    e('daemon', 'daemon.started', { pid: 42, version: '1.2.3', home: '/h', node: 'v20' }),
    e('agent:main', 'agent.started', { name: 'main' }),
    e('agent:bob', 'agent.started', { name: 'bob' }),
    e('daemon', 'daemon.ready', { subsystems: [], listeners: [{ surface: 'internal API', host: '127.0.0.1', port: 8799 }] }),
    e('turn:a', 'turn.started', { agent: 'main', session_key: 'api:1' }),
    e('turn:b', 'turn.started', { agent: 'bob', session_key: 'api:2' }),
    e('turn:b', 'turn.failed', { reason: 'exit-code', error: 'exit 2' }),
    e('config', 'config.rejected', { file: 'c', errors: ['permission_mode = "yolo" is not allowed'] }),
    e('agent:bob', 'agent.stopped', { name: 'bob', reason: 'removed' }),
  ]);
  t.match(run, {
    pid: 42,
    version: '1.2.3',
    started_at: at(2),
    stopped_at: null,
    listeners: [{ surface: 'internal API', host: '127.0.0.1', port: 8799 }],
    agents: ['main'],
    running_turns: [{ stream: 'turn:a', agent: 'main', session_key: 'api:1', since: at(6) }],
    last_error: { type: 'config.rejected', message: 'permission_mode = "yolo" is not allowed' },
  });
});

await t.test('a stopped run has no running turns; no run at all is null', async (t) => {
  const run = runStatus([
    e('daemon', 'daemon.started', { pid: 7, version: '1', home: '/h', node: 'v20' }),
    e('turn:x', 'turn.started', { agent: 'main', session_key: 'api:1' }),
    e('daemon', 'daemon.stopped', { reason: 'SIGTERM' }),
  ]);
  t.match(run, { stopped_at: String, stop_reason: 'SIGTERM', running_turns: [], listeners: [] });
  t.equal(runStatus([]), null);
  t.equal(runStatus([e('turn:x', 'turn.started', { agent: 'main' })]), null);
});
