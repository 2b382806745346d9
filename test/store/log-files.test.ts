import t from 'tap';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { formatLogLine } from '../../actors/index.js';
import { MAX_LOG_SCAN_BYTES, logRecordAgent, readLogTail } from '../../store/index.js';

const T0 = Date.parse('2026-11-22T10:00:00.000Z');
const all = () => true;

await t.test('lines come back whole across 64 KiB read chunks, multi-byte characters included', async (t) => {
  const dir = t.testdir();
  mkdirSync(join(dir, 'logs'));
  const msgs = Array.from({ length: 40 }, (_, i) => `${i} ${'жё😀'.repeat(1000 + i * 37)}`);
  writeFileSync(join(dir, 'logs', 'svc.log'), msgs.map((m, i) => formatLogLine(T0 + i, { level: 'info', msg: m })).join(''));
  const tail = await readLogTail(join(dir, 'logs'), { maxLines: 1000, keep: all });
  t.equal(tail.lines.length, 40);
  t.same(tail.lines.map((l) => l.replace(/^\S+ \S+\s+/, '')), msgs);
  t.equal(tail.newestMs, T0 + 39);
  const last3 = await readLogTail(join(dir, 'logs'), { maxLines: 3, keep: all });
  t.same(last3.lines, tail.lines.slice(-3));
});

await t.test('a filtered read stops after MAX_LOG_SCAN_BYTES instead of reading every file', async (t) => {
  const dir = t.testdir();
  const line = formatLogLine(T0, { level: 'info', msg: 'x'.repeat(1000), agent: 'busy' });
  const perFile = Math.ceil(MAX_LOG_SCAN_BYTES / 2 / line.length);
  const lines = line.repeat(perFile);
  writeFileSync(join(dir, 'svc.log.3'), formatLogLine(T0, { level: 'info', msg: 'far back', agent: 'rare' }));
  for (const f of ['svc.log', 'svc.log.1', 'svc.log.2']) writeFileSync(join(dir, f), lines);
  const tail = await readLogTail(dir, { maxLines: 10, keep: (r) => logRecordAgent(r) === 'rare' });
  t.same(tail.lines, [], 'the rare line beyond the scan budget is not reached');
});

await t.test("a record's agent is its last agent= field", async (t) => {
  t.equal(logRecordAgent({ at: 0, lines: ['2026-11-22T10:00:00.000Z INFO  says agent=fake in text agent=coder'] }), 'coder');
  t.equal(logRecordAgent({ at: 0, lines: ['2026-11-22T10:00:00.000Z INFO  no field'] }), null);
});
