import t from 'tap';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { PROJECTIONS, SqliteEventLog } from '../../store/index.js';

t.test('background checkpoints: the writer never checkpoints, the worker folds the WAL into the file', async (t) => {
  const path = join(t.testdir(), 'events.db');
  const errors: string[] = [];
  const log = SqliteEventLog.open(path, { projections: PROJECTIONS, backgroundCheckpoints: { onError: (m) => errors.push(m) } });
  t.equal(log.projectionDb().pragma('wal_autocheckpoint', { simple: true }), 0, 'no checkpoint inside a commit');
  const before = statSync(path).size;
  const data = { note: 'x'.repeat(500) };
  for (let i = 0; i < 40; i++) log.append(Array.from({ length: 100 }, (_, j) => ({ stream: `s:${j % 7}`, type: 'test.filled', data })), new Date().toISOString());
  const deadline = Date.now() + 15_000;
  while (statSync(path).size <= before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  t.ok(statSync(path).size > before, 'pages reached the database file without the writer checkpointing');
  await log.stopCheckpoints();
  await log.stopCheckpoints();
  log.close();
  t.same(errors, []);
  const reread = SqliteEventLog.open(path, { readonly: true });
  t.equal(reread.lastSeq(), 4000, 'every event is there after the final checkpoint');
  reread.close();
});

t.test('the WAL stays bounded under sustained writes: past its threshold it is truncated while commits keep coming', async (t) => {
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
    const deadline = Date.now() + 10_000;
    for (let trickle = 0; walSize() > bound; trickle++) {
      if (Date.now() > deadline) break;
      // At most 2,000 small commits per wait, then just watch: the loop stays bounded if the WAL never shrinks.
      if (trickle < 2000) {
        log.append([{ stream: 's:trickle', type: 'test.filled', data: { n: appended } }], at());
        appended++;
      }
      await new Promise((r) => setTimeout(r, trickle < 2000 ? 0 : 10));
    }
    if (walSize() > bound) break;
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
