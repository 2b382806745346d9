import t from 'tap';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { filter, firstValueFrom, take, toArray } from 'rxjs';
import { agentsOf, ofType } from '../../bus/index.js';
import { startDaemon } from '../../bin/daemon.js';
import { CliSlots, queuedStatus, type CliSlot } from '../../actors/index.js';
import { SYSTEM_ROLE, roleForCaller, roleForMessengerSender } from '../../machines/index.js';
import { ACTOR_EVENTS, AGENT_COMMANDS, UsersSchema, type AgentAsk, type Principal } from '../../schemas/index.js';
import * as v from 'valibot';
import { homePaths } from '../../store/index.js';
import { tempHome } from '../fixtures/temp-home.js';
import { until } from '../fixtures/until.js';

/** What the host journals on a turn's stream besides the turn's own facts. */
const JOURNAL = new Set<string>([ACTOR_EVENTS.started, ACTOR_EVENTS.input, ACTOR_EVENTS.timer]);

const BIN = fileURLToPath(new URL('../fixtures/bin', import.meta.url));

interface Recorded {
  argv: string[];
  cwd: string;
  envKeys: Record<string, string>;
  stdin: string;
}

type T = { teardown(f: () => unknown): void };

/** The direct API's token bearer: no role, every agent. */
const TOKEN_USER: Principal = { kind: 'user', id: null, acting_for: null, role: null, allowed_agents: [], origin: { transport: 'api', chat_id: 1, topic_id: null } };
/** One scratch directory per test, removed only after that test's daemons stopped. */
const scratches = new WeakMap<T, ReturnType<typeof tempHome>>();
const scratchOf = (t: T) => scratches.get(t) ?? (scratches.set(t, tempHome(t)), scratches.get(t)!);

async function boot(t: T, env: Record<string, string> = {}, opts: { clock?: () => number; home?: string } = {}) {
  const root = opts.home ?? join(scratchOf(t).dir, 'home');
  const paths = homePaths(root);
  const record = `${root}.argv.ndjson`;
  const d = await startDaemon({
    paths,
    logToStderr: false, internalPort: 0,
    watchIntervalMs: 20,
    killGraceMs: 300,
    env: { PATH: `${BIN}:${process.env.PATH}`, HOME: root, FAKE_CLI_RECORD: record, ...env },
    ...(opts.clock ? { clock: opts.clock } : {}),
  });
  let stopped = false;
  const stop = async () => {
    if (!stopped) await d.stop('test');
    stopped = true;
  };
  scratchOf(t).beforeRemove(stop);
  const recorded = (): Recorded[] =>
    existsSync(record) ? readFileSync(record, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Recorded) : [];
  let n = 0;
  const ask = (text: string, over: Partial<AgentAsk> & { principal?: Partial<Principal> } = {}) => {
    const { principal, ...msg } = over;
    return agentsOf(d.bus).ask(
      { agent: 'main', transport: 'api', chat_id: 1, topic_id: null, text, kind: 'foreground', ...msg },
      { ...TOKEN_USER, ...principal },
      { requestId: `r${++n}` },
    ).outcome;
  };
  return { d, paths, ask, recorded, stop };
}

const argOf = (argv: string[], flag: string) => (argv.includes(flag) ? argv[argv.indexOf(flag) + 1] : undefined);

await t.test('a message streams its reply, is recorded as a turn, and the next one resumes the session', async (t) => {
  const { d, ask, recorded } = await boot(t, { FAKE_CLI_REPLY: 'Hello from claude', FAKE_CLI_CHUNKS: '3' });
  const deltas: string[] = [];
  d.bus.transient$
    .pipe(filter((m) => m.type === 'turn.text_delta' && (m.data as { request_id: string }).request_id === 'r1'))
    .subscribe((m) => deltas.push((m.data as { text: string }).text));
  const out = await ask('hi');
  t.equal(out.status, 'completed');
  t.equal(out.text, 'Hello from claude');
  t.equal(out.provider, 'claude');
  t.equal(out.session_id, 'fake-claude-session');
  t.equal(deltas.join(''), 'Hello from claude', 'streamed before the reply, in order (chunks of one read arrive merged)');
  t.ok(deltas.length >= 1);

  const turn = d.log.read({ stream: `turn:${out.turn_id}` }).map((e) => e.type);
  t.same(turn.filter((type) => !JOURNAL.has(type)), ['turn.started', 'turn.spawned', 'turn.completed']);
  t.equal(turn[0], ACTOR_EVENTS.started, "the turn's journal opens its stream");
  const first = recorded()[0]!;
  t.equal(first.cwd, d.config().svc_home === '~/.svc' ? join(homePaths(first.envKeys.SVC_HOME!).workspace) : first.cwd, 'runs in the main workspace');
  t.equal(first.envKeys.SVC_AGENT_NAME, 'main');
  t.equal(first.envKeys.SVC_CHAT_ID, '1');
  t.equal(argOf(first.argv, '--permission-mode'), 'bypassPermissions', 'no role: permission_mode');
  t.equal(argOf(first.argv, '--model'), 'opus');
  t.notOk(first.argv.includes('--resume'));

  await ask('again');
  t.equal(argOf(recorded()[1]!.argv, '--resume'), 'fake-claude-session', 'the provider session continues');
});

await t.test('commands, directives, provider switch keeps each provider session, permission by role', async (t) => {
  const { ask, recorded, paths } = await boot(t);
  await ask('one');
  let out = await ask('@gpt-5 switch to codex');
  t.equal(out.provider, 'codex');
  t.equal(recorded().at(-1)!.argv[0], 'exec');
  t.equal(recorded().at(-1)!.stdin.trim(), 'switch to codex', 'the directive is not part of the prompt');
  await ask('back to claude');
  t.equal(argOf(recorded().at(-1)!.argv, '--resume'), 'fake-claude-session', "switching provider kept claude's session");

  out = await ask('/new');
  t.same([out.status, out.turn_id], ['completed', null]);
  await ask('fresh');
  t.notOk(recorded().at(-1)!.argv.includes('--resume'), '/new starts a fresh provider session');

  out = await ask('/model sonnet');
  t.match(out.text, /sonnet \(claude\)/);
  t.equal(JSON.parse(readFileSync(paths.configFile, 'utf8')).model, 'sonnet', '/model is persisted');
  await ask('which model');
  t.equal(argOf(recorded().at(-1)!.argv, '--model'), 'sonnet');
  t.match((await ask('/model')).text, /Model: sonnet/);
  t.equal((await ask('/model not a model!')).status, 'failed');
  const before = recorded().length;
  out = await ask('/retry');
  t.same([out.status, out.reason, out.turn_id], ['failed', 'nothing-to-retry', null]);
  t.match(out.text, /^Nothing to retry: no answer in this chat was cut off by a restart\.$/);
  t.equal(recorded().length, before, 'no CLI ran');

  await ask('as viewer', { principal: { role: 'viewer' } });
  t.equal(argOf(recorded().at(-1)!.argv, '--permission-mode'), 'default');
  await ask('as operator', { principal: { role: 'operator' } });
  t.equal(argOf(recorded().at(-1)!.argv, '--permission-mode'), 'acceptEdits');
  await t.rejects(ask('   '), { code: 'empty' });
  await t.rejects(ask('hi', { agent: 'nobody' }), { code: 'unknown-agent' });
  await t.rejects(ask('hi', { chat_id: 1.5 }), { code: 'invalid-body' });
});

await t.test('two chats stream at once; one session key runs in order; abort is chat-scoped', async (t) => {
  const { ask } = await boot(t, { FAKE_CLI_DELAY_MS: '40', FAKE_CLI_CHUNKS: '4' });
  const [a, b] = await Promise.all([ask('alpha', { chat_id: 10 }), ask('beta', { chat_id: 11 })]);
  t.same([a.text, b.text], ['echo: alpha', 'echo: beta']);
  const order: string[] = [];
  await Promise.all(['m1', 'm2', 'm3'].map((m) => ask(m, { chat_id: 12 }).then((o) => order.push(o.text))));
  t.same(order, ['echo: m1', 'echo: m2', 'echo: m3'], 'one at a time, in order, per key');

  const hang = await boot(t, { FAKE_CLI_HANG: '1' }, { home: join(scratchOf(t).dir, 'second') });
  const spawned = firstValueFrom(hang.d.bus.events$.pipe(ofType('turn.spawned'), take(2), toArray()));
  const inTopic1 = hang.ask('long', { chat_id: 20, topic_id: 1 });
  const inTopic2 = hang.ask('long too', { chat_id: 20, topic_id: 2 });
  const queued = hang.ask('waiting', { chat_id: 20, topic_id: 1 });
  const other = hang.ask('other chat', { chat_id: 21 });
  await spawned;
  const { killed } = await agentsOf(hang.d.bus).abort(20, TOKEN_USER);
  t.equal(killed, 2, 'both channels of the chat, not the other chat');
  t.same((await inTopic1).status, 'aborted');
  t.same((await inTopic2).status, 'aborted');
  t.same((await queued).status, 'aborted', 'queued work of the chat is dropped');
  await agentsOf(hang.d.bus).abort(21, TOKEN_USER);
  t.equal((await other).status, 'aborted');
});

await t.test('abort_turn ends one turn, by turn id or request id: the chat\'s other topic and the queued message carry on', async (t) => {
  const hang = await boot(t, { FAKE_CLI_HANG: '1' });
  const started = firstValueFrom(hang.d.bus.events$.pipe(ofType('turn.spawned'), take(2), toArray()));
  const inTopic1 = hang.ask('long', { chat_id: 20, topic_id: 1 });
  const inTopic2 = hang.ask('long too', { chat_id: 20, topic_id: 2 });
  const queued = hang.ask('waiting', { chat_id: 20, topic_id: 1 });
  await started;
  const turnOf = (requestId: string) => hang.d.log.read({ types: ['turn.started'] }).find((e) => e.data.request_id === requestId)!.stream.slice('turn:'.length);
  const SYSTEM: Principal = { kind: 'system', id: 'heartbeat', acting_for: null, role: 'admin', allowed_agents: [], origin: { transport: 'heartbeat', chat_id: 0, topic_id: null } };
  const agents = agentsOf(hang.d.bus);
  t.same(await agents.abortTurn({ agent: 'main', turn_id: turnOf('r1') }, 'stale', SYSTEM), { killed: 1 });
  t.same((await inTopic1).status, 'aborted');
  const aborted = hang.d.log.read({ stream: `turn:${turnOf('r1')}`, types: ['turn.aborted'] });
  t.equal(aborted[0]?.data.cause, 'stale', 'recorded with its cause');
  // The message queued behind it runs next; the other topic still runs.
  await until('the queued message started', () => hang.d.log.read({ types: ['turn.spawned'] }).length === 3);
  t.same(await agents.abortTurn({ agent: 'main', turn_id: turnOf('r1') }, 'stale', SYSTEM), { killed: 0 }, 'an ended turn is not running any more');
  t.same(await agents.abortTurn({ agent: 'main', request_id: 'r3' }, 'requester-stopped', SYSTEM), { killed: 1 }, 'by the request that started it');
  t.same((await queued).status, 'aborted');
  t.equal(hang.d.log.read({ stream: `turn:${turnOf('r3')}`, types: ['turn.aborted'] })[0]?.data.cause, 'requester-stopped');
  t.notOk(hang.d.log.read({ stream: `turn:${turnOf('r2')}`, types: ['turn.aborted'] }).length, 'topic 2 is untouched');
  await t.rejects(hang.d.bus.send(AGENT_COMMANDS.abortTurn, { agent: 'main', cause: 'stale', principal: SYSTEM }), { code: 'invalid-body' }, 'a turn or a request must be named');
  await t.rejects(hang.d.bus.send(AGENT_COMMANDS.abortTurn, { agent: 'main', turn_id: 'x', cause: 'shutdown' as 'stale', principal: SYSTEM }), { code: 'invalid-body' }, 'svc\'s shutdown cause cannot be claimed');
  const VIEWER_OF_NONE: Principal = { ...TOKEN_USER, allowed_agents: ['research'] };
  t.same(await agents.abortTurn({ agent: 'main', request_id: 'r2' }, 'stale', VIEWER_OF_NONE), { killed: 0 }, 'only on an agent the principal may use');
  await agentsOf(hang.d.bus).abort(20, TOKEN_USER);
  t.equal((await inTopic2).status, 'aborted');
});

await t.test('CLI slots: first come, first served under a bound read at every admission', async (t) => {
  let bound = 2;
  const slots = new CliSlots(() => bound);
  const order: string[] = [];
  const take = (name: string) => {
    const s = slots.acquire();
    void s.granted.then((ok) => order.push(`${name}:${ok}`));
    return s;
  };
  const [a, b, c, d, e] = ['a', 'b', 'c', 'd', 'e'].map(take) as [CliSlot, CliSlot, CliSlot, CliSlot, CliSlot];
  // Awaiting the grants that must come: `order` is filled by reactions registered before these, so a
  // grant given too (c's, wrongly) would be in it by now as well.
  await Promise.all([a.granted, b.granted]);
  t.same(order, ['a:true', 'b:true'], 'given a bound of 2, the first two start');
  t.same([c.queued, d.queued, e.queued], [{ running: 2, ahead: 0 }, { running: 2, ahead: 1 }, { running: 2, ahead: 2 }]);
  d.cancel();
  a.release();
  a.release();
  await Promise.all([d.granted, c.granted]);
  t.same(order, ['a:true', 'b:true', 'd:false', 'c:true'], 'a cancelled waiter leaves; a freed slot goes to the head of the queue, once');
  c.cancel();
  t.equal(slots.runningCount, 2, 'cancel leaves a granted slot alone');
  bound = 3;
  const f = take('f');
  await e.granted;
  t.same(order.slice(4), ['e:true'], 'a raised bound admits the queue head before the newcomer');
  t.same([f.queued, slots.waitingCount], [{ running: 2, ahead: 1 }, 1]);
  for (const s of [b, c, e, f]) s.release();
  await f.granted;
  t.same([slots.runningCount, slots.waitingCount, order.at(-1)], [0, 0, 'f:true']);
  t.equal(queuedStatus({ running: 1, ahead: 1 }), 'queued: 1 CLI process is running (max_concurrent_cli), 1 turn ahead of yours; yours starts when one ends');
});

/**
 * A daemon under `max_concurrent_cli = bound` whose fake CLIs wait at a gate: each appends how
 * many were running when it started to `gate/seen` and answers once `gate/open` exists.
 */
async function bootBounded(t: T, bound: number) {
  const gate = join(scratchOf(t).dir, 'gate');
  mkdirSync(gate);
  const root = join(scratchOf(t).dir, 'home');
  mkdirSync(homePaths(root).configDir, { recursive: true });
  writeFileSync(homePaths(root).configFile, JSON.stringify({ max_concurrent_cli: bound }));
  return { gate, root, ...(await boot(t, { FAKE_CLI_GATE_DIR: gate }, { home: root })) };
}

await t.test('max_concurrent_cli bounds CLIs across chats: the rest queue in order, are told so, and can be aborted', async (t) => {
  const { gate, root, d, ask } = await bootBounded(t, 2);
  // Each fake CLI appends how many fake CLIs were running when it started (itself included).
  const seen = () => (existsSync(join(gate, 'seen')) ? readFileSync(join(gate, 'seen'), 'utf8').trim().split('\n').map(Number) : []);
  const statuses = new Map<string, (string | null)[]>();
  d.bus.transient$.pipe(filter((m) => m.type === 'turn.system_status')).subscribe((m) => {
    const { request_id, status } = m.data as { request_id: string; status: string | null };
    statuses.set(request_id, [...(statuses.get(request_id) ?? []), status]);
  });
  const queuedOf = (r: string) => (statuses.get(r) ?? []).filter((s) => s?.startsWith('queued:'));

  const turns = [1, 2, 3, 4, 5].map((n) => ask(`chat ${n}`, { chat_id: 100 + n }));
  await until('two CLIs running and three turns queued', () => seen().length === 2 && ['r3', 'r4', 'r5'].every((r) => queuedOf(r).length === 1));
  t.ok(seen().every((n) => n <= 2), 'two CLIs started, side by side');
  t.same([d.agents.cliSlots.runningCount, d.agents.cliSlots.waitingCount], [2, 3]);
  t.same(queuedOf('r1').concat(queuedOf('r2')), [], 'turns under the bound are not told anything');
  t.same(queuedOf('r3'), ['queued: 2 CLI processes are running (max_concurrent_cli); yours starts when one ends']);
  t.same(queuedOf('r5'), ['queued: 2 CLI processes are running (max_concurrent_cli), 2 turns ahead of yours; yours starts when one ends']);

  const { killed } = await agentsOf(d.bus).abort(105, TOKEN_USER);
  t.equal(killed, 1, 'aborting a queued turn counts it');
  const aborted = await turns[4]!;
  t.same([aborted.status, aborted.turn_id], ['aborted', null], 'and it ends without a CLI');
  t.equal(d.agents.cliSlots.waitingCount, 2, 'it left the queue');

  writeFileSync(join(gate, 'open'), '');
  const outs = await Promise.all(turns.slice(0, 4));
  t.same(outs.map((o) => o.status), ['completed', 'completed', 'completed', 'completed']);
  t.equal(seen().length, 4, 'the aborted turn never started a CLI');
  t.ok(seen().every((n) => n <= 2), `never more than 2 CLIs at once (seen ${seen().join(',')})`);
  t.equal(statuses.get('r3')![1], null, 'the queued status is cleared when the turn starts');
  t.same(d.agents.cliSlots.runningCount, 0);

  // Hot reload: a lower bound applies to the next turns.
  writeFileSync(homePaths(root).configFile, JSON.stringify({ max_concurrent_cli: 1 }));
  await until('config reloaded', () => d.config().max_concurrent_cli === 1);
  rmSync(join(gate, 'open'));
  rmSync(join(gate, 'seen'));
  const next = [ask('again 1', { chat_id: 101 }), ask('again 2', { chat_id: 102 })];
  await until('one running, one queued', () => seen().length === 1 && d.agents.cliSlots.waitingCount === 1);
  // A call from another agent's running turn holds that turn's slot while it waits: it is never queued.
  const nested = ask('from another agent', { chat_id: 103, kind: 'interagent' });
  await until('the inter-agent turn started beside the running one', () => seen().length === 2);
  t.equal(d.agents.cliSlots.waitingCount, 1, 'the queued chat turn still waits');
  writeFileSync(join(gate, 'open'), '');
  t.same((await Promise.all([...next, nested])).map((o) => o.status), ['completed', 'completed', 'completed']);
  t.equal(seen().length, 3);
  t.equal(seen()[1], 2, 'the inter-agent call ran beside the chat turn holding the only slot');
});

await t.test('sessions survive a restart; idle expiry under an injected clock starts a fresh one', async (t) => {
  let now = Date.parse('2026-11-22T10:00:00Z');
  const home = join(scratchOf(t).dir, 'home');
  let s = await boot(t, {}, { clock: () => now, home });
  await s.ask('first');
  await s.stop();
  now += 60_000;
  s = await boot(t, {}, { clock: () => now, home });
  await s.ask('after restart');
  t.equal(argOf(s.recorded().at(-1)!.argv, '--resume'), 'fake-claude-session', 'restored from the log');
  now += 25 * 3600_000;
  await s.ask('next day');
  t.notOk(s.recorded().at(-1)!.argv.includes('--resume'), 'idle_timeout_minutes (1440) expired the session');
  const starts = s.d.log.read({ types: ['session.started'] }).map((e) => e.data.reason);
  t.same(starts, ['first', 'idle']);
});

await t.test('a resume-only message never creates a session: refused without one, after expiry, or with no conversation on its provider', async (t) => {
  let now = Date.parse('2026-11-22T10:00:00Z');
  const s = await boot(t, {}, { clock: () => now });
  const resumeOnly = { resume_only: true, kind: 'background' } as const;
  await t.rejects(s.ask('check in', { ...resumeOnly, chat_id: 2 }), { code: 'no-session' }, 'a chat that never talked');
  t.same(s.d.log.read({ types: ['session.started', 'turn.started'] }), [], 'no session or turn was recorded');
  t.same(s.recorded(), [], 'no CLI ran');

  await s.ask('hello', { chat_id: 2 });
  now += 60_000;
  const resumed = await s.ask('check in', { ...resumeOnly, chat_id: 2 });
  t.equal(resumed.status, 'completed', 'a live session is resumed');
  t.equal(argOf(s.recorded().at(-1)!.argv, '--resume'), 'fake-claude-session');

  await t.rejects(s.ask('@gpt-5 check in', { ...resumeOnly, chat_id: 2 }), { code: 'no-session' }, 'no codex conversation to resume');
  now += 25 * 3600_000;
  await t.rejects(s.ask('check in', { ...resumeOnly, chat_id: 2 }), { code: 'no-session' }, 'idle_timeout_minutes (1440) expired the session');
  t.same(s.d.log.read({ types: ['session.started'] }).map((e) => e.data.reason), ['first'], 'only the user opened a session');
  t.equal(s.recorded().length, 2, 'no CLI ran for the refused ones');
  await s.ask('next day', { chat_id: 2 });
  t.same(s.d.log.read({ types: ['session.started'] }).map((e) => e.data.reason), ['first', 'idle'], 'the user\'s own next message still starts afresh');
});

await t.test('sub-agents follow the registry: start in their own workspace with the sandbox hook, stop when removed', async (t) => {
  const { d, ask, recorded, paths } = await boot(t);
  mkdirSync(paths.secretsDir, { recursive: true });
  const started = firstValueFrom(d.bus.events$.pipe(ofType('agent.started'), filter((e) => e.data.name === 'research')));
  writeFileSync(paths.agentsRegistry, JSON.stringify([{ name: 'research', telegram_token: '1:x', model: 'sonnet' }]));
  await started;
  const out = await ask('dig', { agent: 'research' });
  t.equal(out.status, 'completed');
  const rec = recorded().at(-1)!;
  t.equal(rec.cwd, join(paths.agentsDir, 'research', 'workspace'));
  t.equal(rec.envKeys.SVC_AGENT_NAME, 'research');
  t.equal(argOf(rec.argv, '--model'), 'sonnet');
  t.ok(existsSync(join(paths.agentsDir, 'research', 'workspace', '.claude', 'hooks', 'sandbox_hook.py')));
  const list = await agentsOf(d.bus).list(TOKEN_USER);
  t.same(list.map((a) => a.name).sort(), ['main', 'research']);

  const stopped = firstValueFrom(d.bus.events$.pipe(ofType('agent.stopped')));
  writeFileSync(paths.agentsRegistry, '[]');
  t.same((await stopped).data.name, 'research');
  await t.rejects(ask('dig', { agent: 'research' }), { code: 'unknown-agent' });
});

await t.test('memory: full injection on a new provider session, a compact reminder every 6 messages', async (t) => {
  const { ask, recorded, paths } = await boot(t);
  const mem = join(paths.workspace, 'memory_system');
  mkdirSync(join(mem, 'modules'), { recursive: true });
  writeFileSync(join(mem, 'modules', 'prefs.md'), ['# Prefs', ...Array.from({ length: 40 }, (_, i) => `- fact ${i + 1}`)].join('\n'));
  writeFileSync(join(mem, 'MAINMEMORY.md'), '# Main\n\n## Always Load\n\n| Module | Why |\n|---|---|\n| prefs | how the user likes things |\n');
  await ask('m1');
  const first = recorded()[0]!;
  const system = argOf(first.argv, '--append-system-prompt') ?? '';
  t.match(system, /fact 40/, 'the whole Always Load module is injected at session start');
  for (let i = 2; i <= 6; i++) await ask(`m${i}`);
  const sixth = recorded()[5]!;
  t.notOk(sixth.argv.includes('--append-system-prompt'), 'a resumed session gets no system prompt');
  const prompt = sixth.argv.slice(sixth.argv.indexOf('--') + 1).join(' ');
  t.match(prompt, /fact 19\b/, 'the first 20 lines of the module (heading included)');
  t.notMatch(prompt, /fact 20\b/, 'the reminder is cut to hook_compact_lines');
  t.match(prompt, /m6$/);
  const fifth = recorded()[4]!;
  t.notMatch(fifth.argv.slice(fifth.argv.indexOf('--') + 1).join(' '), /fact/, 'no reminder between the 6th messages');
});

await t.test('roles from users.json: messenger sender ids and inter-agent callers pick the permission mode', async (t) => {
  const { ask, recorded, paths } = await boot(t);
  mkdirSync(paths.secretsDir, { recursive: true });
  const users = [
    { username: 'olga', role: 'operator', telegram_user_ids: [111] },
    { username: 'vic', role: 'viewer', telegram_user_ids: [222], active: false },
  ];
  writeFileSync(paths.usersFile, JSON.stringify(users));
  // Each transport turns its caller into a Principal (role included) when it authenticates.
  const records = v.parse(UsersSchema, users);
  await ask('x', { transport: 'telegram', principal: { role: roleForMessengerSender(records, 111) } });
  t.equal(argOf(recorded().at(-1)!.argv, '--permission-mode'), 'acceptEdits');
  await ask('x', { transport: 'telegram', principal: { role: roleForMessengerSender(records, 222) } });
  t.equal(argOf(recorded().at(-1)!.argv, '--permission-mode'), 'bypassPermissions', 'an inactive user falls back to permission_mode');
  await ask('x', { transport: 'internal', kind: 'interagent', principal: { kind: 'agent', id: 'main', acting_for: 'olga', role: roleForCaller(records, 'olga') } });
  const rec = recorded().at(-1)!;
  t.equal(argOf(rec.argv, '--permission-mode'), 'acceptEdits');
  t.equal(rec.envKeys.SVC_CALLER_USER_ID, 'olga', 'the caller identity reaches the CLI for its tool scripts');
  await ask('x', { principal: { kind: 'system', id: 'cron', role: SYSTEM_ROLE } });
  t.equal(argOf(recorded().at(-1)!.argv, '--permission-mode'), 'bypassPermissions', 'system calls run as admin');
});

await t.test('a registry change of token restarts the agent; /agent_restart restarts on request', async (t) => {
  const { d, ask, paths } = await boot(t);
  mkdirSync(paths.secretsDir, { recursive: true });
  const entry = { name: 'ops', telegram_token: '1:a' };
  let started = firstValueFrom(d.bus.events$.pipe(ofType('agent.started'), filter((e) => e.data.name === 'ops')));
  writeFileSync(paths.agentsRegistry, JSON.stringify([entry]));
  await started;
  started = firstValueFrom(d.bus.events$.pipe(ofType('agent.started'), filter((e) => e.data.name === 'ops')));
  const stopped = firstValueFrom(d.bus.events$.pipe(ofType('agent.stopped'), filter((e) => e.data.name === 'ops')));
  writeFileSync(paths.agentsRegistry, JSON.stringify([{ ...entry, telegram_token: '1:b' }]));
  t.equal((await stopped).data.reason, 'registry change');
  await started;

  const again = firstValueFrom(d.bus.events$.pipe(ofType('agent.stopped'), filter((e) => e.data.reason === '/agent_restart')));
  const out = await ask('/agent_restart ops');
  t.same([out.status, out.text], ['completed', 'Restarted ops.']);
  await again;
  t.equal((await ask('/agent_restart')).status, 'failed', 'usage without a name');
  t.match((await ask('/agent_restart ghost')).text, /No agent named ghost/);
  t.equal((await ask('works', { agent: 'ops' })).status, 'completed');
});

await t.test('a turn a user was already stopping when svc stops is owed no notice and no /retry', async (t) => {
  const { d, ask, stop } = await boot(t, { FAKE_CLI_HANG: '1', FAKE_CLI_IGNORE_TERM: '1' });
  const turn = ask('never ends');
  await until('the CLI runs', () => d.log.read({ streamPrefix: 'turn:', types: ['turn.spawned'] }).length === 1);
  // The CLI ignores SIGTERM: the user's /stop is still killing it (300 ms grace) when svc stops.
  const facts: { type: string; data: Record<string, unknown> }[] = [];
  d.bus.events$.subscribe((e) => facts.push(e));
  const { killed } = await agentsOf(d.bus).abort(1, TOKEN_USER);
  t.equal(killed, 1);
  await stop();
  t.equal((await turn).status, 'aborted');
  t.same(facts.filter((e) => e.type === 'turn.aborted').map((e) => e.data.cause), ['user'], 'the first cause stays');
  t.same(facts.filter((e) => e.type === 'notification.created'), [], 'no notice promising a /retry that would not exist');
});

await t.test('a turn still waiting for a CLI slot when svc stops is told so, not that it was /stopped', async (t) => {
  const { d, ask, stop } = await bootBounded(t, 1);
  const running = ask('first', { chat_id: 201 });
  const waiting = ask('second', { chat_id: 202 });
  await until('one running, one queued', () => d.agents.cliSlots.runningCount === 1 && d.agents.cliSlots.waitingCount === 1);
  await stop();
  const out = await waiting;
  t.same([out.status, out.reason, out.turn_id], ['aborted', 'agent-stopped', null]);
  t.match(out.text, /stopped before this message could start; send it again/);
  t.equal((await running).status, 'aborted');
});

await t.test('every fact a request causes carries its request id as correlation', async (t) => {
  const { d, ask } = await boot(t);
  const out = await ask('hi');
  const turn = d.log.read({ stream: `turn:${out.turn_id}` });
  const session = d.log.read({ streamPrefix: 'session:main:' });
  t.same(turn.filter((e) => !JOURNAL.has(e.type)).map((e) => e.type), ['turn.started', 'turn.spawned', 'turn.completed']);
  t.same(session.map((e) => e.type), ['session.started', 'session.turn_recorded']);
  t.same([...turn, ...session].map((e) => e.correlation), Array(turn.length + 2).fill('r1'), "its journal's too");
  await ask('/new');
  t.equal(d.log.read({ streamPrefix: 'session:main:' }).at(-1)!.correlation, 'r2', 'a chat command too');
});

await t.test('the runtime decides access: allowed_agents and can_call refuse a principal whatever surface sent it', async (t) => {
  const { d, ask, paths } = await boot(t);
  mkdirSync(paths.secretsDir, { recursive: true });
  const started = firstValueFrom(d.bus.events$.pipe(ofType('agent.started'), filter((e) => e.data.name !== 'main'), take(3), toArray()));
  writeFileSync(
    paths.agentsRegistry,
    JSON.stringify([
      { name: 'ops', telegram_token: '1:a', can_call: [] },
      { name: 'dev', telegram_token: '2:a', can_call: ['main'] },
      { name: 'old', telegram_token: '3:a' },
    ]),
  );
  await started;
  const turns = () => d.log.read({ types: ['turn.started'] }).length;
  const vic: Partial<Principal> = { kind: 'user', id: 'vic', role: 'viewer', allowed_agents: ['ops'] };

  // Sent straight on the bus, as any surface (admin socket, messenger, task) would send it.
  await t.rejects(ask('hi', { principal: vic }), { code: 'agent-not-allowed', message: /user "vic" may not use agent "main"/ });
  await t.rejects(ask('hi', { principal: { kind: 'agent', id: 'ops', role: 'admin' } }), { code: 'call-not-allowed', message: /can_call: empty/ });
  await t.rejects(ask('hi', { principal: { kind: 'agent', id: 'ghost', role: 'admin' } }), { code: 'unknown-caller' });
  await t.rejects(ask('hi', { agent: 'ops', principal: { kind: 'agent', id: 'main', acting_for: 'vic', role: 'viewer', allowed_agents: ['dev'] } }), {
    code: 'agent-not-allowed',
  });
  const refused = agentsOf(d.bus).ask({ agent: 'dev', transport: 'api', chat_id: 1, topic_id: null, text: 'hi', kind: 'foreground' }, { ...TOKEN_USER, ...vic });
  t.match(await refused.accepted, { accepted: false, code: 'agent-not-allowed' }, 'refused before anything is queued');
  t.equal(turns(), 0, 'no refused request ran a turn');

  t.equal((await ask('hi', { agent: 'ops', principal: vic })).status, 'completed', 'an allowed agent answers');
  t.equal((await ask('hi', { principal: { kind: 'agent', id: 'dev', role: 'admin' } })).status, 'completed', 'can_call allows main');
  const warned = firstValueFrom(d.bus.transient$.pipe(filter((m) => m.type === 'log.line' && /"old" has no can_call list/.test((m.data as { msg: string }).msg))));
  t.equal((await ask('hi', { agent: 'ops', principal: { kind: 'agent', id: 'old', role: 'admin' } })).status, 'completed', 'legacy: no can_call list');
  await warned;

  const names = async (p: Partial<Principal>) => (await agentsOf(d.bus).list({ ...TOKEN_USER, ...p })).map((a) => a.name).sort();
  t.same(await names(vic), ['ops']);
  t.same(await names({ kind: 'agent', id: 'dev' }), ['main'], 'an agent sees what it may call, never itself');
  t.same(await names({}), ['dev', 'main', 'old', 'ops']);
});

await t.test('one session key holds at most 32 messages; more are refused at once, and /stop drops them all', async (t) => {
  const { d, ask } = await boot(t, { FAKE_CLI_HANG: '1' });
  const held = Array.from({ length: 32 }, (_, i) => ask(`m${i}`, { chat_id: 50 }));
  const refused = agentsOf(d.bus).ask({ agent: 'main', transport: 'api', chat_id: 50, topic_id: null, text: 'one more', kind: 'foreground' }, TOKEN_USER);
  t.match(await refused.accepted, { accepted: false, code: 'session-busy', message: /32 messages are already waiting/ });
  t.equal((await ask('another chat', { chat_id: 51, text: '/new' })).status, 'completed', 'other sessions are not held up');
  await until('the first CLI runs', () => d.log.read({ types: ['turn.spawned'] }).length === 1);
  t.equal((await agentsOf(d.bus).abort(50, TOKEN_USER)).killed, 1);
  const outcomes = await Promise.all(held);
  t.equal(outcomes.filter((o) => o.status === 'aborted').length, 32);
  t.equal(d.log.read({ types: ['turn.started'] }).length, 1, 'only the running one ever started');
});
