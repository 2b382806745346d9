import { join } from 'node:path';
import type { Subscription } from 'rxjs';
import { TELEGRAM_MEDIA_FOLDER, normaliseImage, startEditStream } from '../actors/index.js';
import type { Bus, TransportRegistry } from '../bus/index.js';
import { TelegramTransport, datedUploadFolder, dayStamp, type TelegramSender } from '../edges/index.js';
import { roleForMessengerSender, transportStatuses } from '../machines/index.js';
import { AGENT_EVENTS, MAIN_AGENT, MESSENGER_EVENTS, TRANSCRIPTION_COMMANDS, describeError, messengerStream, type AgentConfig, type UserRecord } from '../schemas/index.js';
import { workspaceDir, type EventLog, type HomePaths } from '../store/index.js';

/*
 * The messenger bots the config turns on, each registered with the chat-transport registry (one
 * line per messenger here): main's, and each running sub-agent's own (a `telegram_token` in its
 * registry entry), started and stopped with that agent's runtime, so a registry change that
 * restarts the agent (a new token) restarts its bot. A bot that cannot start (a bad token, a server
 * out of reach) retries on its own with backoff and reports why through its health; the daemon runs on.
 */

export interface MessengerDeps {
  bus: Bus;
  log: EventLog;
  paths: HomePaths;
  /** An agent's effective config (SPEC.md merge priority; main's for `main`); throws for an agent that is gone. */
  agentConfig(agent: string): AgentConfig;
  /** The agents whose runtime is up now. */
  runningAgents(): readonly string[];
  users(): UserRecord[];
  transports: TransportRegistry;
  /** Tests shorten the backoff between start attempts. */
  retry?: { firstMs: number; maxMs: number };
}

/** The user record a messenger sender id maps to (`telegram_user_ids`); with several, the least privileged. */
export function messengerSender(users: readonly UserRecord[], senderId: number): TelegramSender | null {
  const role = roleForMessengerSender(users, senderId);
  if (role === null) return null;
  const user = users.find((u) => u.active && u.role === role && u.telegram_user_ids.includes(senderId));
  return user ? { id: user.username, role, allowed_agents: user.allowed_agents } : null;
}

/** The highest update id a bot accepted, from its stream in the event log (0: none yet). */
export function acceptedUpTo(log: EventLog, transport: string, botId: number): number {
  const [last] = log.read({ stream: messengerStream(transport, botId), types: [MESSENGER_EVENTS.update_accepted], descending: true, limit: 1 });
  const id = (last?.data as { update_id?: unknown } | undefined)?.update_id;
  return typeof id === 'number' ? id : 0;
}

/** One agent's Telegram bot, registered while it runs. */
async function startTelegram(d: MessengerDeps, agent: string): Promise<() => Promise<void>> {
  let last = d.agentConfig(agent);
  // Read per use, so hot-reloaded fields (allow-lists, streaming) apply; an agent removed meanwhile keeps its last.
  const config = () => {
    try {
      last = d.agentConfig(agent);
    } catch {
      /* gone: its bot is being stopped */
    }
    return last;
  };
  const telegram = new TelegramTransport({
    bus: d.bus,
    agent,
    config,
    sender: (id) => messengerSender(d.users(), id),
    streams: (editor) => startEditStream(editor, config().streaming, { now: () => d.bus.now() }),
    acceptedUpTo: (botId) => acceptedUpTo(d.log, 'telegram', botId),
    media: {
      destination: () => datedUploadFolder(join(workspaceDir(d.paths, agent), TELEGRAM_MEDIA_FOLDER), dayStamp(d.bus.now(), config().user_timezone)),
      normaliseImage: async (path) => (await normaliseImage(path, config().image)).path,
      transcribe: async (path) => (await d.bus.send(TRANSCRIPTION_COMMANDS.transcribe, { file_path: path }, { timeoutMs: 0 })).transcript,
    },
    ...(d.retry ? { retry: d.retry } : {}),
  });
  const remove = d.transports.add(telegram, agent === MAIN_AGENT ? undefined : agent);
  telegram.start();
  return async () => {
    await telegram.stop();
    remove();
  };
}

/** Starts what the config turns on, and follows the sub-agents; the function returned stops them all. */
export function startMessengers(d: MessengerDeps): () => Promise<void> {
  const bots = new Map<string, Promise<() => Promise<void>>>();
  /** A restarted agent's new bot waits for the old one to let go of the token (one poller per bot) and of its registration. */
  const stopping = new Map<string, Promise<void>>();
  const start = (agent: string) => {
    if (bots.has(agent)) return;
    let cfg: AgentConfig;
    try {
      cfg = d.agentConfig(agent);
    } catch {
      return;
    }
    if (!transportStatuses(cfg).some((s) => s.name === 'telegram' && s.on)) return;
    bots.set(
      agent,
      (stopping.get(agent) ?? Promise.resolve()).then(() => startTelegram(d, agent)).catch((e: unknown) => {
        d.bus.emitLog('error', `telegram: the bot of ${agent} did not start: ${describeError(e)}`);
        return async () => undefined;
      }),
    );
  };
  const stop = async (agent: string) => {
    const bot = bots.get(agent);
    bots.delete(agent);
    if (!bot) return;
    const done = bot.then((stopBot) => stopBot());
    stopping.set(agent, done);
    await done;
    if (stopping.get(agent) === done) stopping.delete(agent);
  };
  start(MAIN_AGENT);
  for (const agent of d.runningAgents()) if (agent !== MAIN_AGENT) start(agent);
  const sub: Subscription = d.bus.events$.subscribe((e) => {
    const name = (e.data as { name?: unknown }).name;
    if (typeof name !== 'string' || name === MAIN_AGENT) return;
    // A restart of the agent (a new token in agents.json) stops and starts its bot with it.
    if (e.type === AGENT_EVENTS.started) start(name);
    else if (e.type === AGENT_EVENTS.stopped) void stop(name);
  });
  return async () => {
    sub.unsubscribe();
    await Promise.all([...bots.keys()].map(stop));
  };
}
