import t from 'tap';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { LogSink, formatLogLine, parseLogLevel } from '../../actors/index.js';
import { Bus } from '../../bus/index.js';
import { MemoryEventLog } from '../../store/index.js';

const clock = () => Date.parse('2026-11-22T10:00:00.000Z');

t.test('writes lines at or above its level to the file, in the log format', async (t) => {
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

t.test('a log file that cannot be written neither crashes the daemon nor hangs close()', async (t) => {
  const dir = t.testdir();
  const bus = new Bus({ log: new MemoryEventLog(), clock });
  const sink = new LogSink(bus, { level: 'debug', file: join(dir, 'logs', 'svc.log'), stderr: false });
  rmSync(join(dir, 'logs'), { recursive: true, force: true });
  bus.emitLog('info', 'into the void');
  await new Promise((r) => setImmediate(r));
  bus.emitLog('info', 'still alive');
  await sink.close();
  t.pass('closed');
});
