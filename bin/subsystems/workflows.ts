import { WorkflowEngine } from '../../actors/index.js';
import { checkWorkflowExpression } from '../../machines/index.js';
import { ensureDir, loadWorkflowDefinitions } from '../../store/index.js';
import { part } from '../subsystems.js';
import { ACTOR_HOST, AGENTS, BUS, CONFIG, EVENT_LOG, OPTIONS, PATHS, WORKFLOWS } from './keys.js';

/* Workflows: the engine that runs workflow definitions step by step on the agents. */

export const workflows = part({
  // After the agents (a run asks them), so it stops before them: what a stop cuts is then left for
  // the next start's restore instead of being recorded as the step's failure.
  name: 'workflows',
  needs: { opts: OPTIONS, bus: BUS, host: ACTOR_HOST, log: EVENT_LOG, paths: PATHS, config: CONFIG, agents: AGENTS },
  provides: { engine: WORKFLOWS },
  async start({ opts, bus, host, log, paths, config }) {
    ensureDir(paths.workflowsDir, 0o700);
    const engine = new WorkflowEngine({
      bus,
      host,
      log,
      dir: paths.workflowsDir,
      load: () => loadWorkflowDefinitions(paths.workflowsDir, { checkExpression: checkWorkflowExpression }),
      config: () => config().workflow,
      ...(opts.turnClock ? { clock: opts.turnClock } : {}),
    });
    await engine.start();
    return { provide: { engine }, stop: () => engine.stop() };
  },
});
