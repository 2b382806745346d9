import type Database from 'better-sqlite3';
import { TURN_EVENTS, type AnyEnvelope } from '../schemas/index.js';
import type { Projection } from './projection.js';

/*
 * One row per CLI turn (stream `turn:<id>`): which agent ran it, when it started and ended, how it
 * ended and the tokens it used. Agent metrics, their history and an agent's activity are queries
 * over it, so they are rebuilt from the log like every read model.
 */

const ENDINGS: Record<string, string> = {
  [TURN_EVENTS.completed]: 'completed',
  [TURN_EVENTS.failed]: 'failed',
  [TURN_EVENTS.timed_out]: 'timed_out',
  [TURN_EVENTS.aborted]: 'aborted',
};

/** Outcomes counted as errors; an abort is the user's or svc's own stop, not a failure of the agent. */
const ERROR_STATUSES = `('failed', 'timed_out')`;

interface Statements {
  start: Database.Statement;
  end: Database.Statement;
}

const statements = new WeakMap<Database.Database, Statements>();

function prepared(db: Database.Database): Statements {
  let s = statements.get(db);
  if (!s) {
    s = {
      // A repeated turn stream in an imported log keeps the first start.
      start: db.prepare(`INSERT INTO agent_turns (turn, seq, agent, session_key, started_ms) VALUES (?, ?, ?, ?, ?) ON CONFLICT (turn) DO NOTHING`),
      // The first ending wins: recovery never rewrites a turn that had already ended.
      end: db.prepare(`UPDATE agent_turns SET ended_ms = ?, status = ?, duration_ms = MAX(0, ? - started_ms), tokens = ? WHERE turn = ? AND ended_ms IS NULL`),
    };
    statements.set(db, s);
  }
  return s;
}

const text = (v: unknown): string | null => (typeof v === 'string' ? v : null);
const count = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? Math.floor(v) : 0);

function tokensOf(data: Record<string, unknown>): number {
  const usage = data.usage;
  if (!usage || typeof usage !== 'object') return 0;
  const u = usage as Record<string, unknown>;
  return count(u.input_tokens) + count(u.output_tokens);
}

/** A payload lacking what the row needs is skipped, not thrown on: that would roll back the batch. */
export const agentTurnsProjection: Projection = {
  name: 'agent_turns',
  tables: ['agent_turns'],
  ddl: [
    `CREATE TABLE IF NOT EXISTS agent_turns (
       turn TEXT PRIMARY KEY,
       seq INTEGER NOT NULL,
       agent TEXT NOT NULL,
       session_key TEXT NOT NULL,
       started_ms INTEGER NOT NULL,
       ended_ms INTEGER,
       status TEXT,
       duration_ms INTEGER,
       tokens INTEGER NOT NULL DEFAULT 0
     )`,
    `CREATE INDEX IF NOT EXISTS agent_turns_by_end ON agent_turns (agent, ended_ms)`,
  ],
  apply(db: Database.Database, e: AnyEnvelope): void {
    if (!e.stream.startsWith('turn:')) return;
    const at = Date.parse(e.at);
    if (!Number.isFinite(at)) return;
    if (e.type === TURN_EVENTS.started) {
      const agent = text(e.data.agent);
      if (agent) prepared(db).start.run(e.stream, e.seq, agent, text(e.data.session_key) ?? '', at);
      return;
    }
    const status = ENDINGS[e.type];
    if (status) prepared(db).end.run(at, status, at, tokensOf(e.data), e.stream);
  },
};

export interface TurnStats {
  executions: number;
  errors: number;
  completed: number;
  /** Mean wall-clock duration of the finished turns, ms; 0 when there were none. */
  avg_duration_ms: number;
  tokens: number;
}

export interface TurnBucket extends TurnStats {
  start_ms: number;
}

export interface AgentActivity {
  /** Epoch ms of the latest start or end of any of its turns; null before the first. */
  last_active_ms: number | null;
  running: number;
  /** Distinct sessions with a turn started at or after `sessionsSince`. */
  active_sessions: number;
}

const STATS = `COUNT(*) AS executions,
  COALESCE(SUM(status IN ${ERROR_STATUSES}), 0) AS errors,
  COALESCE(SUM(status = 'completed'), 0) AS completed,
  COALESCE(AVG(duration_ms), 0) AS avg_duration_ms,
  COALESCE(SUM(tokens), 0) AS tokens`;

/** What the agent's turns that ended in [since, until) add up to. */
export function turnStats(db: Database.Database, agent: string, sinceMs: number, untilMs: number): TurnStats {
  return db.prepare(`SELECT ${STATS} FROM agent_turns WHERE agent = ? AND ended_ms >= ? AND ended_ms < ?`).get(agent, sinceMs, untilMs) as TurnStats;
}

/** `count` consecutive buckets of `bucketMs` from `startMs`, empty ones included, by the time each turn ended. */
export function turnHistory(db: Database.Database, agent: string, startMs: number, bucketMs: number, count: number): TurnBucket[] {
  const rows = db
    .prepare(
      `SELECT CAST((ended_ms - ?) / ? AS INTEGER) AS bucket, ${STATS} FROM agent_turns
       WHERE agent = ? AND ended_ms >= ? AND ended_ms < ? GROUP BY bucket`,
    )
    .all(startMs, bucketMs, agent, startMs, startMs + bucketMs * count) as (TurnStats & { bucket: number })[];
  const byBucket = new Map(rows.map((r) => [r.bucket, r]));
  return Array.from({ length: count }, (_, i) => {
    const r = byBucket.get(i);
    return { start_ms: startMs + i * bucketMs, executions: r?.executions ?? 0, errors: r?.errors ?? 0, completed: r?.completed ?? 0, avg_duration_ms: r?.avg_duration_ms ?? 0, tokens: r?.tokens ?? 0 };
  });
}

export function agentActivity(db: Database.Database, agent: string, sessionsSinceMs: number): AgentActivity {
  return db
    .prepare(
      `SELECT MAX(COALESCE(ended_ms, started_ms)) AS last_active_ms,
              COALESCE(SUM(ended_ms IS NULL), 0) AS running,
              COUNT(DISTINCT CASE WHEN started_ms >= ? THEN session_key END) AS active_sessions
       FROM agent_turns WHERE agent = ?`,
    )
    .get(sessionsSinceMs, agent) as AgentActivity;
}

/** A turn that started and has not ended: its own time limit comes from its `turn.started` fact. */
export interface RunningTurn {
  /** Without the `turn:` prefix. */
  turn_id: string;
  session_key: string;
  started_ms: number;
  /** The limit the turn started with (it depends on its kind: foreground, background, task, ...); null if the fact lacks it. */
  timeout_ms: number | null;
}

/** The agent's turns that started and have not ended, oldest first. */
export function runningTurns(db: Database.Database, agent: string): RunningTurn[] {
  // `seq` is the turn.started fact's: its payload holds the turn's own time limit.
  const rows = db
    .prepare(
      `SELECT t.turn, t.session_key, t.started_ms, json_extract(e.data, '$.timeout_ms') AS timeout_ms
       FROM agent_turns t LEFT JOIN events e ON e.seq = t.seq
       WHERE t.agent = ? AND t.ended_ms IS NULL ORDER BY t.started_ms`,
    )
    .all(agent) as { turn: string; session_key: string; started_ms: number; timeout_ms: unknown }[];
  return rows.map((r) => ({
    turn_id: r.turn.slice('turn:'.length),
    session_key: r.session_key,
    started_ms: r.started_ms,
    timeout_ms: typeof r.timeout_ms === 'number' && Number.isFinite(r.timeout_ms) && r.timeout_ms > 0 ? r.timeout_ms : null,
  }));
}

/** The read model bound to one connection, for the admin agents actor and the stale-turn sweep. */
export interface AgentTurnsReadModel {
  running(agent: string): RunningTurn[];
  stats(agent: string, sinceMs: number, untilMs: number): TurnStats;
  history(agent: string, startMs: number, bucketMs: number, count: number): TurnBucket[];
  activity(agent: string, sessionsSinceMs: number): AgentActivity;
}

export function agentTurnsReadModel(db: Database.Database): AgentTurnsReadModel {
  return {
    running: (agent) => runningTurns(db, agent),
    stats: (agent, since, until) => turnStats(db, agent, since, until),
    history: (agent, start, bucket, n) => turnHistory(db, agent, start, bucket, n),
    activity: (agent, since) => agentActivity(db, agent, since),
  };
}
