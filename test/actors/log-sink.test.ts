import t from 'tap';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { LogSink, formatLogLine, parseLogLevel } from '../../actors/index.js';
import { Bus } from '../../bus/index.js';
import { MemoryEventLog } from '../../store/index.js';
import { until } from '../fixtures/until.js';

const clock = () => Date.parse('2026-11-22T10:00:00.000Z');

await t.test('writes lines at or above its level to the file, in the log format', async (t) => {
  const file = join(t.testdir(), 'logs', 'svc.log');
  const bus = new Bus({ log: new MemoryEventLog(), clock });
  const sink = new LogSink(bus, { level: parseLogLevel('WARNING'), file, stderr: false });
  bus.emitLog('info', 'too chatty');
  bus.emitLog('warn', 'disk almost full', { free: '2%' });
  await sink.close();
  t.equal(readFileSync(file, 'utf8'), '2026-11-22T10:00:00.000Z WARN  disk almost full free=2%\n');
  t.equal(formatLogLine(clock(), { level: 'error', msg: 'x', n: 1 }), '2026-11-22T10:00:00.000Z ERROR x n=1\n');
  t.same(['DEBUG', 'warning', 'CRITICAL', 'nonsense'].map(parseLogLevel), ['debug', 'warn', 'error', 'info']);
});

await t.test('a log file that cannot be written neither crashes the daemon nor hangs close()', async (t) => {
  // svc.log is a directory: every open and write of the file fails (a file removed under an open
  // stream would not: the writes go on into the unlinked inode).
  const dir = t.testdir({ logs: { 'svc.log': {} } });
  const said: string[] = [];
  const write = process.stderr.write.bind(process.stderr);
  process.stderr.write = ((chunk: string | Uint8Array, ...rest: never[]) => (said.push(String(chunk)), write(chunk, ...rest))) as typeof process.stderr.write;
  t.teardown(() => void (process.stderr.write = write));
  const bus = new Bus({ log: new MemoryEventLog(), clock });
  const sink = new LogSink(bus, { level: 'debug', file: join(dir, 'logs', 'svc.log'), stderr: false });
  bus.emitLog('info', 'into the void');
  await until('the sink to report the unwritable file', () => said.some((l) => l.includes('svc.log')));
  bus.emitLog('info', 'still alive');
  bus.emitLog('info', 'and alive');
  await sink.close();
  process.stderr.write = write;
  t.match(said, [/^svc: log file .*svc\.log: .*; logging to stderr only\n$/], 'the failure is said once, on stderr');
});

await t.test('svc.log is rotated by size, keeping a bounded number of older files', async (t) => {
  const dir = join(t.testdir(), 'logs');
  const file = join(dir, 'svc.log');
  const bus = new Bus({ log: new MemoryEventLog(), clock });
  const sink = new LogSink(bus, { level: 'info', file, stderr: false, rotateSize: '2K' });
  const line = 'x'.repeat(100);
  // About 40 KB through a 2 KB limit: far more rotations than files kept.
  for (let i = 0; i < 320; i++) bus.emitLog('info', line, { i });
  bus.emitLog('info', 'the newest line');
  await sink.close();
  const files = readdirSync(dir).sort();
  t.same(files, ['svc.log', 'svc.log.1', 'svc.log.2', 'svc.log.3', 'svc.log.4', 'svc.log.5'], 'five older files kept, no more');
  t.match(readFileSync(file, 'utf8'), /the newest line/);
  for (const f of files) t.ok(statSync(join(dir, f)).size < 8 * 1024, `${f} stays near the limit`);
  t.equal(statSync(file).mode & 0o777, 0o600);
});
