// The composition root's start/stop discipline: parts start in the order their needs give (ties in
// list order), stop in reverse, a failed start stops what already started, a failed stop does not
// leave the rest running, and a wiring mistake is refused, named, before anything starts.
import t from 'tap';
import { key, orderParts, part, seed, startSubsystems, type Key, type Part } from '../../bin/subsystems.js';
import { DAEMON_SUBSYSTEMS } from '../../bin/daemon-subsystems.js';
import { OPTIONS, PATHS, HOST_ENV, START_CORRELATION, LIFECYCLE } from '../../bin/subsystems/keys.js';

type Opts = { failStart?: boolean; failStop?: boolean; noStop?: boolean; async?: boolean; needs?: Key<string>[]; provides?: Key<string>[] };

// `async`: the part's start and stop really yield (a later turn of the loop), as opening a log or a socket does;
// the tests await startSubsystems and stop, never a number of turns.
function probe(trail: string[]) {
  return (name: string, opts: Opts = {}): Part =>
    part({
      name,
      needs: Object.fromEntries((opts.needs ?? []).map((k) => [k.name, k])),
      provides: Object.fromEntries((opts.provides ?? []).map((k) => [k.name, k])),
      async start(needs) {
        if (opts.async) await new Promise((r) => setImmediate(r));
        if (opts.failStart) throw new Error(`${name} would not start`);
        trail.push(`start ${name}${Object.keys(needs).length ? ` with ${Object.values(needs).join(',')}` : ''}`);
        const stop = async () => {
          if (opts.async) await new Promise((r) => setImmediate(r));
          trail.push(`stop ${name}`);
          if (opts.failStop) throw new Error(`${name} would not stop`);
        };
        const provide = Object.fromEntries((opts.provides ?? []).map((k) => [k.name, `${k.name} of ${name}`]));
        // A part that provides something hands its values back with its stop. The keys here are
        // chosen per test, so the type checker cannot tell which of the two a probe is.
        if (opts.provides?.length) return (opts.noStop ? { provide } : { provide, stop }) as never;
        return (opts.noStop ? undefined : stop) as never;
      },
    });
}

const LOG = key<string>('log');
const BUS = key<string>('bus');
const AGENTS = key<string>('agents');

await t.test('started in list order when nothing constrains it, stopped in reverse order, once', async (t) => {
  const trail: string[] = [];
  const p = probe(trail);
  const started = await startSubsystems([p('lock'), p('log', { async: true }), p('bus'), p('edges', { async: true })]);
  t.same(started.names, ['lock', 'log', 'bus', 'edges']);
  t.same(trail, ['start lock', 'start log', 'start bus', 'start edges']);
  trail.length = 0;
  const first = started.stop();
  const second = started.stop();
  await Promise.all([first, second]);
  await started.stop();
  t.same(trail, ['stop edges', 'stop bus', 'stop log', 'stop lock'], 'each stops once, last started first');
});

await t.test('a part listed before what it needs starts after its provider, and gets its value', async (t) => {
  const trail: string[] = [];
  const p = probe(trail);
  const started = await startSubsystems([p('edges', { needs: [AGENTS, BUS] }), p('agents', { needs: [BUS], provides: [AGENTS] }), p('lock'), p('bus', { needs: [LOG], provides: [BUS] }), p('log', { provides: [LOG] })]);
  t.same(started.names, ['lock', 'log', 'bus', 'agents', 'edges'], 'needs first; otherwise the list decides');
  t.same(trail, ['start lock', 'start log', 'start bus with log of log', 'start agents with bus of bus', 'start edges with agents of agents,bus of bus']);
  t.equal(started.get(AGENTS), 'agents of agents', 'what a part provides is there for the root');
  trail.length = 0;
  await started.stop();
  t.same(trail, ['stop edges', 'stop agents', 'stop bus', 'stop log', 'stop lock'], 'stop runs the computed order backwards');
  t.throws(() => started.get(AGENTS), { code: 'subsystem-wiring', message: /agents/ }, 'nothing is provided once stopped');
});

await t.test('a need nobody provides is refused before anything starts, naming the part and the need', async (t) => {
  const trail: string[] = [];
  const p = probe(trail);
  await t.rejects(startSubsystems([p('lock'), p('log', { provides: [LOG] }), p('agents', { needs: [LOG, BUS] })]), {
    code: 'subsystem-wiring',
    message: 'subsystem agents needs bus, which no subsystem provides',
  });
  t.same(trail, [], 'not even the lock was taken');
  const late = part({ name: 'admin-ops', later: { hub: key<string>('task hub') }, start: () => undefined });
  t.throws(() => orderParts([late]), { code: 'subsystem-wiring', message: 'subsystem admin-ops needs task hub, which no subsystem provides' }, 'a `later` need must have a provider too');
});

await t.test('needs that form a cycle are refused, naming the cycle', async (t) => {
  const trail: string[] = [];
  const p = probe(trail);
  const WORKFLOWS = key<string>('workflows');
  await t.rejects(startSubsystems([p('lock'), p('bus', { provides: [BUS] }), p('agents', { needs: [BUS, WORKFLOWS], provides: [AGENTS] }), p('workflows', { needs: [AGENTS], provides: [WORKFLOWS] }), p('edges', { needs: [AGENTS] })]), {
    code: 'subsystem-wiring',
    message: 'subsystems need each other in a cycle: agents needs workflows from workflows needs agents from agents',
  });
  t.same(trail, []);
  t.throws(() => orderParts([p('a', { needs: [LOG], provides: [BUS] }), p('b', { needs: [BUS], provides: [AGENTS] }), p('c', { needs: [AGENTS], provides: [LOG] })]), {
    message: 'subsystems need each other in a cycle: a needs log from c needs agents from b needs bus from a',
  });
  t.throws(() => orderParts([p('a', { needs: [LOG], provides: [LOG] })]), { message: 'subsystems need each other in a cycle: a needs log from a' }, 'a part needing what it provides itself');
});

await t.test('two providers of one thing, or a part that does not provide what it declared, are refused', async (t) => {
  const p = probe([]);
  t.throws(() => orderParts([p('a', { provides: [LOG] }), p('b', { provides: [LOG] })]), { code: 'subsystem-wiring', message: 'log is provided by both a and b' });
  t.throws(() => orderParts([p('a', { provides: [LOG] })], [LOG]), { message: 'log is provided by both the composition root and a' });
  const liar = part({ name: 'liar', provides: { log: LOG }, start: () => ({ provide: {} as { log: string } }) });
  const trail: string[] = [];
  await t.rejects(startSubsystems([probe(trail)('lock'), liar]), { code: 'subsystem-wiring', message: 'subsystem liar started without providing log' });
  t.same(trail, ['start lock', 'stop lock'], 'what started is stopped again');
});

await t.test('a `later` need reads null until its provider starts, its value while it runs, null again once it stops', async (t) => {
  const HUB = key<string>('task hub');
  const seen: (string | null)[] = [];
  let readHub: () => string | null = () => 'never read';
  const ops = part({
    name: 'admin-ops',
    later: { hub: HUB },
    start(_, later) {
      readHub = later.hub;
      seen.push(later.hub());
    },
  });
  const hub = part({
    name: 'task-hub',
    provides: { hub: HUB },
    start: () => ({
      provide: { hub: 'the hub' },
      stop: () => void seen.push(readHub()),
    }),
  });
  const started = await startSubsystems([ops, hub]);
  t.same(started.names, ['admin-ops', 'task-hub'], 'a later need adds no start-order edge');
  seen.push(readHub());
  await started.stop();
  seen.push(readHub());
  t.same(seen, [null, 'the hub', null, null], 'withdrawn before its provider stops');
});

await t.test('seeds are there from the start', async (t) => {
  const seen: string[] = [];
  const user = part({ name: 'user', needs: { log: LOG }, start: ({ log }) => void seen.push(log) });
  await (await startSubsystems([user], [seed(LOG, 'seeded log')])).stop();
  t.same(seen, ['seeded log']);
});

await t.test('a failed start stops those already started, in reverse, and throws the start error', async (t) => {
  const trail: string[] = [];
  const p = probe(trail);
  await t.rejects(startSubsystems([p('lock'), p('config', { noStop: true }), p('log', { async: true }), p('agents', { failStart: true }), p('edges')]), /agents would not start/);
  t.same(trail, ['start lock', 'start config', 'start log', 'stop log', 'stop lock'], 'edges never started; nothing left running');
});

await t.test('a stop that fails is reported and the rest still stop', async (t) => {
  const trail: string[] = [];
  const p = probe(trail);
  const failures: string[] = [];
  const started = await startSubsystems([p('a'), p('b', { failStop: true }), p('c')], [], (name, e) => failures.push(`${name}: ${(e as Error).message}`));
  trail.length = 0;
  await started.stop();
  t.same(trail, ['stop c', 'stop b', 'stop a']);
  t.same(failures, ['b: b would not stop']);
});

await t.test('a failed start whose unwinding also fails still throws the start error', async (t) => {
  const trail: string[] = [];
  const p = probe(trail);
  const failures: string[] = [];
  await t.rejects(startSubsystems([p('a'), p('b', { failStop: true }), p('c', { failStart: true })], [], (name) => failures.push(name)), /c would not start/);
  t.same(trail, ['start a', 'start b', 'stop b', 'stop a']);
  t.same(failures, ['b']);
});

await t.test("the daemon's subsystems: wired completely, in the order they have always started", async (t) => {
  const names = orderParts(DAEMON_SUBSYSTEMS, [OPTIONS, PATHS, HOST_ENV, START_CORRELATION, LIFECYCLE]).map((s) => s.name);
  t.same(names, [
    'pid-lock',
    'config-file',
    'event-log',
    'bus',
    'actor-host',
    'daemon',
    'config',
    'registry',
    'users-file',
    'main-agent-token',
    'model-cache',
    'notifications',
    'chat-delivery',
    'chat-sessions',
    'admin-agents',
    'content-admin',
    'admin-ops',
    'orphan-recovery',
    'transcription',
    'fileshare',
    'agents',
    'skill-sync',
    'task-hub',
    'workflows',
    'cron',
    'cleanup',
    'memory-maintenance',
    'heartbeat',
    'internal-api',
    'users',
    'messengers',
    'api-server',
    'webhook-recovery',
    'webhook-server',
  ]);
  // The same constraints hold whatever order the list is written in: they come from the declarations.
  const reversed = orderParts([...DAEMON_SUBSYSTEMS].reverse(), [OPTIONS, PATHS, HOST_ENV, START_CORRELATION, LIFECYCLE]).map((s) => s.name);
  const before = (a: string, b: string) => t.ok(reversed.indexOf(a) < reversed.indexOf(b), `${a} before ${b}`);
  t.equal(reversed[0], 'pid-lock', 'nothing may append before the lock is held');
  before('event-log', 'bus');
  before('orphan-recovery', 'agents');
  before('fileshare', 'agents');
  for (const onAgents of ['task-hub', 'workflows', 'cron', 'heartbeat', 'skill-sync', 'messengers']) before('agents', onAgents);
  before('task-hub', 'internal-api');
  before('cron', 'webhook-recovery');
  before('webhook-recovery', 'webhook-server');
  before('users', 'api-server');
  t.throws(() => orderParts(DAEMON_SUBSYSTEMS), { code: 'subsystem-wiring', message: 'subsystem pid-lock needs paths, which no subsystem provides' }, 'the root hands in what no part provides');
});
