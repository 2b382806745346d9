// The composition root's start/stop discipline: subsystems start in list order, stop in reverse,
// a failed start stops what already started, and a failed stop does not leave the rest running.
import t from 'tap';
import { startSubsystems, type Subsystem } from '../../bin/subsystems.js';
import { DAEMON_SUBSYSTEMS } from '../../bin/daemon-subsystems.js';

type Ctx = { trail: string[] };

// `async`: the part's start and stop really yield (a later turn of the loop), as opening a log or a socket does;
// the tests await startSubsystems and stop, never a number of turns.
const part = (name: string, opts: { failStart?: boolean; failStop?: boolean; noStop?: boolean; async?: boolean } = {}): Subsystem<Ctx> => ({
  name,
  async start(ctx) {
    if (opts.async) await new Promise((r) => setImmediate(r));
    if (opts.failStart) throw new Error(`${name} would not start`);
    ctx.trail.push(`start ${name}`);
    if (opts.noStop) return;
    return async () => {
      if (opts.async) await new Promise((r) => setImmediate(r));
      ctx.trail.push(`stop ${name}`);
      if (opts.failStop) throw new Error(`${name} would not stop`);
    };
  },
});

await t.test('started in order, stopped in reverse order, once', async (t) => {
  const ctx: Ctx = { trail: [] };
  const started = await startSubsystems([part('lock'), part('log', { async: true }), part('bus'), part('edges', { async: true })], ctx);
  t.same(started.names, ['lock', 'log', 'bus', 'edges']);
  t.same(ctx.trail, ['start lock', 'start log', 'start bus', 'start edges']);
  ctx.trail.length = 0;
  const first = started.stop();
  const second = started.stop();
  await Promise.all([first, second]);
  await started.stop();
  t.same(ctx.trail, ['stop edges', 'stop bus', 'stop log', 'stop lock'], 'each stops once, last started first');
});

await t.test('a failed start stops those already started, in reverse, and throws the start error', async (t) => {
  const ctx: Ctx = { trail: [] };
  await t.rejects(startSubsystems([part('lock'), part('config', { noStop: true }), part('log', { async: true }), part('agents', { failStart: true }), part('edges')], ctx), /agents would not start/);
  t.same(ctx.trail, ['start lock', 'start config', 'start log', 'stop log', 'stop lock'], 'edges never started; nothing left running');
});

await t.test('a stop that fails is reported and the rest still stop', async (t) => {
  const ctx: Ctx = { trail: [] };
  const failures: string[] = [];
  const started = await startSubsystems([part('a'), part('b', { failStop: true }), part('c')], ctx, (name, e) => failures.push(`${name}: ${(e as Error).message}`));
  ctx.trail.length = 0;
  await started.stop();
  t.same(ctx.trail, ['stop c', 'stop b', 'stop a']);
  t.same(failures, ['b: b would not stop']);
});

await t.test('a failed start whose unwinding also fails still throws the start error', async (t) => {
  const ctx: Ctx = { trail: [] };
  const failures: string[] = [];
  await t.rejects(startSubsystems([part('a'), part('b', { failStop: true }), part('c', { failStart: true })], ctx, (name) => failures.push(name)), /c would not start/);
  t.same(ctx.trail, ['start a', 'start b', 'stop b', 'stop a']);
  t.same(failures, ['b']);
});

await t.test("the daemon's subsystems: lock first, edges last, every name once", async (t) => {
  const names = DAEMON_SUBSYSTEMS.map((s) => s.name);
  t.equal(new Set(names).size, names.length);
  t.equal(names[0], 'pid-lock', 'nothing may append before the lock is held');
  t.ok(names.indexOf('event-log') < names.indexOf('bus'), 'nothing may publish before the log is open');
  t.ok(names.indexOf('agents') < names.indexOf('internal-api') && names.indexOf('internal-api') < names.indexOf('api-server'), 'edges stop first, before the agents they talk to');
});
