import { randomUUID } from 'node:crypto';
import { Subscription } from 'rxjs';
import { causedBy, type Bus, type Command } from '../../bus/index.js';
import {
  CHAT_SESSION_COMMANDS,
  CHAT_SESSION_EVENTS,
  DEFAULT_CHAT_SESSION_TITLE,
  MAX_CHAT_SESSION_ID_CHARS,
  SvcError,
  chatSessionStream,
  type ChatSession,
  type CommandData,
  type DeleteChatSessionResult,
} from '../../schemas/index.js';
import type { ChatSessionReadModel } from '../../store/index.js';
import { serialRunner } from '../host/serial.js';

/*
 * Chat sessions: a command-handling actor like the notifier. It holds no lifecycle worth a
 * machine; each command checks the read model, publishes one fact, and answers with the row the
 * projection folded from it.
 */

export interface ChatSessionsDeps {
  bus: Bus;
  readModel: Pick<ChatSessionReadModel, 'get'>;
  /** Injected so tests and replays get predictable ids. */
  newId?: () => string;
  /** When given, creating a session for an agent it rejects is 'not-found'. */
  agentExists?: (name: string) => boolean;
}

function notFound(id: string): SvcError {
  return new SvcError('not-found', `chat session ${JSON.stringify(id)} does not exist`);
}

/**
 * Registers `chat.session_create`, `chat.session_rename` and `chat.session_delete` on the bus;
 * unsubscribe to stop. Commands run one at a time so each sees the read model its predecessor left
 * (a publish resolves only after the projection folded it): "unknown id" and "id taken" are exact.
 */
export function startChatSessions(deps: ChatSessionsDeps): Subscription {
  const { bus, readModel } = deps;
  const newId = deps.newId ?? (() => randomUUID());
  const serial = serialRunner();

  const create = async (cmd: Command<string, CommandData<typeof CHAT_SESSION_COMMANDS.create>>): Promise<ChatSession> => {
    const d = cmd.data;
    if (deps.agentExists && !deps.agentExists(d.agent)) throw new SvcError('not-found', `agent ${JSON.stringify(d.agent)} does not exist`);
    const id = newId();
    if (typeof id !== 'string' || id.length === 0 || id.length > MAX_CHAT_SESSION_ID_CHARS) {
      throw new SvcError('invalid-id', `chat session id generator returned ${JSON.stringify(id)}; ids must be 1..${MAX_CHAT_SESSION_ID_CHARS} characters`);
    }
    if (readModel.get(id)) throw new SvcError('chat-session-exists', `chat session id generator returned ${id}, which is already taken`);
    const at = new Date(bus.now()).toISOString();
    const title = d.title ?? DEFAULT_CHAT_SESSION_TITLE;
    await bus.publish({
      stream: chatSessionStream(id),
      type: CHAT_SESSION_EVENTS.session_created,
      data: { id, agent: d.agent, title, created_at: at, updated_at: at },
      ...causedBy(cmd),
    });
    return readModel.get(id) ?? { id, agent: d.agent, title, created_at: at, updated_at: at, provider_override: null, model_override: null, archived: false };
  };

  const rename = async (cmd: Command<string, CommandData<typeof CHAT_SESSION_COMMANDS.rename>>): Promise<ChatSession> => {
    const { id, title } = cmd.data;
    const current = readModel.get(id);
    if (!current) throw notFound(id);
    // The same title again changes nothing, so nothing is recorded.
    if (current.title === title) return current;
    const at = new Date(bus.now()).toISOString();
    await bus.publish({ stream: chatSessionStream(id), type: CHAT_SESSION_EVENTS.session_renamed, data: { id, title, updated_at: at }, ...causedBy(cmd) });
    return readModel.get(id) ?? { ...current, title, updated_at: at };
  };

  const remove = async (cmd: Command<string, CommandData<typeof CHAT_SESSION_COMMANDS.delete>>): Promise<DeleteChatSessionResult> => {
    const { id } = cmd.data;
    if (!readModel.get(id)) throw notFound(id);
    await bus.publish({ stream: chatSessionStream(id), type: CHAT_SESSION_EVENTS.session_deleted, data: { id }, ...causedBy(cmd) });
    return { id, deleted: true };
  };

  const subs = new Subscription();
  subs.add(bus.handle(CHAT_SESSION_COMMANDS.create, 'chat-sessions', (cmd) => serial(() => create(cmd))));
  subs.add(bus.handle(CHAT_SESSION_COMMANDS.rename, 'chat-sessions', (cmd) => serial(() => rename(cmd))));
  subs.add(bus.handle(CHAT_SESSION_COMMANDS.delete, 'chat-sessions', (cmd) => serial(() => remove(cmd))));
  return subs;
}
