import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as v from 'valibot';
import { startDaemon } from '../../bin/daemon.js';
import { agentsOf } from '../../bus/index.js';
import { EVENT_SCHEMAS, upcastEnvelope, type AnyEnvelope, type EventType, type Principal } from '../../schemas/index.js';
import { homePaths } from '../../store/index.js';
import { tempHome } from '../fixtures/temp-home.js';

const BIN = fileURLToPath(new URL('../fixtures/bin', import.meta.url));

const declared = (type: string): type is EventType => Object.hasOwn(EVENT_SCHEMAS, type);

/** Each event whose payload its declared schema refuses, or whose type nothing declares. */
function nonconforming(events: readonly AnyEnvelope[]): string[] {
  const bad: string[] = [];
  for (const e of events) {
    if (!declared(e.type)) {
      bad.push(`${e.seq} ${e.type}: not a declared type`);
      continue;
    }
    const r = v.safeParse(EVENT_SCHEMAS[e.type], e.data);
    if (!r.success) bad.push(`${e.seq} ${e.type}: ${v.getDotPath(r.issues[0]!) ?? ''} ${r.issues[0]!.message}`);
  }
  return bad;
}

await t.test('the golden log: every fact is a declared type and fits its payload schema', async (t) => {
  const file = fileURLToPath(new URL('../fixtures/golden/daemon-lifecycle.ndjson', import.meta.url));
  const events = readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as AnyEnvelope);
  t.ok(events.length > 10);
  t.same(nonconforming(events), []);
});

await t.test('what a real daemon publishes over turns, /new, an abort and a stop fits the declared schemas', async (t) => {
  const home = tempHome(t);
  const root = join(home.dir, 'home');
  const d = await startDaemon({
    paths: homePaths(root),
    logToStderr: false,
    internalPort: 0,
    watchIntervalMs: 20,
    killGraceMs: 300,
    env: { PATH: `${BIN}:${process.env.PATH}`, HOME: root },
  });
  let n = 0;
  const owner: Principal = { kind: 'user', id: null, acting_for: null, role: 'admin', allowed_agents: [], origin: { transport: 'api', chat_id: 1, topic_id: null } };
  const ask = (text: string) =>
    agentsOf(d.bus).ask({ agent: 'main', transport: 'api', chat_id: 1, topic_id: null, text, kind: 'foreground' }, owner, { requestId: `r${++n}` }).outcome;
  t.equal((await ask('hello')).status, 'completed');
  await ask('/new');
  t.equal((await ask('again')).status, 'completed');
  await agentsOf(d.bus).abort(1, owner);
  // The log closes with the daemon: read what it holds, then take the stop's facts as they come.
  const events: AnyEnvelope[] = d.bus.log.read();
  const sub = d.bus.events$.subscribe((e) => events.push(e));
  await d.stop('test');
  sub.unsubscribe();
  const types = new Set(events.map((e) => e.type));
  for (const want of ['daemon.started', 'config.loaded', 'agent.started', 'session.started', 'turn.started', 'turn.spawned', 'turn.completed', 'session.turn_recorded', 'daemon.stopped']) {
    t.ok(types.has(want), `the run recorded ${want}`);
  }
  t.same(nonconforming(events), []);
});

await t.test('a payload that does not fit is reported, so the check above can fail', async (t) => {
  const at = '2026-11-22T10:00:00.000Z';
  t.same(nonconforming([
    { seq: 1, at, stream: 'registry', type: 'registry.agent_added', data: { name: 5 } },
    { seq: 2, at, stream: 'x', type: 'x.made_up', data: {} },
    { seq: 3, at, stream: 'registry', type: 'registry.agent_added', data: { name: 'ok' } },
  ]).map((s) => s.split(':')[0]), ['1 registry.agent_added', '2 x.made_up']);
});

await t.test('upcastEnvelope: an old payload is brought forward, a missing step or a newer version is named', async (t) => {
  const base = { seq: 5, at: '2026-11-20T09:00:00.000Z', stream: 'conn:x', type: 'connection.authenticated', data: { chat_id: 1, channel_id: null } };
  t.same(upcastEnvelope(base), { ...base, data: { surface: 'direct', chat_id: 1, channel_id: null }, v: 2 }, 'no version reads as 1');
  const current = { ...base, v: 2, data: { surface: 'admin', role: 'admin' } };
  t.equal(upcastEnvelope(current), current, 'a current event is handed back as it is');
  const other = { ...base, type: 'connection.closed', data: { reason: 'client', code: 1000 } };
  t.equal(upcastEnvelope(other), other, 'a type at version 1 is untouched');
  t.throws(() => upcastEnvelope({ ...base, v: 3 }), { code: 'unreadable-event', message: /^conn:x seq 5: connection\.authenticated version 3 was written by a newer svc/ });
  t.throws(() => upcastEnvelope({ ...other, v: 2 }), { code: 'unreadable-event', message: /connection\.closed version 2/ });
});
