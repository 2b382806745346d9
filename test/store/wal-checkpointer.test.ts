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
