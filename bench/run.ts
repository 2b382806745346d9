import { benchBus } from './bus.bench.js';
import { benchConnections } from './connections.bench.js';
import { benchDirect } from './direct.bench.js';
import { benchRuntime } from './runtime.bench.js';
import { benchWal } from './wal.bench.js';
import { BenchReport } from './report.js';
import { benchStart } from './start.bench.js';

const report = new BenchReport();
process.stdout.write(`svc benchmarks — node ${process.version}, ${new Date().toISOString()}\n`);
await benchBus(report);
await benchRuntime(report);
await benchDirect(report);
await benchWal(report);
await benchConnections(report);
await benchStart(report);
report.summary();
