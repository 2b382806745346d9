import t from 'tap';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { PROJECTIONS, SqliteEventLog } from '../../store/index.js';
import { until } from '../fixtures/until.js';

await t.test('background checkpoints: the writer never checkpoints, the worker folds the WAL into the file', async (t) => {
  const path = join(t.testdir(), 'events.db');
  const errors: string[] = [];
  const log = SqliteEventLog.open(path, { projections: PROJECTIONS, backgroundCheckpoints: { onError: (m) => errors.push(m) } });
  t.equal(log.projectionDb().pragma('wal_autocheckpoint', { simple: true }), 0, 'no checkpoint inside a commit');
  const before = statSync(path).size;
  const data = { note: 'x'.repeat(500) };
  for (let i = 0; i < 40; i++) log.append(Array.from({ length: 100 }, (_, j) => ({ stream: `s:${j % 7}`, type: 'test.filled', data })), new Date().toISOString());
  // The checkpoint runs in a worker thread that tells nothing: the file's size is what shows it.
  await until('pages to reach the database file without the writer checkpointing', () => statSync(path).size > before, 15_000);
  t.ok(statSync(path).size > before, 'pages reached the database file without the writer checkpointing');
  await log.stopCheckpoints();
  await log.stopCheckpoints();
  log.close();
  t.same(errors, []);
  const reread = SqliteEventLog.open(path, { readonly: true });
  t.equal(reread.lastSeq(), 4000, 'every event is there after the final checkpoint');
  reread.close();
});

await t.test('the WAL stays bounded under sustained writes: past its threshold it is truncated while commits keep coming', async (t) => {
  const path = join(t.testdir(), 'events.db');
  const bound = 1024 * 1024;
  const errors: string[] = [];
  let truncations = 0;
  const log = SqliteEventLog.open(path, {
    projections: PROJECTIONS,
    backgroundCheckpoints: { onError: (m) => errors.push(m), intervalMs: 20, truncateAtBytes: bound, onTruncate: (done) => void (done && truncations++) },
  });
  t.equal(log.projectionDb().pragma('journal_size_limit', { simple: true }), bound, 'the writer cuts a wrapped WAL back too');
  const walSize = () => {
    try {
      return statSync(`${path}-wal`).size;
    } catch {
      return 0;
    }
  };
  const data = { note: 'x'.repeat(500) };
  const at = () => new Date().toISOString();
  let appended = 0;
  let peak = 0;
  let drops = 0;
  // Bounded: 400 batches of 100 events (~25 MB of WAL frames without checkpoints).
  for (let batch = 0; batch < 400 && drops < 3; batch++) {
    log.append(Array.from({ length: 100 }, (_, j) => ({ stream: `s:${j % 7}`, type: 'test.filled', data })), at());
    appended += 100;
    peak = Math.max(peak, walSize());
    if (walSize() <= 3 * bound) continue;
    // Past three times the bound: it must come back under it while a trickle of commits goes on
    // (before journal_size_limit and TRUNCATE it never did: PASSIVE left the file at its high-water mark).
    // Each check commits one small batch (the trickle), at most 2,000 per wait, then just watches.
    let trickle = 0;
    await until(
      () => `the WAL back under ${bound} bytes (at ${walSize()} after ${trickle} trickle commits; peak ${peak}, ${truncations} TRUNCATE checkpoints)`,
      () => {
        if (walSize() <= bound) return true;
        if (trickle++ < 2000) {
          log.append([{ stream: 's:trickle', type: 'test.filled', data: { n: appended } }], at());
          appended++;
        }
        return false;
      },
      10_000,
    );
    drops++;
  }
  t.equal(drops, 3, `the WAL came back under the bound three times (peak ${peak} bytes, ${truncations} TRUNCATE checkpoints)`);
  await log.stopCheckpoints();
  log.close();
  t.same(errors, []);
  const reread = SqliteEventLog.open(path, { readonly: true });
  t.equal(reread.lastSeq(), appended, 'nothing was lost to the truncations');
  reread.close();
});
