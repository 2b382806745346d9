import t from 'tap';
import * as fs from 'node:fs';
import { join } from 'node:path';
import { SimulatedClock } from 'xstate';
import { DailyJob, cleanFolder, emptyTotals, runCleanup } from '../../actors/index.js';
import { Bus } from '../../bus/index.js';
import { nextDailyRun, planCleanup, type ListedEntry } from '../../machines/index.js';
import { CLEANUP_EVENTS, type CleanupConfig } from '../../schemas/index.js';
import { MemoryEventLog } from '../../store/index.js';

const DAY = 86_400_000;
const NOW = Date.parse('2026-11-27T03:00:00.000Z');
const OLD = NOW - 40 * DAY;
const FRESH = NOW - 2 * DAY;

const e = (path: string, kind: ListedEntry['kind'], mtimeMs: number, size = 10): ListedEntry => ({ path, kind, mtimeMs, size });

await t.test('planCleanup: given a listing and now, which entries go', async (t) => {
  await t.test('old files and links go, fresh ones stay; a folder emptied in this run is pruned, deepest first', async (t) => {
    const plan = planCleanup(
      [
        e('2026-10-01', 'dir', FRESH),
        e('2026-10-01/a.pdf', 'file', OLD),
        e('2026-10-01/sub', 'dir', FRESH),
        e('2026-10-01/sub/b.txt', 'file', OLD),
        e('2026-11-25', 'dir', FRESH),
        e('2026-11-25/new.txt', 'file', FRESH),
        e('2026-11-25/old-link', 'symlink', OLD),
        e('top.txt', 'file', OLD),
      ],
      NOW,
      30,
    );
    t.same(plan.remove.map((x) => x.path), ['2026-10-01/a.pdf', '2026-10-01/sub/b.txt', '2026-11-25/old-link', 'top.txt']);
    t.same(plan.prune, ['2026-10-01/sub', '2026-10-01']);
  });
  await t.test('an empty folder is pruned only when old; a fresh one may be about to be written into', async (t) => {
    const plan = planCleanup([e('fresh-empty', 'dir', FRESH), e('old-empty', 'dir', OLD)], NOW, 30);
    t.same(plan.prune, ['old-empty']);
  });
  await t.test('sockets and FIFOs stay, and so does the folder holding one', async (t) => {
    const plan = planCleanup([e('d', 'dir', OLD), e('d/sock', 'other', OLD)], NOW, 30);
    t.same(plan, { remove: [], prune: [] });
  });
  await t.test('0 days keeps everything', async (t) => {
    t.same(planCleanup([e('a', 'file', 0)], NOW, 0), { remove: [], prune: [] });
  });
});

await t.test('nextDailyRun: the next check hour in the user zone, across DST', async (t) => {
  t.equal(nextDailyRun(Date.parse('2026-11-27T02:59:00Z'), 3, 'UTC'), Date.parse('2026-11-27T03:00:00Z'));
  t.equal(nextDailyRun(Date.parse('2026-11-27T03:00:00Z'), 3, 'UTC'), Date.parse('2026-11-28T03:00:00Z'));
  // Berlin is UTC+1 in winter: 03:00 local is 02:00Z.
  t.equal(nextDailyRun(Date.parse('2026-11-27T05:00:00Z'), 3, 'Europe/Berlin'), Date.parse('2026-11-28T02:00:00Z'));
  // Spring forward (2026-03-29): 02:30 does not exist and runs when the clock jumps to 03:00 (01:00Z).
  t.equal(nextDailyRun(Date.parse('2026-03-28T23:00:00Z'), 2, 'Europe/Berlin'), Date.parse('2026-03-29T01:00:00Z'));
});

function setAge(path: string, ms: number): void {
  const s = ms / 1000;
  fs.lutimesSync(path, s, s);
}

/** A workspace with output_to_user/ and api_files/ and a secret outside it, under `base`. */
function workspace(base: string, name = 'a') {
  const root = join(base, name);
  const outside = join(root, 'outside');
  fs.mkdirSync(join(outside, 'dir'), { recursive: true });
  fs.writeFileSync(join(outside, 'secret.txt'), 'keep me');
  fs.writeFileSync(join(outside, 'dir', 'inner.txt'), 'keep me too');
  const ws = join(root, 'ws');
  fs.mkdirSync(join(ws, 'output_to_user'), { recursive: true });
  fs.mkdirSync(join(ws, 'api_files'));
  return { root, ws, out: join(ws, 'output_to_user'), api: join(ws, 'api_files'), outside };
}

const CFG: CleanupConfig = { enabled: true, media_files_days: 30, output_to_user_days: 30, api_files_days: 30, check_hour: 3 };

await t.test('cleaning real folders', async (t) => {
  await t.test('old files, emptied dated upload folders and old links go; link targets outside stay', async (t) => {
    const w = workspace(t.testdir());
    fs.mkdirSync(join(w.api, '2026-10-01', 'nested'), { recursive: true });
    fs.writeFileSync(join(w.api, '2026-10-01', 'nested', 'a.bin'), 'x'.repeat(100));
    fs.writeFileSync(join(w.api, '2026-10-01', 'b.bin'), 'y'.repeat(50));
    fs.mkdirSync(join(w.api, '2026-11-26'));
    fs.writeFileSync(join(w.api, '2026-11-26', 'fresh.bin'), 'z');
    fs.symlinkSync(join(w.outside, 'secret.txt'), join(w.out, 'link-to-file'));
    fs.symlinkSync(join(w.outside, 'dir'), join(w.out, 'link-to-dir'));
    fs.symlinkSync(join(w.outside, 'dir'), join(w.out, 'fresh-link-to-dir'));
    fs.writeFileSync(join(w.outside, 'dir', 'old.txt'), 'old but outside');
    for (const p of [join(w.api, '2026-10-01', 'nested', 'a.bin'), join(w.api, '2026-10-01', 'b.bin'), join(w.out, 'link-to-file'), join(w.out, 'link-to-dir'), join(w.outside, 'dir', 'old.txt'), join(w.outside, 'secret.txt')]) setAge(p, OLD);
    setAge(join(w.api, '2026-11-26', 'fresh.bin'), FRESH);
    setAge(join(w.out, 'fresh-link-to-dir'), FRESH);

    const log = new MemoryEventLog();
    const bus = new Bus({ log, clock: () => NOW });
    t.teardown(() => bus.close());
    const totals = await runCleanup({ bus, agents: () => ['main'], workspaceOf: () => w.ws, configOf: () => CFG }, NOW, 'test');

    t.notOk(fs.existsSync(join(w.api, '2026-10-01')), 'the emptied dated folder and its emptied subfolder are gone');
    t.ok(fs.existsSync(join(w.api, '2026-11-26', 'fresh.bin')));
    t.notOk(fs.existsSync(join(w.out, 'link-to-file')) || isLink(join(w.out, 'link-to-file')), 'an old link is removed itself');
    t.notOk(isLink(join(w.out, 'link-to-dir')));
    t.ok(isLink(join(w.out, 'fresh-link-to-dir')), 'a fresh link stays');
    t.equal(fs.readFileSync(join(w.outside, 'secret.txt'), 'utf8'), 'keep me', 'what a link pointed at is untouched');
    t.ok(fs.existsSync(join(w.outside, 'dir', 'old.txt')), 'a link to a folder is never descended');
    t.ok(fs.existsSync(w.api) && fs.existsSync(w.out), 'the cleaned folders themselves stay');
    t.match(totals, { workspaces: 1, files_removed: 2, links_removed: 2, dirs_removed: 2, bytes_freed: 150, skipped: 0, error_count: 0 });
    const facts = log.read({ stream: 'housekeeping' });
    t.equal(facts.length, 1, 'one summary fact per run');
    t.equal(facts[0]!.type, CLEANUP_EVENTS.ran);
    t.same(facts[0]!.data, totals);
  });

  await t.test('a cleaned folder that is itself a link is not followed', async (t) => {
    const w = workspace(t.testdir());
    fs.rmdirSync(w.out);
    fs.symlinkSync(join(w.outside, 'dir'), w.out);
    setAge(join(w.outside, 'dir', 'inner.txt'), OLD);
    const totals = emptyTotals();
    cleanFolder({ agent: 'main', dir: w.out, days: 30 }, NOW, totals);
    t.ok(fs.existsSync(join(w.outside, 'dir', 'inner.txt')));
    t.match(totals, { files_removed: 0, links_removed: 0 });
  });

  await t.test('race: a file replaced by a link to outside between listing and unlink is left alone', async (t) => {
    const w = workspace(t.testdir());
    const victim = join(w.out, 'report.pdf');
    fs.writeFileSync(victim, 'old report');
    setAge(victim, OLD);
    setAge(join(w.outside, 'secret.txt'), OLD);
    const totals = emptyTotals();
    cleanFolder({ agent: 'main', dir: w.out, days: 30 }, NOW, totals, {
      afterListing: () => {
        fs.unlinkSync(victim);
        fs.symlinkSync(join(w.outside, 'secret.txt'), victim);
        setAge(victim, OLD);
      },
    });
    t.ok(isLink(victim), 'the link that took the file\'s place is not the entry listed');
    t.equal(fs.readFileSync(join(w.outside, 'secret.txt'), 'utf8'), 'keep me');
    t.match(totals, { files_removed: 0, links_removed: 0, skipped: 1 });
  });

  await t.test('race: a folder replaced by a link to outside between listing and unlink is not gone through', async (t) => {
    const w = workspace(t.testdir());
    const dated = join(w.api, '2026-10-01');
    fs.mkdirSync(dated);
    fs.writeFileSync(join(dated, 'inner.txt'), 'old upload');
    setAge(join(dated, 'inner.txt'), OLD);
    setAge(join(w.outside, 'dir', 'inner.txt'), OLD);
    const totals = emptyTotals();
    cleanFolder({ agent: 'main', dir: w.api, days: 30 }, NOW, totals, {
      afterListing: () => {
        fs.rmSync(dated, { recursive: true });
        fs.symlinkSync(join(w.outside, 'dir'), dated);
      },
    });
    t.equal(fs.readFileSync(join(w.outside, 'dir', 'inner.txt'), 'utf8'), 'keep me too');
    t.ok(isLink(dated), 'the link is not rmdir\'d either');
    t.match(totals, { files_removed: 0, dirs_removed: 0 });
    t.ok(totals.skipped >= 2);
  });

  await t.test('race: a parent folder swapped for a link after the checks, before the unlink, sends nothing outside', async (t) => {
    const w = workspace(t.testdir());
    const dated = join(w.api, '2026-10-01');
    fs.mkdirSync(dated);
    fs.writeFileSync(join(dated, 'inner.txt'), 'old upload');
    setAge(join(dated, 'inner.txt'), OLD);
    const moved = join(w.api, 'moved');
    const totals = emptyTotals();
    const seen: string[] = [];
    cleanFolder({ agent: 'main', dir: w.api, days: 30 }, NOW, totals, {
      beforeRemove: (rel) => {
        seen.push(rel);
        if (rel !== '2026-10-01/inner.txt') return;
        // Every check has passed; the agent moves the folder and links its name to a same-named file outside.
        fs.renameSync(dated, moved);
        fs.symlinkSync(join(w.outside, 'dir'), dated);
      },
    });
    t.same(seen, ['2026-10-01/inner.txt'], 'the folder is not pruned: it is a link now');
    t.equal(fs.readFileSync(join(w.outside, 'dir', 'inner.txt'), 'utf8'), 'keep me too', 'the same-named file outside is untouched');
    t.notOk(fs.existsSync(join(moved, 'inner.txt')), 'the file listed is the one removed, wherever its folder went');
    t.ok(isLink(dated));
    t.match(totals, { files_removed: 1, error_count: 0 });
  });

  await t.test('race: a grandparent swapped for a link before an rmdir removes no empty folder outside', async (t) => {
    const w = workspace(t.testdir());
    const old = join(w.api, 'old');
    fs.mkdirSync(join(old, 'dir'), { recursive: true });
    fs.writeFileSync(join(old, 'dir', 'x.bin'), 'x');
    setAge(join(old, 'dir', 'x.bin'), OLD);
    const emptyOutside = join(w.outside, 'dir', 'dir');
    fs.mkdirSync(emptyOutside);
    const totals = emptyTotals();
    cleanFolder({ agent: 'main', dir: w.api, days: 30 }, NOW, totals, {
      beforeRemove: (rel) => {
        if (rel !== 'old/dir') return;
        fs.renameSync(old, join(w.api, 'moved'));
        fs.symlinkSync(join(w.outside, 'dir'), old);
      },
    });
    t.ok(fs.statSync(emptyOutside).isDirectory(), 'the empty folder outside stays');
    t.notOk(fs.existsSync(join(w.api, 'moved', 'dir')), 'the folder listed is the one pruned');
    t.equal(totals.error_count, 0);
  });

  await t.test('a file touched after the listing stays', async (t) => {
    const w = workspace(t.testdir());
    const f = join(w.out, 'busy.txt');
    fs.writeFileSync(f, 'x');
    setAge(f, OLD);
    const totals = emptyTotals();
    cleanFolder({ agent: 'main', dir: w.out, days: 30 }, NOW, totals, { afterListing: () => setAge(f, NOW) });
    t.ok(fs.existsSync(f));
    t.equal(totals.skipped, 1);
  });

  await t.test('disabled cleanup and sub-agent workspaces', async (t) => {
    const base = t.testdir();
    const a = workspace(base);
    const b = workspace(base, 'b');
    fs.writeFileSync(join(a.out, 'old.txt'), 'a');
    fs.writeFileSync(join(b.out, 'old.txt'), 'b');
    setAge(join(a.out, 'old.txt'), OLD);
    setAge(join(b.out, 'old.txt'), OLD);
    const bus = new Bus({ log: new MemoryEventLog(), clock: () => NOW });
    t.teardown(() => bus.close());
    const totals = await runCleanup(
      { bus, agents: () => ['main', 'helper'], workspaceOf: (n) => (n === 'main' ? a.ws : b.ws), configOf: (n) => (n === 'main' ? CFG : { ...CFG, enabled: false }) },
      NOW,
    );
    t.notOk(fs.existsSync(join(a.out, 'old.txt')));
    t.ok(fs.existsSync(join(b.out, 'old.txt')), 'a sub-agent with cleanup disabled keeps its files');
    t.match(totals, { workspaces: 1, files_removed: 1 });
  });
});

await t.test('DailyJob runs at the check hour on the injected clock, once a day, and stops', async (t) => {
  const clock = new SimulatedClock();
  clock.set(Date.parse('2026-11-27T01:00:00Z'));
  const runs: string[] = [];
  const job = new DailyJob({
    clock,
    now: () => clock.now(),
    hour: () => 3,
    timeZone: () => 'UTC',
    run: async (now) => void runs.push(new Date(now).toISOString()),
    onError: (m) => t.fail(m),
  });
  job.start();
  clock.increment(2 * 3_600_000 - 1);
  await job.idle();
  t.same(runs, []);
  clock.increment(1);
  await job.idle();
  t.same(runs, ['2026-11-27T03:00:00.000Z']);
  clock.increment(DAY);
  await job.idle();
  t.same(runs, ['2026-11-27T03:00:00.000Z', '2026-11-28T03:00:00.000Z']);
  await job.stop();
  clock.increment(DAY);
  await job.idle();
  t.equal(runs.length, 2, 'nothing runs after stop');
});

function isLink(p: string): boolean {
  try {
    return fs.lstatSync(p).isSymbolicLink();
  } catch {
    return false;
  }
}
