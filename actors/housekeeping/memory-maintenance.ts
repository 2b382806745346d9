import { randomUUID } from 'node:crypto';
import type { Bus } from '../../bus/index.js';
import { checkMemory, memoryReviewJob, sessionsPastMaxAge, MEMORY_REVIEW_JOB_ID } from '../../machines/index.js';
import {
  AGENT_COMMANDS,
  HOUSEKEEPING_STREAM,
  MEMORY_MAINTENANCE_EVENTS,
  NOTIFICATION_COMMANDS,
  describeError,
  type MemoryConfig,
  systemPrincipal,
} from '../../schemas/index.js';
import { loadCronJobs, readMemoryModules, saveCronJobs, type HomePaths } from '../../store/index.js';

/*
 * The daily memory maintenance (SPEC.md MemoryConfig `check_hour`): sessions past
 * `session_max_age_days` are ended through the agents' own session end (so their facts say why and
 * the next message starts afresh), and each workspace's memory is looked at: modules over
 * `module_line_limit` are reported in a notification, never cut; Always Load entries naming a
 * missing module are recorded. Also seeds, once ever, the monthly memory-review cron record.
 */

const SYSTEM = systemPrincipal('memory-maintenance', { transport: 'internal', chat_id: null, topic_id: null });

export interface MemoryMaintenanceDeps {
  bus: Bus;
  agents: () => string[];
  configOf: (agent: string) => MemoryConfig;
  workspaceOf: (agent: string) => string;
}

export interface MemoryMaintenanceResult {
  sessions_expired: number;
  over_limit: { agent: string; filename: string; lines: number }[];
  missing: { agent: string; filename: string }[];
}

export class MemoryMaintenance {
  /** Over-limit modules already reported, so the same module does not raise a notification every day. */
  private readonly reported = new Set<string>();

  constructor(private readonly d: MemoryMaintenanceDeps) {}

  async run(now: number, correlation?: string): Promise<MemoryMaintenanceResult> {
    const { bus } = this.d;
    const result: MemoryMaintenanceResult = { sessions_expired: 0, over_limit: [], missing: [] };
    const configs = new Map<string, MemoryConfig>();
    for (const agent of this.d.agents()) {
      try {
        const cfg = this.d.configOf(agent);
        if (cfg.enabled) configs.set(agent, cfg);
      } catch (e) {
        bus.emitLog('warn', `memory maintenance: ${agent}: ${describeError(e)}`);
      }
    }
    const sessions = await bus.send(AGENT_COMMANDS.sessions, { principal: SYSTEM }, { by: 'memory-maintenance' });
    let limit = 0;
    const fresh: string[] = [];
    for (const [agent, cfg] of configs) {
      limit = Math.max(limit, cfg.module_line_limit);
      const own = sessions.filter((s) => s.agent === agent).map((s) => ({ ...s, createdMs: Date.parse(s.created_at) }));
      for (const s of sessionsPastMaxAge(own, now, cfg.session_max_age_days)) {
        try {
          await bus.send(AGENT_COMMANDS.endSession, { id: s.id, principal: SYSTEM, request_id: `memory-maintenance:${randomUUID()}` }, { by: 'memory-maintenance', ...(correlation ? { correlation } : {}) });
          result.sessions_expired++;
        } catch (e) {
          bus.emitLog('warn', `memory maintenance: could not end session ${s.id}: ${describeError(e)}`);
        }
      }
      let check;
      try {
        const modules = readMemoryModules(this.d.workspaceOf(agent));
        check = checkMemory(modules, modules.find((m) => m.filename === 'MAINMEMORY.md')?.text ?? '', cfg.module_line_limit);
      } catch (e) {
        bus.emitLog('warn', `memory maintenance: ${agent}: ${describeError(e)}`);
        continue;
      }
      const over = new Set(check.overLimit.map((m) => `${agent}\u0000${m.filename}`));
      for (const key of [...this.reported]) if (key.startsWith(`${agent}\u0000`) && !over.has(key)) this.reported.delete(key);
      for (const m of check.overLimit) {
        result.over_limit.push({ agent, ...m });
        const key = `${agent}\u0000${m.filename}`;
        if (!this.reported.has(key)) {
          this.reported.add(key);
          fresh.push(`${agent}: memory_system/${m.filename} has ${m.lines} lines (limit ${cfg.module_line_limit})`);
        }
      }
      for (const filename of check.missing) result.missing.push({ agent, filename });
    }
    if (fresh.length > 0) {
      await bus
        .send(NOTIFICATION_COMMANDS.create, {
          source: 'system',
          outcome: 'error',
          title: 'Memory modules over the line limit',
          body: `${fresh.join('\n')}\n\nSplit them into nested modules under memory_system/modules/ or trim them; svc does not cut them.`,
          source_id: 'memory-maintenance',
        }, { by: 'memory-maintenance', ...(correlation ? { correlation } : {}) })
        .catch((e: unknown) => bus.emitLog('warn', `memory maintenance: notification not kept: ${describeError(e)}`));
    }
    await bus.publish({
      stream: HOUSEKEEPING_STREAM,
      type: MEMORY_MAINTENANCE_EVENTS.maintained,
      data: { sessions_expired: result.sessions_expired, over_limit: result.over_limit, line_limit: limit, missing: result.missing },
      ...(correlation ? { correlation } : {}),
    });
    return result;
  }
}

/**
 * Puts the monthly memory-review record into cron_jobs.json, once ever: `seededBefore` reads the
 * log for the fact this records, so a user who deleted the record does not get it back. A record
 * already there under the id (restored from an export, written by hand) is kept as it is.
 */
export async function seedMemoryReview(
  deps: { bus: Bus; paths: HomePaths; seededBefore: () => boolean; checkHour: number },
  correlation?: string,
): Promise<'seeded' | 'present' | 'already-seeded'> {
  if (deps.seededBefore()) return 'already-seeded';
  // Load and save with no await between: an admin edit of cron_jobs.json cannot interleave.
  const jobs = loadCronJobs(deps.paths);
  const present = jobs.some((j) => j.id === MEMORY_REVIEW_JOB_ID);
  if (!present) saveCronJobs(deps.paths, [...jobs, memoryReviewJob(deps.checkHour)]);
  await deps.bus.publish({
    stream: HOUSEKEEPING_STREAM,
    type: MEMORY_MAINTENANCE_EVENTS.review_seeded,
    data: { job_id: MEMORY_REVIEW_JOB_ID, agent: 'main', created: !present },
    ...(correlation ? { correlation } : {}),
  });
  return present ? 'present' : 'seeded';
}
