import { createHash, randomUUID } from 'node:crypto';
import { Subscription } from 'rxjs';
import { causedBy, type Bus, type Command } from '../../bus/index.js';
import { agentAccess, parseDirective } from '../../machines/index.js';
import {
  CHAT_READS_LEGACY_KEY,
  CHAT_SESSION_COMMANDS,
  CHAT_SESSION_EVENTS,
  DEFAULT_CHAT_SESSION_TITLE,
  MAX_CHAT_SESSION_ID_CHARS,
  SvcError,
  chatSessionStream,
  type AnyCommandDef,
  type ChatMessage,
  type ChatReads,
  type ChatSession,
  type CommandData,
  type CommandReply,
  type Principal,
  type SubAgentConfig,
} from '../../schemas/index.js';
import { loadChatReads, saveChatReads, type ChatSessionReadModel, type HomePaths } from '../../store/index.js';
import { serialRunner } from '../host/serial.js';

/*
 * Chat sessions and their history (SPEC.md "Chat session and messages", WIRE.md §2): a
 * command-handling actor like the notifier. It holds no lifecycle worth a machine; each command
 * checks the caller's access to the session's agent (SPEC.md "Agent-scoped access"), publishes its
 * facts, and answers from the read model the projection folded them into. Read markers live in
 * chat_reads.json, written here only.
 */

export interface ChatSessionsDeps {
  bus: Bus;
  readModel: ChatSessionReadModel;
  /** Where chat_reads.json lives; without it markers are neither read nor written (the direct API's rig). */
  paths?: Pick<HomePaths, 'chatReadsFile'>;
  /** The registry as last validated, for `can_call` of agent principals. */
  registry?: () => readonly Pick<SubAgentConfig, 'name' | 'can_call'>[];
  /** Injected so tests and replays get predictable ids (sessions and server-chosen message ids). */
  newId?: () => string;
  /** When given, a session for an agent it rejects is 'not-found'. */
  agentExists?: (name: string) => boolean;
}

function notFound(id: string): SvcError {
  return new SvcError('not-found', `chat session ${JSON.stringify(id)} does not exist`);
}

/**
 * The runtime's chat for a session (its turns queue, resume and abort together): a stable positive
 * 48-bit number, so it survives restarts and replays without being stored.
 */
export function chatIdOfSession(sessionId: string): number {
  return Number.parseInt(createHash('sha256').update(sessionId).digest('hex').slice(0, 12), 16) + 1;
}

/** Whose markers: a user's name, or the one key of the tokens with no user (SPEC.md: legacy admin). */
export function readerKey(p: Principal): string {
  return p.id ?? CHAT_READS_LEGACY_KEY;
}

/**
 * The text the agent receives: a session override dispatches through the `@<model>` directive
 * (SPEC.md), unless the user gave their own directive or a chat command (which a directive would hide).
 */
export function withModelDirective(text: string, model: string | null): string {
  if (model === null || /^\s*\//.test(text) || parseDirective(text).model !== undefined) return text;
  return `@${model} ${text}`;
}

type Handler<C extends AnyCommandDef> = (cmd: Command<string, CommandData<C>>) => Promise<CommandReply<C>>;

/**
 * Registers the chat-session commands (CHAT_SESSION_COMMANDS) on the bus; unsubscribe to stop.
 * Commands run one at a time so each sees the read model (and chat_reads.json) its predecessor left:
 * "unknown id", "id taken" and "markers only move forward" are exact.
 */
export function startChatSessions(deps: ChatSessionsDeps): Subscription {
  const { bus, readModel } = deps;
  const newId = deps.newId ?? (() => randomUUID());
  const serial = serialRunner();
  const nowIso = () => new Date(bus.now()).toISOString();

  const allow = (p: Principal, agent: string): void => {
    const access = agentAccess(p, agent, deps.registry?.() ?? []);
    if (!access.allowed) throw new SvcError(access.code, access.message);
  };
  /** The session, when it exists and the caller may use its agent. */
  const sessionFor = (p: Principal, id: string): ChatSession => {
    const s = readModel.get(id);
    if (!s) throw notFound(id);
    allow(p, s.agent);
    return s;
  };
  const freshId = (): string => {
    const id = newId();
    if (typeof id !== 'string' || id.length === 0 || id.length > MAX_CHAT_SESSION_ID_CHARS) {
      throw new SvcError('invalid-id', `id generator returned ${JSON.stringify(id)}; ids must be 1..${MAX_CHAT_SESSION_ID_CHARS} characters`);
    }
    return id;
  };

  // Markers as a Map, so a user or session named `__proto__` is a key like any other.
  const loadReads = async (): Promise<Map<string, Map<string, ChatReads[string][string]>>> => {
    if (!deps.paths) return new Map();
    const raw = await loadChatReads(deps.paths);
    return new Map(Object.entries(raw).map(([user, sessions]) => [user, new Map(Object.entries(sessions))]));
  };
  const saveReads = async (reads: Map<string, Map<string, ChatReads[string][string]>>): Promise<void> => {
    if (!deps.paths) return;
    const out = Object.fromEntries([...reads].filter(([, s]) => s.size > 0).map(([user, s]) => [user, Object.fromEntries(s)]));
    await saveChatReads(deps.paths, out);
  };
  /** The caller's marker on a session and what it leaves unread. */
  const readState = (marker: string | null, sessionId: string) => {
    const pos = marker === null ? null : readModel.position(sessionId, marker);
    return { last_read_message_id: marker, unread_count: readModel.unread(sessionId, pos ?? -1), pos };
  };

  const createSession = async (cmd: Command<string, unknown>, agent: string, title: string): Promise<ChatSession> => {
    if (deps.agentExists && !deps.agentExists(agent)) throw new SvcError('not-found', `agent ${JSON.stringify(agent)} does not exist`);
    const id = freshId();
    if (readModel.get(id)) throw new SvcError('chat-session-exists', `chat session id generator returned ${id}, which is already taken`);
    const at = nowIso();
    await bus.publish({ stream: chatSessionStream(id), type: CHAT_SESSION_EVENTS.session_created, data: { id, agent, title, created_at: at, updated_at: at }, ...causedBy(cmd) });
    return readModel.get(id) ?? { id, agent, title, created_at: at, updated_at: at, provider_override: null, model_override: null, archived: false };
  };

  const merge = async (cmd: Command<string, unknown>, id: string, messages: ChatMessage[]): Promise<void> => {
    await bus.publish({ stream: chatSessionStream(id), type: CHAT_SESSION_EVENTS.messages_merged, data: { id, messages, updated_at: nowIso() }, ...causedBy(cmd) });
  };

  const create: Handler<typeof CHAT_SESSION_COMMANDS.create> = async (cmd) => {
    allow(cmd.data.principal, cmd.data.agent);
    return createSession(cmd, cmd.data.agent, cmd.data.title ?? DEFAULT_CHAT_SESSION_TITLE);
  };

  const rename: Handler<typeof CHAT_SESSION_COMMANDS.rename> = async (cmd) => {
    const { id, title, principal } = cmd.data;
    const current = sessionFor(principal, id);
    // The same title again changes nothing, so nothing is recorded.
    if (current.title === title) return current;
    const at = nowIso();
    await bus.publish({ stream: chatSessionStream(id), type: CHAT_SESSION_EVENTS.session_renamed, data: { id, title, updated_at: at }, ...causedBy(cmd) });
    return readModel.get(id) ?? { ...current, title, updated_at: at };
  };

  const remove: Handler<typeof CHAT_SESSION_COMMANDS.delete> = async (cmd) => {
    const { id, principal } = cmd.data;
    sessionFor(principal, id);
    await bus.publish({ stream: chatSessionStream(id), type: CHAT_SESSION_EVENTS.session_deleted, data: { id }, ...causedBy(cmd) });
    // Markers of a session that is gone would only grow the file.
    const reads = await loadReads();
    let changed = false;
    for (const sessions of reads.values()) changed = sessions.delete(id) || changed;
    if (changed) await saveReads(reads);
    return { id, deleted: true };
  };

  const list: Handler<typeof CHAT_SESSION_COMMANDS.list> = async (cmd) => {
    const { principal, agent, archived_only } = cmd.data;
    if (agent !== undefined) allow(principal, agent);
    const registry = deps.registry?.() ?? [];
    const mine = (await loadReads()).get(readerKey(principal));
    return readModel
      .list(agent)
      .filter((s) => agentAccess(principal, s.agent, registry).allowed && (!archived_only || s.archived))
      .map((s) => {
        const { last_read_message_id, unread_count } = readState(mine?.get(s.id)?.last_read_message_id ?? null, s.id);
        return { ...s, last_read_message_id, unread_count };
      });
  };

  const archive: Handler<typeof CHAT_SESSION_COMMANDS.archive> = async (cmd) => {
    const { id, archived, principal } = cmd.data;
    const current = sessionFor(principal, id);
    if (current.archived === archived) return current;
    await bus.publish({ stream: chatSessionStream(id), type: CHAT_SESSION_EVENTS.session_archived, data: { id, archived, updated_at: nowIso() }, ...causedBy(cmd) });
    return readModel.get(id)!;
  };

  const setProvider: Handler<typeof CHAT_SESSION_COMMANDS.setProvider> = async (cmd) => {
    const { id, provider, model, principal } = cmd.data;
    if ((provider === null) !== (model === null)) throw new SvcError('invalid-body', 'body: provider and model are both strings (set) or both null (reset)');
    const current = sessionFor(principal, id);
    if (current.provider_override === provider && current.model_override === model) return current;
    await bus.publish({ stream: chatSessionStream(id), type: CHAT_SESSION_EVENTS.session_provider_set, data: { id, provider, model, updated_at: nowIso() }, ...causedBy(cmd) });
    return readModel.get(id)!;
  };

  const messages: Handler<typeof CHAT_SESSION_COMMANDS.messages> = async (cmd) => {
    const { id, principal, limit, before } = cmd.data;
    sessionFor(principal, id);
    let beforePos: number | null = null;
    if (before !== undefined) {
      beforePos = readModel.position(id, before);
      if (beforePos === null) throw new SvcError('unknown-message', `query.before: chat session ${JSON.stringify(id)} has no message ${JSON.stringify(before)}`);
    }
    const page = readModel.page(id, limit ?? 1_000_000_000, beforePos);
    const marker = (await loadReads()).get(readerKey(principal))?.get(id)?.last_read_message_id ?? null;
    return { ...page, last_read_message_id: marker };
  };

  const writeMessages: Handler<typeof CHAT_SESSION_COMMANDS.writeMessages> = async (cmd) => {
    const { id, principal, messages: list, merge: merging } = cmd.data;
    sessionFor(principal, id);
    const type = merging ? CHAT_SESSION_EVENTS.messages_merged : CHAT_SESSION_EVENTS.messages_replaced;
    await bus.publish({ stream: chatSessionStream(id), type, data: { id, messages: list, updated_at: nowIso() }, ...causedBy(cmd) });
    return { session_id: id, total: readModel.page(id, 1, null).total };
  };

  const markRead: Handler<typeof CHAT_SESSION_COMMANDS.markRead> = async (cmd) => {
    const { id, principal, last_read_message_id: target } = cmd.data;
    sessionFor(principal, id);
    const targetPos = readModel.position(id, target);
    if (targetPos === null) throw new SvcError('unknown-message', `body.last_read_message_id: chat session ${JSON.stringify(id)} has no message ${JSON.stringify(target)}`);
    const user = readerKey(principal);
    const reads = await loadReads();
    const current = readState(reads.get(user)?.get(id)?.last_read_message_id ?? null, id);
    // SPEC.md "Chat read marker": an older or equal id changes nothing and answers the current marker.
    if (current.pos !== null && targetPos <= current.pos) {
      return { session_id: id, last_read_message_id: current.last_read_message_id, unread_count: current.unread_count };
    }
    const at = nowIso();
    const mine = reads.get(user) ?? new Map();
    mine.set(id, { last_read_message_id: target, updated_at: at });
    reads.set(user, mine);
    await saveReads(reads);
    const unread_count = readModel.unread(id, targetPos);
    await bus.publish({ stream: chatSessionStream(id), type: CHAT_SESSION_EVENTS.read_advanced, data: { id, user, last_read_message_id: target, unread_count, updated_at: at }, ...causedBy(cmd) });
    return { session_id: id, last_read_message_id: target, unread_count };
  };

  /** The agent's most recently updated session; `open` skips archived ones. */
  const latest = (agent: string, open: boolean): ChatSession | null => readModel.list(agent).find((s) => !open || !s.archived) ?? null;

  const history: Handler<typeof CHAT_SESSION_COMMANDS.history> = async (cmd) => {
    allow(cmd.data.principal, cmd.data.agent);
    const s = latest(cmd.data.agent, false);
    return s ? readModel.messages(s.id) : [];
  };

  const beginTurn: Handler<typeof CHAT_SESSION_COMMANDS.beginTurn> = async (cmd) => {
    const { principal, agent, text, session_id, user_msg_id } = cmd.data;
    allow(principal, agent);
    let session: ChatSession;
    if (session_id !== undefined) {
      session = sessionFor(principal, session_id);
      if (session.agent !== agent) throw new SvcError('invalid-body', `session_id: chat session ${JSON.stringify(session_id)} belongs to agent ${JSON.stringify(session.agent)}, not ${JSON.stringify(agent)}`);
    } else {
      session = latest(agent, true) ?? (await createSession(cmd, agent, DEFAULT_CHAT_SESSION_TITLE));
    }
    const id = user_msg_id ?? freshId();
    await merge(cmd, session.id, [{ id, sender: 'user', content: text, timestamp: nowIso() }]);
    return { session_id: session.id, chat_id: chatIdOfSession(session.id), text: withModelDirective(text, session.model_override), user_msg_id: id };
  };

  const endTurn: Handler<typeof CHAT_SESSION_COMMANDS.endTurn> = async (cmd) => {
    const { principal, session_id, message } = cmd.data;
    sessionFor(principal, session_id);
    await merge(cmd, session_id, [message]);
    return { session_id, total: readModel.page(session_id, 1, null).total };
  };

  /** WIRE.md §2 rule 3: into the agent's most recently updated session; a first one is opened for it. */
  const recordEnvelope: Handler<typeof CHAT_SESSION_COMMANDS.recordEnvelope> = async (cmd) => {
    const { agent, message } = cmd.data;
    const s = latest(agent, false) ?? (await createSession(cmd, agent, DEFAULT_CHAT_SESSION_TITLE));
    await bus.publish({ stream: chatSessionStream(s.id), type: CHAT_SESSION_EVENTS.messages_merged, data: { id: s.id, messages: [message], updated_at: nowIso(), agent }, ...causedBy(cmd) });
    return { session_id: s.id };
  };

  const subs = new Subscription();
  const on = <C extends AnyCommandDef>(def: C, fn: Handler<C>) => subs.add(bus.handle(def, 'chat-sessions', (cmd) => serial(() => fn(cmd))));
  on(CHAT_SESSION_COMMANDS.create, create);
  on(CHAT_SESSION_COMMANDS.rename, rename);
  on(CHAT_SESSION_COMMANDS.delete, remove);
  on(CHAT_SESSION_COMMANDS.list, list);
  on(CHAT_SESSION_COMMANDS.archive, archive);
  on(CHAT_SESSION_COMMANDS.setProvider, setProvider);
  on(CHAT_SESSION_COMMANDS.messages, messages);
  on(CHAT_SESSION_COMMANDS.writeMessages, writeMessages);
  on(CHAT_SESSION_COMMANDS.markRead, markRead);
  on(CHAT_SESSION_COMMANDS.history, history);
  on(CHAT_SESSION_COMMANDS.beginTurn, beginTurn);
  on(CHAT_SESSION_COMMANDS.endTurn, endTurn);
  on(CHAT_SESSION_COMMANDS.recordEnvelope, recordEnvelope);

  // An asynchronous inter-agent reply reaches the caller's chat through the task hub's delivery
  // (actors/tasks/task-hub.ts), which honours the call's `silent` and `reply_to`.
  return subs;
}
