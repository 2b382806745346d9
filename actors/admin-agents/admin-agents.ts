import { stat } from 'node:fs/promises';
import { normalize, relative } from 'node:path';
import { Subscription } from 'rxjs';
import { agentsOf, type Bus } from '../../bus/index.js';
import {
  PERIOD_MS,
  historyBuckets,
  historyReply,
  metricsReply,
  providerListing,
  resolveProvider,
  visibleAgents,
  type DetectedProvider,
} from '../../machines/index.js';
import {
  ADMIN_AGENT_COMMANDS,
  DEFAULT_LOG_LINES,
  MAIN_AGENT,
  MAX_AVATAR_BYTES,
  MAX_LOG_LINES,
  SvcError,
  isSvcError,
  type AdminAgent,
  type AgentConfig,
  type AgentSummary,
  type CommandData,
  type Principal,
  type SubAgentConfig,
} from '../../schemas/index.js';
import {
  configuredAdditionalDirectories,
  loadRegistry,
  logRecordAgent,
  openAvatar,
  readLogTail,
  removeAvatar,
  saveAvatar,
  saveRegistry,
  setConfigFields,
  sniffImage,
  type AgentTurnsReadModel,
  type HomePaths,
  type LogRecord,
} from '../../store/index.js';
import { serialRunner } from '../host/serial.js';

/*
 * The admin API's agent resources: a command-handling actor like the chat sessions'. Every command
 * carries its principal; an agent outside its `allowed_agents` is answered exactly like one that does
 * not exist, so a restricted user cannot even learn which agents there are.
 */

export interface AdminAgentsDeps {
  bus: Bus;
  paths: HomePaths;
  config: () => AgentConfig;
  registry: () => SubAgentConfig[];
  turns: AgentTurnsReadModel;
  /** What provider discovery finds now (the main agent's providers). */
  providers: () => DetectedProvider[];
  /** Gemini models discovered at start, for telling a registry model's provider. */
  discoveredGemini?: () => readonly string[];
}

type Data<K extends keyof typeof ADMIN_AGENT_COMMANDS> = CommandData<(typeof ADMIN_AGENT_COMMANDS)[K]>;

const notFound = (name: string) => new SvcError('not-found', `agent ${JSON.stringify(name)} does not exist`);

function badDirectory(path: string, why: string): SvcError {
  return new SvcError('invalid-additional-directory', `additional_directories: ${JSON.stringify(path.slice(0, 300))} ${why}`);
}

/**
 * SPEC.md: absolute paths of existing directories, de-duplicated. `..` is refused rather than
 * resolved, so what is stored is what the admin meant to grant; trailing slashes are normalised away
 * so `/srv/a/` and `/srv/a` count once.
 */
async function checkedDirectories(paths: readonly string[]): Promise<string[]> {
  const out: string[] = [];
  for (const p of paths) {
    if (p.split(/[\\/]/).includes('..')) throw badDirectory(p, 'must not contain ".." segments');
    const clean = normalize(p).replace(/(.)[\\/]+$/, '$1');
    let isDir = false;
    try {
      isDir = (await stat(clean)).isDirectory();
    } catch {
      throw badDirectory(p, 'does not exist');
    }
    if (!isDir) throw badDirectory(p, 'is not a directory');
    if (!out.includes(clean)) out.push(clean);
  }
  return out;
}

function decodeBase64(data: string): Buffer {
  if (data.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(data)) throw new SvcError('invalid-image', 'avatar data is not base64');
  return Buffer.from(data, 'base64');
}

/** Registers the admin agent commands on the bus; unsubscribe to stop. */
export function startAdminAgents(deps: AdminAgentsDeps): Subscription {
  const { bus, paths } = deps;
  const writes = serialRunner();
  const agentClient = agentsOf(bus);

  const names = () => [MAIN_AGENT, ...deps.registry().map((e) => e.name)];
  const visible = (principal: Principal) => visibleAgents(principal, names(), deps.registry());

  /** The name, when the principal may see such an agent; otherwise exactly the answer to a missing one. */
  const seen = (principal: Principal, name: string): string => {
    if (!visible(principal).includes(name)) throw notFound(name);
    return name;
  };

  /** Agents running now, as the supervisor reports them; none when no supervisor answers (not started yet). */
  const live = async (principal: Principal): Promise<Map<string, AgentSummary>> => {
    try {
      return new Map((await agentClient.list(principal)).map((a) => [a.name, a]));
    } catch (e) {
      if (isSvcError(e, 'no-handler')) return new Map();
      throw e;
    }
  };

  const hasAvatar = async (name: string): Promise<boolean> => {
    const avatar = await openAvatar(paths, name).catch(() => null);
    await avatar?.handle.close();
    return avatar !== null;
  };

  const record = async (name: string, running: Map<string, AgentSummary>, dirs?: string[]): Promise<AdminAgent> => {
    const main = deps.config();
    const entry = name === MAIN_AGENT ? null : (deps.registry().find((e) => e.name === name) ?? null);
    const now = bus.now();
    const idleMs = (entry?.idle_timeout_minutes ?? main.idle_timeout_minutes) * 60_000;
    const activity = deps.turns.activity(name, idleMs > 0 ? now - idleMs : 0);
    const summary = running.get(name);
    const model = summary?.model ?? entry?.model ?? main.model;
    const provider = summary?.provider ?? entry?.provider ?? (entry ? resolveProvider(model, deps.discoveredGemini?.() ?? []) : main.provider);
    const online = summary !== undefined;
    return {
      name,
      display_name: entry?.display_name ?? name,
      provider,
      model,
      online,
      status: !online ? 'offline' : activity.running > 0 ? 'busy' : 'online',
      active_sessions: activity.active_sessions,
      last_active: activity.last_active_ms === null ? null : new Date(activity.last_active_ms).toISOString(),
      description: entry?.description ?? '',
      has_avatar: await hasAvatar(name),
      additional_directories: dirs ?? (entry ? (entry.additional_directories ?? []) : (configuredAdditionalDirectories(paths) ?? main.additional_directories)),
    };
  };

  const list = async ({ principal }: Data<'list'>): Promise<AdminAgent[]> => {
    const running = await live(principal);
    return Promise.all(visible(principal).map((name) => record(name, running)));
  };

  const get = async ({ principal, name }: Data<'get'>): Promise<AdminAgent> => record(seen(principal, name), await live(principal));

  const update = ({ principal, name, additional_directories }: Data<'update'>) =>
    writes(async (): Promise<AdminAgent> => {
      seen(principal, name);
      const dirs = await checkedDirectories(additional_directories);
      // An admin limited to some agents must not hand one of them svc's own home (its secrets, the
      // other agents' workspaces): not the home, nothing inside it, nothing that contains it.
      const restricted = principal.allowed_agents.length > 0 && !principal.allowed_agents.includes('*');
      if (restricted) {
        for (const d of dirs) {
          const rel = relative(d, paths.root);
          if (rel === '' || !rel.startsWith('..') || !relative(paths.root, d).startsWith('..')) {
            throw badDirectory(d, `would give the agent svc's home (${paths.root}); only an admin with access to every agent may`);
          }
        }
      }
      if (name === MAIN_AGENT) {
        // The config watcher sees the new file and applies and records it like a hand edit.
        setConfigFields(paths, { additional_directories: dirs });
      } else {
        // Re-read, not the watcher's copy: an entry written meanwhile by /model must not be undone.
        const entries = loadRegistry(paths);
        if (!entries.some((e) => e.name === name)) throw notFound(name);
        saveRegistry(paths, entries.map((e) => (e.name === name ? { ...e, additional_directories: dirs } : e)));
      }
      return record(name, await live(principal), dirs);
    });

  const setAvatar = ({ principal, name, data_base64 }: Data<'setAvatar'>) =>
    writes(async (): Promise<AdminAgent> => {
      seen(principal, name);
      const bytes = decodeBase64(data_base64);
      if (bytes.length === 0) throw new SvcError('invalid-image', 'the avatar file is empty');
      if (bytes.length > MAX_AVATAR_BYTES) throw new SvcError('body-too-large', `the avatar exceeds the limit of ${MAX_AVATAR_BYTES} bytes`);
      const ext = sniffImage(bytes);
      if (!ext) throw new SvcError('invalid-image', 'the avatar must be a PNG, JPEG, GIF or WebP image');
      await saveAvatar(paths, name, ext, bytes);
      return record(name, await live(principal));
    });

  const deleteAvatar = ({ principal, name }: Data<'removeAvatar'>) =>
    writes(async () => ({ name, removed: await removeAvatar(paths, seen(principal, name)) }));

  const metrics = async ({ principal, name, period }: Data<'metrics'>) => {
    seen(principal, name);
    const now = bus.now();
    // `until` one past now: a turn that ended this very millisecond counts.
    const sums = deps.turns.stats(name, now - PERIOD_MS[period], now + 1);
    return metricsReply(period, sums, deps.turns.activity(name, now).last_active_ms);
  };

  const history = async ({ principal, name, period }: Data<'history'>) => {
    seen(principal, name);
    const b = historyBuckets(period, bus.now());
    return historyReply(deps.turns.history(name, b.startMs, b.bucketMs, b.count));
  };

  /** main's log is the daemon's: every record not attributed to another agent; a sub-agent's is its own records. */
  const recordsOf = (agent: string) => (r: LogRecord) => {
    const who = logRecordAgent(r);
    return agent === MAIN_AGENT ? who === null || who === MAIN_AGENT : who === agent;
  };

  const logs = async ({ principal, agent, lines }: Data<'logs'>) => {
    seen(principal, agent);
    const tail = await readLogTail(paths.logsDir, { maxLines: lines, keep: recordsOf(agent) });
    return { agent, lines: tail.lines };
  };

  const pollLogs = async ({ principal, agent, after }: Data<'pollLogs'>) => {
    seen(principal, agent);
    // `after` 0 is a first poll: the recent lines, as `GET /api/logs` would give them. Later polls
    // take up to the cap, so a burst between two polls is not cut.
    const tail = await readLogTail(paths.logsDir, {
      maxLines: after > 0 ? MAX_LOG_LINES : DEFAULT_LOG_LINES,
      keep: recordsOf(agent),
      ...(after > 0 ? { afterMs: after * 1000 } : {}),
    });
    return { agent, lines: tail.lines, timestamp: tail.newestMs === null ? after : tail.newestMs / 1000 };
  };

  const providers = async () => {
    const main = deps.config();
    return providerListing(deps.providers(), { model: main.model, provider: main.provider });
  };

  const C = ADMIN_AGENT_COMMANDS;
  const subs = new Subscription();
  subs.add(bus.handle(C.list, 'admin-agents', (cmd) => list(cmd.data)));
  subs.add(bus.handle(C.get, 'admin-agents', (cmd) => get(cmd.data)));
  subs.add(bus.handle(C.update, 'admin-agents', (cmd) => update(cmd.data)));
  subs.add(bus.handle(C.setAvatar, 'admin-agents', (cmd) => setAvatar(cmd.data)));
  subs.add(bus.handle(C.removeAvatar, 'admin-agents', (cmd) => deleteAvatar(cmd.data)));
  subs.add(bus.handle(C.metrics, 'admin-agents', (cmd) => metrics(cmd.data)));
  subs.add(bus.handle(C.history, 'admin-agents', (cmd) => history(cmd.data)));
  subs.add(bus.handle(C.logs, 'admin-agents', (cmd) => logs(cmd.data)));
  subs.add(bus.handle(C.pollLogs, 'admin-agents', (cmd) => pollLogs(cmd.data)));
  subs.add(bus.handle(C.providers, 'admin-agents', () => providers()));
  return subs;
}
