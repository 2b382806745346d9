import { join, resolve } from 'node:path';
import type { Subscription } from 'rxjs';
import { MATRIX_MEDIA_FOLDER, TELEGRAM_MEDIA_FOLDER, normaliseImage, startEditStream } from '../actors/index.js';
import type { Bus, TransportRegistry } from '../bus/index.js';
import { MatrixTransport, TelegramTransport, datedUploadFolder, dayStamp, type MessengerMediaDeps, type TelegramSender } from '../edges/index.js';
import { owedAnswers, pendingAnswers, roleForMessengerSender, transportStatuses } from '../machines/index.js';
import { AGENT_EVENTS, MAIN_AGENT, MESSENGER_EVENTS, TRANSCRIPTION_COMMANDS, TURN_EVENTS, type OwedAnswer, describeError, messengerStream, type AgentConfig, type UserRecord } from '../schemas/index.js';
import { agentHomeRoot, workspaceDir, type EventLog, type HomePaths } from '../store/index.js';

/*
 * The messenger bots the config turns on, each registered with the chat-transport registry (one
 * line per messenger in MESSENGERS): main's, and each running sub-agent's own (a `telegram_token`
 * or a Matrix account in its registry entry), started and stopped with that agent's runtime, so a
 * registry change that restarts the agent (a new token) restarts its bot. A bot that cannot start
 * (a bad token, a server out of reach) retries on its own with backoff and reports why through its
 * health; the daemon runs on.
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

/** How far back a bot's stream is read for answers still owed: far more than can be in flight at a crash. */
const OWED_SCAN = 200;

/** Answers a bot's chats are owed after a crash (machines/messenger-outbox.logic.ts), read from the log. */
export function owedAnswersOf(log: EventLog, transport: string, botId: string | number): OwedAnswer[] {
  const facts = log.read({ stream: messengerStream(transport, botId), types: [MESSENGER_EVENTS.update_accepted, MESSENGER_EVENTS.answer_delivered], descending: true, limit: OWED_SCAN });
  const pending = pendingAnswers(facts.reverse());
  if (pending.length === 0) return [];
  return owedAnswers(pending, log.read({ types: [TURN_EVENTS.started, TURN_EVENTS.completed], after: pending[0]!.seq }));
}

/** How many of an account's accepted Matrix events are remembered at start: far more than one sync brings. */
const ACCEPTED_REMEMBERED = 1000;
/** Server clocks drift: an event this much older than the newest accepted one may still be new. */
const CLOCK_SKEW_MS = 10 * 60_000;

/** The event ids a Matrix account accepted lately, and the server time before which events are history (null: none yet). */
export function acceptedEvents(log: EventLog, transport: string, botId: string): { ids: Set<string>; since: number | null } {
  const facts = log.read({ stream: messengerStream(transport, botId), types: [MESSENGER_EVENTS.update_accepted], descending: true, limit: ACCEPTED_REMEMBERED });
  const ids = new Set<string>();
  let newest: number | null = null;
  for (const f of facts) {
    const data = f.data as { update_id?: unknown; event_id?: unknown };
    if (typeof data.event_id === 'string') ids.add(data.event_id);
    if (typeof data.update_id === 'number') newest = Math.max(newest ?? data.update_id, data.update_id);
  }
  return { ids, since: newest === null ? null : newest - CLOCK_SKEW_MS };
}

/** What a messenger needs to know of its agent. */
interface AgentSide {
  /** The agent's config, read per use, so hot-reloaded fields (allow-lists, streaming) apply; an agent removed meanwhile keeps its last. */
  config(): AgentConfig;
  media: MessengerMediaDeps;
}

function agentSide(d: MessengerDeps, agent: string, mediaFolder: string): AgentSide {
  let last = d.agentConfig(agent);
  const config = () => {
    try {
      last = d.agentConfig(agent);
    } catch {
      /* gone: its bot is being stopped */
    }
    return last;
  };
  return {
    config,
    media: {
      destination: () => datedUploadFolder(join(workspaceDir(d.paths, agent), mediaFolder), dayStamp(d.bus.now(), config().user_timezone)),
      normaliseImage: async (path) => (await normaliseImage(path, config().image)).path,
      transcribe: async (path) => (await d.bus.send(TRANSCRIPTION_COMMANDS.transcribe, { file_path: path }, { timeoutMs: 0 })).transcript,
    },
  };
}

type Messenger = { name: string; start(): void; stop(): Promise<void> } & Parameters<TransportRegistry['add']>[0];

/** The messengers svc can run, each made for one agent: adding one is a line here. */
const MESSENGERS: Record<'telegram' | 'matrix', (d: MessengerDeps, agent: string) => Messenger> = {
  telegram: (d, agent) => {
    const { config, media } = agentSide(d, agent, TELEGRAM_MEDIA_FOLDER);
    return new TelegramTransport({
      bus: d.bus,
      agent,
      config,
      sender: (id) => messengerSender(d.users(), id),
      streams: (editor) => startEditStream(editor, config().streaming, { now: () => d.bus.now() }),
      acceptedUpTo: (botId) => acceptedUpTo(d.log, 'telegram', botId),
      owed: (botId) => owedAnswersOf(d.log, 'telegram', botId),
      media,
      ...(d.retry ? { retry: d.retry } : {}),
    });
  },
  matrix: (d, agent) => {
    const { config, media } = agentSide(d, agent, MATRIX_MEDIA_FOLDER);
    const home = agent === MAIN_AGENT ? d.paths.root : agentHomeRoot(d.paths, agent);
    return new MatrixTransport({
      bus: d.bus,
      agent,
      config,
      storeDir: resolve(home, config().matrix.store_path),
      streams: (editor) => startEditStream(editor, config().streaming, { now: () => d.bus.now() }),
      accepted: (userId) => acceptedEvents(d.log, 'matrix', userId),
      owed: (userId) => owedAnswersOf(d.log, 'matrix', userId),
      media,
      ...(d.retry ? { retry: d.retry } : {}),
    });
  },
};

/** One agent's bot on one messenger, registered while it runs. */
function startMessenger(d: MessengerDeps, name: keyof typeof MESSENGERS, agent: string): () => Promise<void> {
  const messenger = MESSENGERS[name](d, agent);
  const remove = d.transports.add(messenger, agent === MAIN_AGENT ? undefined : agent);
  messenger.start();
  return async () => {
    await messenger.stop();
    remove();
  };
}

/** Starts what the config turns on, and follows the sub-agents; the function returned stops them all. */
export function startMessengers(d: MessengerDeps): () => Promise<void> {
  /** By agent: each of its bots' stop. */
  const bots = new Map<string, Promise<(() => Promise<void>)[]>>();
  /** A restarted agent's new bots wait for the old ones to let go of the token (one poller per bot) and of their registration. */
  const stopping = new Map<string, Promise<void>>();
  const start = (agent: string) => {
    if (bots.has(agent)) return;
    let cfg: AgentConfig;
    try {
      cfg = d.agentConfig(agent);
    } catch {
      return;
    }
    const names = transportStatuses(cfg).flatMap((s) => (s.on && s.name in MESSENGERS ? [s.name as keyof typeof MESSENGERS] : []));
    if (names.length === 0) return;
    bots.set(
      agent,
      (stopping.get(agent) ?? Promise.resolve()).then(() =>
        names.flatMap((name) => {
          try {
            return [startMessenger(d, name, agent)];
          } catch (e) {
            d.bus.emitLog('error', `${name}: the bot of ${agent} did not start: ${describeError(e)}`);
            return [];
          }
        }),
      ),
    );
  };
  const stop = async (agent: string) => {
    const running = bots.get(agent);
    bots.delete(agent);
    if (!running) return;
    const done = running.then(async (stops) => {
      await Promise.all(stops.map((s) => s()));
    });
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
