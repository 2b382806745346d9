import type Database from 'better-sqlite3';
import { TASK_EVENTS, type AnyEnvelope, type EventPayload, type Role, type TaskStatus } from '../schemas/index.js';
import type { Projection } from './projection.js';

/*
 * The tasks read model (SPEC.md "Task records"), folded from the `task:<id>` facts inside each
 * append, so the admin API, the task hub and tasks.json all read one thing and none of them
 * re-parses tasks.json. The fold is the task machine's own (machines/task.logic.ts `evolveTask`)
 * written over a row; test/store/tasks.projection.test.ts holds the two to the same answers.
 */

/** One task as folded from its facts (the task machine's context has exactly these fields). */
export interface FoldedTask {
  task_id: string;
  name: string;
  parent_agent: string;
  agent: string;
  transport: string;
  chat_id: number;
  topic_id: number | null;
  caller_user: string | null;
  caller_role?: Role | null | undefined;
  prompt: string;
  provider: string | null;
  model: string | null;
  created_at: number;
  status: TaskStatus;
  session_id: string | null;
  result: string | null;
  reason: string | null;
  question: string | null;
  finished_at: number | null;
  runs: number;
  deleted: boolean;
}

/** Applies one task fact to a row (null: none yet); the same answers as `evolveTask`. */
export function foldTaskRow(s: FoldedTask | null, e: { type: string; data: unknown }): FoldedTask | null {
  if (e.type === TASK_EVENTS.created) {
    return { ...(e.data as EventPayload<typeof TASK_EVENTS.created>), status: 'running', session_id: null, result: null, reason: null, question: null, finished_at: null, runs: 1, deleted: false };
  }
  if (s === null) return null;
  switch (e.type) {
    case TASK_EVENTS.question_asked:
      return { ...s, status: 'waiting', question: (e.data as EventPayload<typeof TASK_EVENTS.question_asked>).question };
    case TASK_EVENTS.answered:
      return { ...s, status: 'running', question: null };
    case TASK_EVENTS.resumed: {
      const d = e.data as EventPayload<typeof TASK_EVENTS.resumed>;
      return { ...s, status: 'running', provider: d.provider ?? s.provider, session_id: d.session_id ?? s.session_id, question: null, result: null, reason: null, finished_at: null, runs: s.runs + 1 };
    }
    case TASK_EVENTS.completed:
    case TASK_EVENTS.failed: {
      const d = e.data as EventPayload<typeof TASK_EVENTS.failed>;
      const failed = e.type === TASK_EVENTS.failed;
      return {
        ...s,
        status: failed ? 'failed' : 'done',
        result: d.result,
        reason: failed ? d.reason : null,
        provider: d.provider ?? s.provider,
        model: d.model ?? s.model,
        session_id: d.session_id ?? s.session_id,
        question: null,
        finished_at: d.at,
      };
    }
    case TASK_EVENTS.cancelled:
      return { ...s, status: 'cancelled', question: null, finished_at: (e.data as { at: number }).at };
    case TASK_EVENTS.deleted:
      return { ...s, deleted: true };
    default:
      return s;
  }
}

const statements = new WeakMap<Database.Database, { get: Database.Statement; put: Database.Statement; remove: Database.Statement }>();

function prepared(db: Database.Database) {
  let s = statements.get(db);
  if (!s) {
    s = {
      get: db.prepare(`SELECT state FROM tasks WHERE task_id = ?`),
      // `created_seq` keeps creation order (tasks.json's order) across later updates.
      put: db.prepare(`INSERT INTO tasks (task_id, created_seq, state) VALUES (?, ?, ?) ON CONFLICT (task_id) DO UPDATE SET state = excluded.state`),
      remove: db.prepare(`DELETE FROM tasks WHERE task_id = ?`),
    };
    statements.set(db, s);
  }
  return s;
}

export const tasksProjection: Projection = {
  name: 'tasks',
  tables: ['tasks'],
  ddl: [`CREATE TABLE IF NOT EXISTS tasks (task_id TEXT PRIMARY KEY, created_seq INTEGER NOT NULL, state TEXT NOT NULL)`],
  apply(db: Database.Database, e: AnyEnvelope): void {
    if (!e.stream.startsWith('task:')) return;
    const id = e.stream.slice('task:'.length);
    const s = prepared(db);
    const row = s.get.get(id) as { state: string } | undefined;
    const next = foldTaskRow(row ? (JSON.parse(row.state) as FoldedTask) : null, e);
    // A deleted task leaves the read model; its facts stay in the log.
    if (!next || next.deleted) s.remove.run(id);
    else s.put.run(id, e.seq, JSON.stringify(next));
  },
};

export interface TasksReadModel {
  /** Every task not deleted, in creation order. */
  all(): FoldedTask[];
  get(id: string): FoldedTask | null;
}

export function tasksReadModel(db: Database.Database): TasksReadModel {
  const all = db.prepare(`SELECT state FROM tasks ORDER BY created_seq`);
  const one = db.prepare(`SELECT state FROM tasks WHERE task_id = ?`);
  return {
    all: () => (all.all() as { state: string }[]).map((r) => JSON.parse(r.state) as FoldedTask),
    get: (id) => {
      const r = one.get(id) as { state: string } | undefined;
      return r ? (JSON.parse(r.state) as FoldedTask) : null;
    },
  };
}
