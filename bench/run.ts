import { benchBus } from './bus.bench.js';
import { benchConnections } from './connections.bench.js';
import { benchDirect } from './direct.bench.js';
import { benchRuntime } from './runtime.bench.js';
import { benchWal } from './wal.bench.js';
import { BenchReport } from './report.js';
import { benchStart } from './start.bench.js';

const benches = { bus: benchBus, runtime: benchRuntime, direct: benchDirect, wal: benchWal, connections: benchConnections, start: benchStart };
// `node dist/bench/run.js direct wal` runs only those sections: while working on one figure the
// others are minutes of noise on a shared machine.
const picked = process.argv.slice(2);
const unknown = picked.filter((n) => !(n in benches));
if (unknown.length) throw new Error(`unknown bench section(s): ${unknown.join(', ')}; known: ${Object.keys(benches).join(', ')}`);

const report = new BenchReport();
process.stdout.write(`svc benchmarks — node ${process.version}, ${new Date().toISOString()}\n`);
for (const [name, bench] of Object.entries(benches)) if (!picked.length || picked.includes(name)) await bench(report);
report.summary();
