import { join } from 'node:path';
import { TELEGRAM_MEDIA_FOLDER, normaliseImage, startEditStream } from '../actors/index.js';
import type { TransportRegistry, Bus } from '../bus/index.js';
import { TelegramTransport, dayStamp, type TelegramSender } from '../edges/index.js';
import { roleForMessengerSender, transportStatuses } from '../machines/index.js';
import { MESSENGER_EVENTS, TRANSCRIPTION_COMMANDS, messengerStream, type AgentConfig, type UserRecord } from '../schemas/index.js';
import type { EventLog, HomePaths } from '../store/index.js';

/*
 * The messenger transports the config turns on, each registered with the chat-transport registry
 * (one line per messenger here). A messenger that cannot start (a bad token, a server out of reach)
 * retries on its own with backoff and reports why through its health; the daemon runs on.
 */

export interface MessengerDeps {
  bus: Bus;
  log: EventLog;
  config(): AgentConfig;
  users(): UserRecord[];
  transports: TransportRegistry;
  paths: HomePaths;
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
function acceptedUpTo(log: EventLog, transport: string, botId: number): number {
  const [last] = log.read({ stream: messengerStream(transport, botId), types: [MESSENGER_EVENTS.update_accepted], descending: true, limit: 1 });
  const id = (last?.data as { update_id?: unknown } | undefined)?.update_id;
  return typeof id === 'number' ? id : 0;
}

/** Starts what the config turns on; the function returned stops them. */
export function startMessengers(d: MessengerDeps): () => Promise<void> {
  const stops: (() => Promise<void>)[] = [];
  const on = new Set(transportStatuses(d.config()).filter((s) => s.on).map((s) => s.name));
  if (on.has('telegram')) {
    const telegram = new TelegramTransport({
      bus: d.bus,
      agent: 'main',
      config: d.config,
      sender: (id) => messengerSender(d.users(), id),
      streams: (editor) => startEditStream(editor, d.config().streaming, { now: () => d.bus.now() }),
      acceptedUpTo: (botId) => acceptedUpTo(d.log, 'telegram', botId),
      media: {
        dir: () => join(d.paths.workspace, TELEGRAM_MEDIA_FOLDER, dayStamp(d.bus.now(), d.config().user_timezone)),
        normaliseImage: async (path) => (await normaliseImage(path, d.config().image)).path,
        transcribe: async (path) => (await d.bus.send(TRANSCRIPTION_COMMANDS.transcribe, { file_path: path }, { timeoutMs: 0 })).transcript,
      },
      ...(d.retry ? { retry: d.retry } : {}),
    });
    const remove = d.transports.add(telegram);
    telegram.start();
    stops.push(async () => {
      await telegram.stop();
      remove();
    });
  }
  return async () => {
    await Promise.all(stops.map((s) => s()));
  };
}
