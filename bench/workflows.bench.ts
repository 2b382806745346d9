import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { ActorHost, WorkflowEngine, startChatDelivery } from '../actors/index.js';
import { Bus, serveAgents } from '../bus/index.js';
import { checkWorkflowExpression } from '../machines/index.js';
import { CHAT_DELIVERY_COMMANDS, WORKFLOW_COMMANDS, WORKFLOW_RUN_EVENTS, type Principal, type TurnOutcome } from '../schemas/index.js';
import { PROJECTIONS, SqliteEventLog, loadWorkflowDefinitions } from '../store/index.js';
import { recordingTransport, registryOf } from '../test/fixtures/recording-transport.js';
import type { BenchReport } from './report.js';

const STEPS = 100;
const RUNS = 20;
const ADMIN: Principal = { kind: 'user', id: 'bench', acting_for: null, role: 'admin', allowed_agents: [], origin: { transport: 'api', chat_id: 1, topic_id: null } };

const yaml = (step: (i: number) => string) => `steps:\n${Array.from({ length: STEPS }, (_, i) => `  - ${step(i)}`).join('\n')}\n`;

/**
 * The engine's own cost per step: a 100-step workflow of notify steps (one chat delivery each) and
 * one of ask_agent steps answered at once by an in-memory agent, over the SQLite log the daemon
 * uses. The baseline is the same number of bare `chat.deliver` round trips, so the ratio is what
 * deciding, recording and reconciling a step adds to the work the step itself does.
 */
export async function benchWorkflows(report: BenchReport): Promise<void> {
  report.section(`workflows (${STEPS}-step runs, ${RUNS} runs each, SQLite log)`);
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-wf-'));
  const wfDir = join(dir, 'workflows');
  mkdirSync(wfDir);
  writeFileSync(join(wfDir, 'notify.yaml'), yaml((i) => `{ id: n${i}, type: notify, message: "step ${i} of $who" }`));
  writeFileSync(join(wfDir, 'ask.yaml'), yaml((i) => `{ id: a${i}, type: ask_agent, agent: main, prompt: "step ${i}: $steps.a${Math.max(0, i - 1)}.output" }`));
  const log = SqliteEventLog.open(join(dir, 'events.db'), { projections: PROJECTIONS, backgroundCheckpoints: { onError: (m) => console.error(m) } });
  const bus = new Bus({ log });
  const host = new ActorHost(bus);
  // The run's chat is a live direct-API chat: each notify is one delivery to it, as in the daemon with a client connected.
  const delivery = startChatDelivery({ bus, transports: registryOf(recordingTransport('api')) });
  const agents = serveAgents(bus, 'agents', {
    accept: (m) => ({
      outcome: Promise.resolve<TurnOutcome>({
        request_id: m.request_id, turn_id: null, agent: m.agent, session_key: 'k', status: 'completed', text: 'ok', is_error: false, stream_fallback: false,
        files: [], provider: 'claude', model: 'm', session_id: null, usage: null, cost_usd: null, duration_ms: 0, reason: null,
      }),
    }),
    abort: () => ({ killed: 0 }),
    list: () => [],
  });
  const engine = new WorkflowEngine({
    bus, host, log, dir: wfDir, watch: false,
    load: () => loadWorkflowDefinitions(wfDir, { checkExpression: checkWorkflowExpression }),
    config: () => ({ enabled: true, max_parallel_runs: 1000, default_step_timeout: 3600 }),
  });
  await engine.start();
  const finished = new Map<string, () => void>();
  const sub = bus.subscribe('bench-runs', (e) => {
    if (e.type === WORKFLOW_RUN_EVENTS.run_completed || e.type === WORKFLOW_RUN_EVENTS.run_failed) finished.get(e.stream.slice('run:'.length))?.();
  });

  const runOnce = async (id: string) => {
    let done!: () => void;
    const ended = new Promise<void>((r) => (done = r));
    const { run_id } = await bus.send(WORKFLOW_COMMANDS.run, { principal: ADMIN, workflow_id: id, transport: 'api', chat_id: 1 });
    finished.set(run_id, done);
    await ended;
    finished.delete(run_id);
    const view = await bus.send(WORKFLOW_COMMANDS.status, { principal: ADMIN, run_id });
    if (view.status !== 'completed') throw new Error(`run ${run_id} ended ${view.status}: ${view.error}`);
  };
  const perStep = async (id: string) => {
    await runOnce(id); // warm-up
    const t0 = performance.now();
    for (let i = 0; i < RUNS; i++) await runOnce(id);
    return (performance.now() - t0) / (RUNS * STEPS);
  };
  try {
    const t0 = performance.now();
    for (let i = 0; i < RUNS * STEPS; i++) await bus.send(CHAT_DELIVERY_COMMANDS.deliver, { transport: 'api', chat_id: 1, topic_id: null, text: `step ${i}`, source: 'bench' });
    const bare = (performance.now() - t0) / (RUNS * STEPS);
    report.figure('bare chat.deliver round trip (baseline)', bare * 1000, 'µs');
    const notify = await perStep('notify');
    report.figure('notify step, engine included', notify * 1000, 'µs', { ratio: notify / bare, against: 'bare delivery' });
    const ask = await perStep('ask');
    report.figure('ask_agent step (agent answers at once), engine included', ask * 1000, 'µs', { ratio: ask / bare, against: 'bare delivery' });
    const facts = log.read({ streamPrefix: 'run:' }).length;
    report.note('facts recorded', `${facts} over ${2 * (RUNS + 1)} runs (${(facts / (2 * (RUNS + 1) * STEPS)).toFixed(1)} per step)`);
  } finally {
    sub.unsubscribe();
    await engine.stop();
    agents.unsubscribe();
    delivery.unsubscribe();
    host.stopAll();
    bus.close();
    await log.stopCheckpoints();
    log.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
