import type Database from 'better-sqlite3';
import { CHAT_SESSION_EVENTS, type AnyEnvelope, type ChatSession } from '../schemas/index.js';
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
    };
    statements.set(db, s);
  }
  return s;
}

const text = (v: unknown): string | null => (typeof v === 'string' ? v : null);

/**
 * Folds `chat.session_created`, `chat.session_renamed` and `chat.session_deleted`. A payload
 * lacking what the row needs is skipped, not thrown on: throwing would roll back the whole append
 * batch, taking unrelated facts with it.
 */
export const chatSessionsProjection: Projection = {
  name: 'chat_sessions',
  tables: ['chat_sessions'],
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
        if (id) prepared(db).remove.run(id);
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
}

export function chatSessionReadModel(db: Database.Database): ChatSessionReadModel {
  return {
    get: (id) => getChatSession(db, id),
    list: (agent) => listChatSessions(db, agent),
  };
}
