import { hostname } from 'node:os';
import { Subscription } from 'rxjs';
import { causedBy, type Bus } from '../../bus/index.js';
import {
  ACTIVE_TASK_STATUSES,
  ACTIVITY_COMMANDS,
  MAIN_AGENT,
  SUMMARY_ACTIVITY_COUNT,
  SUMMARY_CACHE_MS,
  SYSTEM_COMMANDS,
  SYSTEM_EVENTS,
  SYSTEM_STREAM,
  SvcError,
  describeError,
  type DashboardSummary,
  type TransportHealth,
  type Language,
  type Principal,
  type SubAgentConfig,
  type SystemFigures,
  type UserRecord,
} from '../../schemas/index.js';
import {
  activityVisibleTo,
  agentAccess,
  collectActivity,
  describeActivity,
  failedSince,
  filterActivity,
  humanUptime,
  unrestricted,
  type ActivityItem,
  type AgentLifecycleFact,
} from '../../machines/index.js';
import {
  cpuPercent,
  loadCronJobs,
  readHostSample,
  type AuditReadModel,
  type CpuTimes,
  type HomePaths,
  type HostSample,
  type NotificationReadModel,
  type SystemSettingsReadModel,
  type TasksReadModel,
} from '../../store/index.js';
import { recordOf } from '../tasks/tasks-file-writer.js';

/*
 * System status, instance name, dashboard summary and the activity feed (SPEC.md "Admin REST:
 * system, dashboard, activity"). Reads the sources (notifications, audit facts, the tasks read
 * model, cron_jobs.json) and the host, and decides what each caller may see; the words are
 * machines/activity.logic.ts's.
 */

export interface DashboardDeps {
  bus: Bus;
  paths: HomePaths;
  registry: () => readonly SubAgentConfig[];
  users: () => readonly UserRecord[];
  notifications: Pick<NotificationReadModel, 'list'>;
  audit: AuditReadModel;
  settings: SystemSettingsReadModel;
  /** The tasks projection of the log (the same answers tasks.json is written from). */
  tasks: Pick<TasksReadModel, 'all'>;
  /** The newest agents' start and stop facts (at most `limit`), for the activity feed. */
  agentFacts?: (limit: number) => readonly AgentLifecycleFact[];
  /** Agents whose runtime is up now. */
  onlineAgents: () => readonly string[];
  /** The chat transports registered now (bus/transports.ts), with their health. */
  transports?: () => readonly TransportHealth[];
  version: string;
  /** Epoch ms the daemon started; uptime counts from it on the bus clock. */
  startedAt: number;
  /** Injected in tests; the real one reads /proc and statfs of the home. */
  readHost?: (home: string) => HostSample;
}

/** How far back each source is read for the feed. */
const SOURCE_WINDOW = 500;
/** Distinct (language, ACL) keys kept in the summary cache. */
const MAX_CACHE_KEYS = 256;

export function startDashboard(deps: DashboardDeps): Subscription {
  const { bus, paths } = deps;
  const readHost = deps.readHost ?? readHostSample;
  let lastCpu: CpuTimes | null = null;
  let lastCpuPercent = 0;
  const cache = new Map<string, { at: number; value: DashboardSummary }>();

  const systemFigures = (lang: Language): SystemFigures => {
    const host = readHost(paths.root);
    const cpu = cpuPercent(lastCpu, host.cpu) ?? lastCpuPercent;
    if (host.cpu) lastCpu = host.cpu;
    lastCpuPercent = cpu;
    const uptime = Math.max(0, Math.floor((bus.now() - deps.startedAt) / 1000));
    return { cpu_percent: cpu, ram_percent: host.ram_percent ?? 0, disk_percent: host.disk_percent ?? 0, uptime_seconds: uptime, uptime_human: humanUptime(uptime, lang) };
  };

  /** A broken file the user must fix costs the feed that source, not the whole dashboard. */
  const orEmpty = <T>(what: string, read: () => T[]): T[] => {
    try {
      return read();
    } catch (e) {
      bus.emitLog('warn', `dashboard: ${what} left out: ${describeError(e)}`);
      return [];
    }
  };

  const errorsAckAt = (p: Principal): number | null => {
    if (p.kind !== 'user' || p.id === null) return null;
    return deps.users().find((u) => u.username === p.id)?.errors_ack_at ?? null;
  };

  const visibleItems = (p: Principal): ActivityItem[] =>
    collectActivity({
      notifications: deps.notifications.list({ limit: SOURCE_WINDOW }),
      tasks: deps.tasks.all().map(recordOf),
      cronJobs: orEmpty('cron_jobs.json', () => loadCronJobs(paths)),
      audit: p.role === 'admin' && unrestricted(p) ? deps.audit.list(SOURCE_WINDOW) : [],
      agents: orEmpty('agent facts', () => [...(deps.agentFacts?.(SOURCE_WINDOW) ?? [])]),
    }).filter((i) => activityVisibleTo(p, i));

  const agentAllowed = (p: Principal, name: string) => agentAccess(p, name, deps.registry()).allowed;

  const summarise = (p: Principal, lang: Language, ackAt: number | null): DashboardSummary => {
    const now = bus.now();
    const items = visibleItems(p);
    const agents = [MAIN_AGENT, ...deps.registry().map((r) => r.name)].filter((n) => agentAllowed(p, n));
    const online = new Set(deps.onlineAgents());
    const tasks = deps.tasks.all().filter(
      (t) => ACTIVE_TASK_STATUSES.includes(t.status) && [t.parent_agent, t.agent].some((a) => a !== null && agentAllowed(p, a)),
    );
    const jobs = orEmpty('cron_jobs.json', () => loadCronJobs(paths)).filter((j) => j.running === true && agentAllowed(p, j.agent));
    return {
      system: systemFigures(lang),
      counters: {
        agents_total: agents.length,
        agents_online: agents.filter((a) => online.has(a)).length,
        active_tasks: tasks.length,
        running_crons: jobs.length,
        failed_last_24h: failedSince(items, now, ackAt),
      },
      recent_activity: items.slice(0, SUMMARY_ACTIVITY_COUNT).map((i) => describeActivity(i, now, lang)),
      transports: [...(deps.transports?.() ?? [])],
    };
  };

  /**
   * One cached summary per language and ACL bucket (the agents the caller may see, and whether it
   * sees sign-ins). The caller's errors_ack_at is part of the key, so an acknowledgement shows at
   * once without anyone having to clear the cache.
   */
  const summary = (p: Principal, lang: Language): DashboardSummary => {
    const ackAt = errorsAckAt(p);
    const bucket = unrestricted(p) ? '*' : [...new Set(p.allowed_agents)].sort().join(',');
    const key = JSON.stringify([lang, p.role === 'admin' && unrestricted(p), bucket, ackAt]);
    const now = bus.now();
    const hit = cache.get(key);
    if (hit && now - hit.at < SUMMARY_CACHE_MS && now >= hit.at) return hit.value;
    const value = summarise(p, lang, ackAt);
    cache.delete(key);
    cache.set(key, { at: now, value });
    if (cache.size > MAX_CACHE_KEYS) {
      for (const [k, e] of cache) if (now - e.at >= SUMMARY_CACHE_MS) cache.delete(k);
      while (cache.size > MAX_CACHE_KEYS) cache.delete(cache.keys().next().value!);
    }
    return value;
  };

  const subs = new Subscription();
  subs.add(
    bus.handle(SYSTEM_COMMANDS.status, 'dashboard', ({ data }) => ({
      instance_name: deps.settings.instanceName() ?? hostname(),
      ...systemFigures(data.lang),
      version: deps.version,
    })),
  );
  subs.add(
    bus.handle(SYSTEM_COMMANDS.rename, 'dashboard', async (cmd) => {
      const { principal, instance_name } = cmd.data;
      if (deps.settings.instanceName() !== instance_name) {
        await bus.publish({ stream: SYSTEM_STREAM, type: SYSTEM_EVENTS.instance_renamed, data: { instance_name, by: principal.id }, ...causedBy(cmd) });
      }
      return { instance_name };
    }),
  );
  subs.add(bus.handle(SYSTEM_COMMANDS.summary, 'dashboard', ({ data }) => summary(data.principal, data.lang)));
  subs.add(
    bus.handle(ACTIVITY_COMMANDS.recent, 'dashboard', ({ data }) => {
      const now = bus.now();
      const items = filterActivity(visibleItems(data.principal), { severity: data.severity, errorsAckAt: errorsAckAt(data.principal) });
      return items.slice(0, data.limit).map((i) => describeActivity(i, now, data.lang));
    }),
  );
  subs.add(
    bus.handle(ACTIVITY_COMMANDS.get, 'dashboard', ({ data }) => {
      // One answer for "no such event" and "not yours": which ids exist is not the caller's to learn.
      const item = visibleItems(data.principal).find((i) => i.id === data.id);
      if (!item) throw new SvcError('not-found', `activity event ${JSON.stringify(data.id)} does not exist`);
      return describeActivity(item, bus.now(), data.lang, data.verbose);
    }),
  );
  subs.add(
    bus.handle(ACTIVITY_COMMANDS.legacy, 'dashboard', ({ data }) =>
      visibleItems(data.principal)
        .slice(0, data.limit)
        .map((i) => ({ type: i.type, message: i.subject ?? '' })),
    ),
  );
  return subs;
}
