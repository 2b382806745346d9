import type Database from 'better-sqlite3';
import { CHAT_SESSION_EVENTS, type AnyEnvelope, type ChatMessage, type ChatSession } from '../schemas/index.js';
import type { Projection } from './projection.js';

interface Row {
  id: string;
  agent: string;
  title: string;
  created_at: string;
  updated_at: string;
  provider_override: string | null;
  model_override: string | null;
  archived: number;
}

interface Statements {
  insert: Database.Statement;
  rename: Database.Statement;
  remove: Database.Statement;
  removeMessages: Database.Statement;
  archive: Database.Statement;
  provider: Database.Statement;
  touch: Database.Statement;
  updateMessage: Database.Statement;
  insertMessage: Database.Statement;
  nextPos: Database.Statement;
}

// Prepared once per connection: apply runs inside every append.
const statements = new WeakMap<Database.Database, Statements>();
const queries = new WeakMap<Database.Database, { get: Database.Statement; all: Database.Statement; byAgent: Database.Statement }>();

function prepared(db: Database.Database): Statements {
  let s = statements.get(db);
  if (!s) {
    s = {
      // First fact wins: a repeated id in an imported log must not replace a session users saw.
      insert: db.prepare(`
        INSERT INTO chat_sessions (id, seq, agent, title, created_at, updated_at)
        VALUES (?, ?, ?, ?, ?, ?)
        ON CONFLICT (id) DO NOTHING`),
      rename: db.prepare(`UPDATE chat_sessions SET title = ?, updated_at = ? WHERE id = ?`),
      remove: db.prepare(`DELETE FROM chat_sessions WHERE id = ?`),
      removeMessages: db.prepare(`DELETE FROM chat_messages WHERE session_id = ?`),
      archive: db.prepare(`UPDATE chat_sessions SET archived = ?, updated_at = ? WHERE id = ?`),
      provider: db.prepare(`UPDATE chat_sessions SET provider_override = ?, model_override = ?, updated_at = ? WHERE id = ?`),
      touch: db.prepare(`UPDATE chat_sessions SET updated_at = ? WHERE id = ?`),
      updateMessage: db.prepare(`UPDATE chat_messages SET sender = ?, body = ? WHERE session_id = ? AND id = ?`),
      insertMessage: db.prepare(`INSERT INTO chat_messages (session_id, pos, id, sender, body) VALUES (?, ?, ?, ?, ?)`),
      nextPos: db.prepare(`SELECT COALESCE(MAX(pos) + 1, 0) AS pos FROM chat_messages WHERE session_id = ?`),
    };
    statements.set(db, s);
  }
  return s;
}

const text = (v: unknown): string | null => (typeof v === 'string' ? v : null);

/** Messages of a fact that the row needs (an id and a sender); others are skipped like any short payload. */
function messagesOf(v: unknown): { id: string; sender: string; body: string }[] {
  if (!Array.isArray(v)) return [];
  const out: { id: string; sender: string; body: string }[] = [];
  for (const m of v) {
    if (typeof m !== 'object' || m === null) continue;
    const id = text((m as { id?: unknown }).id);
    const sender = text((m as { sender?: unknown }).sender);
    if (id && sender) out.push({ id, sender, body: JSON.stringify(m) });
  }
  return out;
}

/** Upsert by id: a known message is updated where it stands, a new one goes after the last. */
function mergeMessages(db: Database.Database, sessionId: string, messages: ReturnType<typeof messagesOf>): void {
  const s = prepared(db);
  let next = (s.nextPos.get(sessionId) as { pos: number }).pos;
  for (const m of messages) {
    if (s.updateMessage.run(m.sender, m.body, sessionId, m.id).changes === 0) s.insertMessage.run(sessionId, next++, m.id, m.sender, m.body);
  }
}

function sessionExists(db: Database.Database, id: string): boolean {
  return readQueries(db).get.get(id) !== undefined;
}

/**
 * Folds `chat.session_created`, `chat.session_renamed` and `chat.session_deleted`. A payload
 * lacking what the row needs is skipped, not thrown on: throwing would roll back the whole append
 * batch, taking unrelated facts with it.
 */
export const chatSessionsProjection: Projection = {
  name: 'chat_sessions',
  tables: ['chat_sessions', 'chat_messages'],
  ddl: [
    `CREATE TABLE IF NOT EXISTS chat_sessions (
       id TEXT PRIMARY KEY,
       seq INTEGER NOT NULL UNIQUE,
       agent TEXT NOT NULL,
       title TEXT NOT NULL,
       created_at TEXT NOT NULL,
       updated_at TEXT NOT NULL,
       provider_override TEXT,
       model_override TEXT,
       archived INTEGER NOT NULL DEFAULT 0
     )`,
    `CREATE INDEX IF NOT EXISTS chat_sessions_by_agent ON chat_sessions (agent, updated_at)`,
    // pos orders a session's history; ids are unique within it (merge upserts by id).
    `CREATE TABLE IF NOT EXISTS chat_messages (
       session_id TEXT NOT NULL,
       pos INTEGER NOT NULL,
       id TEXT NOT NULL,
       sender TEXT NOT NULL,
       body TEXT NOT NULL,
       PRIMARY KEY (session_id, id)
     )`,
    `CREATE UNIQUE INDEX IF NOT EXISTS chat_messages_by_pos ON chat_messages (session_id, pos)`,
  ],
  apply(db: Database.Database, e: AnyEnvelope): void {
    switch (e.type) {
      case CHAT_SESSION_EVENTS.session_created: {
        const d = e.data;
        const id = text(d.id);
        const agent = text(d.agent);
        if (!id || !agent) return;
        const created = text(d.created_at) ?? e.at;
        prepared(db).insert.run(id, e.seq, agent, text(d.title) ?? '', created, text(d.updated_at) ?? created);
        return;
      }
      case CHAT_SESSION_EVENTS.session_renamed: {
        const id = text(e.data.id);
        const title = text(e.data.title);
        if (id && title !== null) prepared(db).rename.run(title, text(e.data.updated_at) ?? e.at, id);
        return;
      }
      case CHAT_SESSION_EVENTS.session_deleted: {
        const id = text(e.data.id);
        if (!id) return;
        prepared(db).remove.run(id);
        prepared(db).removeMessages.run(id);
        return;
      }
      case CHAT_SESSION_EVENTS.session_archived: {
        const id = text(e.data.id);
        if (id && typeof e.data.archived === 'boolean') prepared(db).archive.run(e.data.archived ? 1 : 0, text(e.data.updated_at) ?? e.at, id);
        return;
      }
      case CHAT_SESSION_EVENTS.session_provider_set: {
        const id = text(e.data.id);
        if (id) prepared(db).provider.run(text(e.data.provider), text(e.data.model), text(e.data.updated_at) ?? e.at, id);
        return;
      }
      case CHAT_SESSION_EVENTS.messages_replaced:
      case CHAT_SESSION_EVENTS.messages_merged: {
        const id = text(e.data.id);
        // History of a deleted (or never created) session would be orphaned rows no query reaches.
        if (!id || !sessionExists(db, id)) return;
        if (e.type === CHAT_SESSION_EVENTS.messages_replaced) prepared(db).removeMessages.run(id);
        mergeMessages(db, id, messagesOf(e.data.messages));
        prepared(db).touch.run(text(e.data.updated_at) ?? e.at, id);
        return;
      }
    }
  },
};

function readQueries(db: Database.Database) {
  let q = queries.get(db);
  if (!q) {
    const cols = `id, agent, title, created_at, updated_at, provider_override, model_override, archived`;
    // Most recently active first; seq breaks ties between sessions touched in the same millisecond.
    q = {
      get: db.prepare(`SELECT ${cols} FROM chat_sessions WHERE id = ?`),
      all: db.prepare(`SELECT ${cols} FROM chat_sessions ORDER BY updated_at DESC, seq DESC`),
      byAgent: db.prepare(`SELECT ${cols} FROM chat_sessions WHERE agent = ? ORDER BY updated_at DESC, seq DESC`),
    };
    queries.set(db, q);
  }
  return q;
}

const toSession = (r: Row): ChatSession => ({ ...r, archived: r.archived !== 0 });

const messageQueries = new WeakMap<Database.Database, Record<'all' | 'count' | 'posOf' | 'page' | 'pageBefore' | 'agentAfter', Database.Statement>>();

function messageReads(db: Database.Database) {
  let q = messageQueries.get(db);
  if (!q) {
    q = {
      all: db.prepare(`SELECT body FROM chat_messages WHERE session_id = ? ORDER BY pos`),
      count: db.prepare(`SELECT COUNT(*) AS n FROM chat_messages WHERE session_id = ?`),
      posOf: db.prepare(`SELECT pos FROM chat_messages WHERE session_id = ? AND id = ?`),
      // Newest N, returned oldest first.
      page: db.prepare(`SELECT body FROM (SELECT body, pos FROM chat_messages WHERE session_id = ? ORDER BY pos DESC LIMIT ?) ORDER BY pos`),
      pageBefore: db.prepare(`SELECT body FROM (SELECT body, pos FROM chat_messages WHERE session_id = ? AND pos < ? ORDER BY pos DESC LIMIT ?) ORDER BY pos`),
      agentAfter: db.prepare(`SELECT COUNT(*) AS n FROM chat_messages WHERE session_id = ? AND pos > ? AND sender = 'agent'`),
    };
    messageQueries.set(db, q);
  }
  return q;
}

const bodies = (rows: unknown[]): ChatMessage[] => (rows as { body: string }[]).map((r) => JSON.parse(r.body) as ChatMessage);

/** A session's history, oldest first, as stored. */
export function chatMessages(db: Database.Database, sessionId: string): ChatMessage[] {
  return bodies(messageReads(db).all.all(sessionId));
}

/** Position of a message in its session's history, or null when the session has no such id. */
export function chatMessagePosition(db: Database.Database, sessionId: string, messageId: string): number | null {
  const r = messageReads(db).posOf.get(sessionId, messageId) as { pos: number } | undefined;
  return r ? r.pos : null;
}

/** The `limit` messages before position `beforePos` (or the newest), and how many the session holds. */
export function chatMessagePage(db: Database.Database, sessionId: string, limit: number, beforePos: number | null): { messages: ChatMessage[]; has_more: boolean; total: number } {
  const q = messageReads(db);
  const total = (q.count.get(sessionId) as { n: number }).n;
  // One more than asked tells whether older ones remain.
  const rows = beforePos === null ? q.page.all(sessionId, limit + 1) : q.pageBefore.all(sessionId, beforePos, limit + 1);
  const has_more = rows.length > limit;
  return { messages: bodies(has_more ? rows.slice(1) : rows), has_more, total };
}

/** Agent messages after position `afterPos` (-1: all of them): what a reader has not seen. */
export function chatUnreadCount(db: Database.Database, sessionId: string, afterPos: number): number {
  return (messageReads(db).agentAfter.get(sessionId, afterPos) as { n: number }).n;
}

export function getChatSession(db: Database.Database, id: string): ChatSession | null {
  const r = readQueries(db).get.get(id) as Row | undefined;
  return r ? toSession(r) : null;
}

/** Newest activity first; only `agent`'s sessions when given. */
export function listChatSessions(db: Database.Database, agent?: string): ChatSession[] {
  const q = readQueries(db);
  const rows = (agent === undefined ? q.all.all() : q.byAgent.all(agent)) as Row[];
  return rows.map(toSession);
}

/** The read model bound to one connection, for the chat-session actor and the HTTP edges. */
export interface ChatSessionReadModel {
  get(id: string): ChatSession | null;
  list(agent?: string): ChatSession[];
  messages(sessionId: string): ChatMessage[];
  position(sessionId: string, messageId: string): number | null;
  page(sessionId: string, limit: number, beforePos: number | null): { messages: ChatMessage[]; has_more: boolean; total: number };
  unread(sessionId: string, afterPos: number): number;
}

export function chatSessionReadModel(db: Database.Database): ChatSessionReadModel {
  return {
    get: (id) => getChatSession(db, id),
    list: (agent) => listChatSessions(db, agent),
    messages: (id) => chatMessages(db, id),
    position: (id, messageId) => chatMessagePosition(db, id, messageId),
    page: (id, limit, beforePos) => chatMessagePage(db, id, limit, beforePos),
    unread: (id, afterPos) => chatUnreadCount(db, id, afterPos),
  };
}
