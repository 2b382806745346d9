import { benchAdmin } from './admin.bench.js';
import { benchBus } from './bus.bench.js';
import { benchConnections } from './connections.bench.js';
import { benchCron } from './cron.bench.js';
import { benchDirect } from './direct.bench.js';
import { benchMatrix } from './matrix.bench.js';
import { benchPanel } from './panel.bench.js';
import { benchRuntime } from './runtime.bench.js';
import { benchWal } from './wal.bench.js';
import { BenchReport } from './report.js';
import { benchStart } from './start.bench.js';
import { benchTasks } from './tasks.bench.js';
import { benchTelegram } from './telegram.bench.js';
import { benchWebhooks } from './webhooks.bench.js';
import { benchWorkflows } from './workflows.bench.js';

const SECTIONS: Record<string, (report: BenchReport) => Promise<void>> = {
  bus: benchBus,
  runtime: benchRuntime,
  direct: benchDirect,
  wal: benchWal,
  connections: benchConnections,
  start: benchStart,
  admin: benchAdmin,
  webhooks: benchWebhooks,
  workflows: benchWorkflows,
  tasks: benchTasks,
  cron: benchCron,
  telegram: benchTelegram,
  matrix: benchMatrix,
  panel: benchPanel,
};

// `run.js admin wal` runs those sections only (the whole set takes minutes); no names: all of them.
const asked = process.argv.slice(2);
const unknown = asked.filter((name) => !(name in SECTIONS));
if (unknown.length > 0) {
  process.stderr.write(`unknown bench section(s): ${unknown.join(', ')}; known: ${Object.keys(SECTIONS).join(', ')}\n`);
  process.exit(2);
}

const report = new BenchReport();
process.stdout.write(`svc benchmarks — node ${process.version}, ${new Date().toISOString()}\n`);
for (const [name, bench] of Object.entries(SECTIONS)) if (asked.length === 0 || asked.includes(name)) await bench(report);
report.summary();
