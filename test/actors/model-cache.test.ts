import t, { type Test } from 'tap';
import { chmodSync, existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  MODEL_CACHE_CHECK_INTERVAL_MS,
  MODEL_CACHE_MAX_AGE_MS,
  MODEL_CACHE_POLICY,
  ModelCacheRefresher,
  isCacheFresh,
  modelCachePath,
  readModelCache,
  syncModelCache,
  type CachedProvider,
  type IntervalTimers,
  type ModelCacheResult,
} from '../../actors/index.js';
import { until } from '../fixtures/until.js';

const DAY = MODEL_CACHE_MAX_AGE_MS;
const T0 = 1_800_000_000_000;

interface Rig {
  configDir: string;
  paths: { configDir: string };
  clock: { now: number };
  calls: CachedProvider[];
  lists: Record<CachedProvider, string[] | Error>;
  opts: { paths: { configDir: string }; now: () => number; fetchModels: (p: CachedProvider) => Promise<string[]> };
  write(p: CachedProvider, content: unknown): void;
  read(p: CachedProvider): unknown;
}

function rig(t: Test): Rig {
  const configDir = join(t.testdir({}), 'config');
  const clock = { now: T0 };
  const calls: CachedProvider[] = [];
  const lists: Record<CachedProvider, string[] | Error> = { codex: ['gpt-new'], gemini: ['auto', 'gemini-new'] };
  const paths = { configDir };
  return {
    configDir,
    paths,
    clock,
    calls,
    lists,
    opts: {
      paths,
      now: () => clock.now,
      fetchModels: async (p) => {
        calls.push(p);
        const l = lists[p];
        if (l instanceof Error) throw l;
        return l;
      },
    },
    write(p, content) {
      mkdirSync(configDir, { recursive: true });
      writeFileSync(modelCachePath(paths, p), typeof content === 'string' ? content : JSON.stringify(content));
    },
    read(p) {
      return JSON.parse(readFileSync(modelCachePath(paths, p), 'utf8'));
    },
  };
}

await t.test('policy table and paths', async (t) => {
  t.same(MODEL_CACHE_POLICY, { codex: { startup: 'always', hourly: 'when-stale' }, gemini: { startup: 'when-stale', hourly: 'always' } });
  t.equal(MODEL_CACHE_CHECK_INTERVAL_MS, 3_600_000);
  t.equal(modelCachePath({ configDir: '/h/.svc/config' }, 'codex'), '/h/.svc/config/codex_models.json');
  t.equal(modelCachePath({ configDir: '/h/.svc/config' }, 'gemini'), '/h/.svc/config/gemini_models.json');
});

await t.test('freshness: younger than 24 h; exactly 24 h and future timestamps are stale', async (t) => {
  t.equal(isCacheFresh({ fetched_at: T0 }, T0), true);
  t.equal(isCacheFresh({ fetched_at: T0 }, T0 + DAY - 1), true);
  t.equal(isCacheFresh({ fetched_at: T0 }, T0 + DAY), false);
  t.equal(isCacheFresh({ fetched_at: T0 }, T0 + DAY + 1), false);
  t.equal(isCacheFresh({ fetched_at: T0 + 1 }, T0), false, 'written in the future: not trusted');
});

await t.test('readModelCache: missing, ok, and every kind of corrupt', async (t) => {
  const r = rig(t);
  const path = modelCachePath(r.paths, 'codex');
  t.same(readModelCache(path, 'codex'), { state: 'missing' });
  r.write('codex', { provider: 'codex', fetched_at: T0, models: [' gpt-a ', 'gpt-b', 'gpt-a'] });
  t.same(readModelCache(path, 'codex'), { state: 'ok', cache: { provider: 'codex', fetched_at: T0, models: ['gpt-a', 'gpt-b'] } });
  for (const [what, content] of [
    ['not JSON', '{"provider": "codex", '],
    ['empty', ''],
    ['array', '[]'],
    ['other provider', { provider: 'gemini', fetched_at: T0, models: [] }],
    ['fetched_at a string', { provider: 'codex', fetched_at: '2026-01-01', models: [] }],
    ['fetched_at negative', { provider: 'codex', fetched_at: -1, models: [] }],
    ['fetched_at fractional', { provider: 'codex', fetched_at: 1.5, models: [] }],
    ['models not a list', { provider: 'codex', fetched_at: T0, models: 'gpt-a' }],
    ['a model not a string', { provider: 'codex', fetched_at: T0, models: ['gpt-a', 7] }],
    ['an empty model id', { provider: 'codex', fetched_at: T0, models: [''] }],
    ['too many models', { provider: 'codex', fetched_at: T0, models: Array.from({ length: 1001 }, (_, i) => `m${i}`) }],
    ['oversized file', JSON.stringify({ provider: 'codex', fetched_at: T0, models: ['x'], pad: 'y'.repeat(1024 * 1024) })],
  ] as const) {
    r.write('codex', content);
    t.equal(readModelCache(path, 'codex').state, 'corrupt', what);
  }
  const dirPath = modelCachePath(r.paths, 'gemini');
  mkdirSync(dirPath);
  t.match(readModelCache(dirPath, 'gemini'), { state: 'corrupt', reason: /not a regular file/ });
});

await t.test('codex at startup: always refreshed, even when the cache is fresh', async (t) => {
  const r = rig(t);
  r.write('codex', { provider: 'codex', fetched_at: T0 - 1000, models: ['gpt-old'] });
  const res = await syncModelCache('codex', 'startup', r.opts);
  t.match(res, { provider: 'codex', models: ['gpt-new'], fetched_at: T0, action: 'refreshed', reason: 'forced' });
  t.same(r.read('codex'), { provider: 'codex', fetched_at: T0, models: ['gpt-new'] });
  t.same(r.calls, ['codex']);
  t.equal(statSync(modelCachePath(r.paths, 'codex')).mode & 0o777, 0o644);
  t.same(readdirSync(r.configDir).filter((f) => f.endsWith('.tmp')), [], 'no temp files left behind');
});

await t.test('codex hourly: reused while younger than 24 h, refreshed at exactly 24 h, missing or corrupt', async (t) => {
  const r = rig(t);
  r.write('codex', { provider: 'codex', fetched_at: T0, models: ['gpt-old'] });
  r.clock.now = T0 + DAY - 1;
  t.match(await syncModelCache('codex', 'hourly', r.opts), { models: ['gpt-old'], fetched_at: T0, action: 'reused', reason: 'fresh' });
  t.same(r.calls, [], 'no fetch for a fresh cache');

  r.clock.now = T0 + DAY;
  t.match(await syncModelCache('codex', 'hourly', r.opts), { models: ['gpt-new'], fetched_at: T0 + DAY, action: 'refreshed', reason: 'stale' });
  t.same(r.read('codex'), { provider: 'codex', fetched_at: T0 + DAY, models: ['gpt-new'] });

  const m = rig(t);
  t.match(await syncModelCache('codex', 'hourly', m.opts), { action: 'refreshed', reason: 'missing' });
  t.ok(existsSync(modelCachePath(m.paths, 'codex')), 'missing cache (and its directory) created');

  const c = rig(t);
  c.write('codex', '{"provider": "codex", "fetch');
  t.match(await syncModelCache('codex', 'hourly', c.opts), { action: 'refreshed', reason: 'corrupt', models: ['gpt-new'] });
  t.same(c.read('codex'), { provider: 'codex', fetched_at: T0, models: ['gpt-new'] }, 'corrupt cache rewritten');
});

await t.test('gemini at startup: fresh cache used, stale or missing or corrupt refreshed; hourly always refreshes', async (t) => {
  const r = rig(t);
  r.write('gemini', { provider: 'gemini', fetched_at: T0 - 5, models: ['auto', 'gemini-old'] });
  t.match(await syncModelCache('gemini', 'startup', r.opts), { models: ['auto', 'gemini-old'], action: 'reused', reason: 'fresh' });
  t.same(r.calls, []);
  r.clock.now = T0 - 5 + DAY;
  t.match(await syncModelCache('gemini', 'startup', r.opts), { models: ['auto', 'gemini-new'], action: 'refreshed', reason: 'stale' });

  r.clock.now += 60_000;
  t.match(await syncModelCache('gemini', 'hourly', r.opts), { action: 'refreshed', reason: 'forced', fetched_at: r.clock.now });
  t.same(r.calls, ['gemini', 'gemini']);

  const m = rig(t);
  t.match(await syncModelCache('gemini', 'startup', m.opts), { action: 'refreshed', reason: 'missing' });
  const c = rig(t);
  c.write('gemini', { provider: 'codex', fetched_at: T0, models: [] });
  t.match(await syncModelCache('gemini', 'startup', c.opts), { action: 'refreshed', reason: 'corrupt' });
  t.same(c.read('gemini'), { provider: 'gemini', fetched_at: T0, models: ['auto', 'gemini-new'] });
});

await t.test('a failing or empty source keeps the old list and does not touch the file', async (t) => {
  const r = rig(t);
  r.write('codex', { provider: 'codex', fetched_at: T0 - 10, models: ['gpt-old'] });
  const before = readFileSync(modelCachePath(r.paths, 'codex'), 'utf8');
  r.lists.codex = new Error('codex cache unreadable');
  t.match(await syncModelCache('codex', 'startup', r.opts), { models: ['gpt-old'], fetched_at: T0 - 10, action: 'kept', error: /model source failed: codex cache unreadable/ });
  r.lists.codex = [];
  t.match(await syncModelCache('codex', 'startup', r.opts), { action: 'kept', error: /found no models/ });
  r.lists.codex = ['ok', 'has space'];
  t.match(await syncModelCache('codex', 'startup', r.opts), { action: 'kept', error: /not a list of model ids/ });
  t.equal(readFileSync(modelCachePath(r.paths, 'codex'), 'utf8'), before, 'file unchanged');

  const none = rig(t);
  none.lists.gemini = new Error('boom');
  t.match(await syncModelCache('gemini', 'startup', none.opts), { models: [], fetched_at: null, action: 'failed', reason: 'missing' });
  t.notOk(existsSync(modelCachePath(none.paths, 'gemini')), 'nothing written');
});

await t.test('an unwritable config dir still serves the fetched list, with the error', async (t) => {
  if (process.getuid?.() === 0) {
    // root ignores directory permissions; use a file where the directory should be instead.
    const root = t.testdir({ config: 'a file, not a directory' });
    const res = await syncModelCache('codex', 'startup', { paths: { configDir: join(root, 'config') }, now: () => T0, fetchModels: async () => ['gpt-a'] });
    t.match(res, { action: 'refreshed', models: ['gpt-a'], error: /could not write the cache/ });
    return;
  }
  const root = t.testdir({ config: {} });
  chmodSync(join(root, 'config'), 0o500);
  t.teardown(() => chmodSync(join(root, 'config'), 0o700));
  const res = await syncModelCache('codex', 'startup', { paths: { configDir: join(root, 'config') }, now: () => T0, fetchModels: async () => ['gpt-a'] });
  t.match(res, { action: 'refreshed', models: ['gpt-a'], error: /could not write the cache/ });
});

class FakeTimers implements IntervalTimers {
  armed: { fn: () => void; ms: number }[] = [];
  cleared = 0;
  setInterval(fn: () => void, ms: number): unknown {
    const h = { fn, ms };
    this.armed.push(h);
    return h;
  }
  clearInterval(h: unknown): void {
    this.armed = this.armed.filter((x) => x !== h);
    this.cleared++;
  }
  fire(): void {
    for (const h of this.armed) h.fn();
  }
}

await t.test('ModelCacheRefresher: startup rules, hourly timer, stop', async (t) => {
  const r = rig(t);
  r.write('gemini', { provider: 'gemini', fetched_at: T0 - 1, models: ['auto', 'gemini-cached'] });
  const timers = new FakeTimers();
  const seen: ModelCacheResult[] = [];
  const refresher = new ModelCacheRefresher({ ...r.opts, timers, onResult: (res) => seen.push(res) });
  t.equal(refresher.running, false);

  const startup = await refresher.start();
  t.same(startup.map((x) => [x.provider, x.action, x.reason]), [['codex', 'refreshed', 'forced'], ['gemini', 'reused', 'fresh']]);
  t.equal(refresher.start(), refresher.start(), 'start twice: the same run');
  t.same(r.calls, ['codex']);
  t.same(refresher.models('codex'), ['gpt-new']);
  t.same(refresher.models('gemini'), ['auto', 'gemini-cached']);
  t.equal(refresher.running, true);
  t.equal(timers.armed.length, 1);
  t.equal(timers.armed[0]!.ms, MODEL_CACHE_CHECK_INTERVAL_MS, 'checked hourly');

  // An hour later: codex still fresh (reused), gemini refreshed regardless.
  r.clock.now = T0 + MODEL_CACHE_CHECK_INTERVAL_MS;
  r.lists.gemini = ['auto', 'gemini-upgraded'];
  timers.fire();
  await refresher.tick(); // joins the run the timer started
  t.same(r.calls, ['codex', 'gemini']);
  t.same(refresher.models('gemini'), ['auto', 'gemini-upgraded']);
  t.match(refresher.lastResult('codex'), { action: 'reused' });

  // A day after the startup refresh codex is stale and refreshed by the hourly check.
  r.clock.now = T0 + DAY;
  r.lists.codex = ['gpt-next'];
  await refresher.tick();
  t.same(refresher.models('codex'), ['gpt-next']);
  t.same(seen.map((x) => x.provider), ['codex', 'gemini', 'codex', 'gemini', 'codex', 'gemini'], 'every result reported');

  await refresher.stop();
  t.equal(refresher.running, false);
  t.equal(timers.armed.length, 0, 'timer cleared');
  const callsBefore = r.calls.length;
  t.same(await refresher.tick(), [], 'no check after stop');
  t.equal(r.calls.length, callsBefore);
});

await t.test('ModelCacheRefresher: overlapping checks share one run; stop during startup arms nothing', async (t) => {
  const r = rig(t);
  let release!: () => void;
  const gate = new Promise<void>((res) => (release = res));
  const timers = new FakeTimers();
  const slow = new ModelCacheRefresher({
    ...r.opts,
    timers,
    fetchModels: async (p) => {
      r.calls.push(p);
      await gate;
      return p === 'codex' ? ['gpt-slow'] : ['auto'];
    },
  });
  const starting = slow.start();
  // Stop resolves once the startup it interrupts has finished, which needs the gate opened first.
  const stopped = slow.stop();
  release();
  await starting;
  await stopped;
  t.equal(timers.armed.length, 0, 'stopped before startup finished: no timer');
  t.equal(slow.running, false);

  const again = new ModelCacheRefresher({ ...r.opts, timers, onResult: () => { throw new Error('listener bug'); } });
  await again.start();
  const a = again.tick();
  const b = again.tick();
  t.equal(a, b, 'a check still running is joined, not doubled');
  await a;
  await again.stop();
});

await t.test('ModelCacheRefresher with real timers: fires on its interval', async (t) => {
  const r = rig(t);
  const results: ModelCacheResult[] = [];
  const refresher = new ModelCacheRefresher({ ...r.opts, intervalMs: 10, onResult: (x) => results.push(x) });
  t.teardown(() => refresher.stop());
  await refresher.start();
  // Polled, not awaited on onResult: the refresher's timers are unref'd, so a bare promise would let the test's process exit.
  await until(() => `four checks on the interval (${results.length} so far)`, () => results.length >= 4, 5000);
  // Awaited: a check still writing its cache file would race the removal of the test's directory.
  await refresher.stop();
  t.equal(refresher.running, false);
  t.ok(results.slice(2).every((x) => x.reason === 'forced' || x.action === 'reused'), 'hourly runs follow the hourly rules');
});
