import * as v from 'valibot';
import { ROLES } from '../config.schema.js';
import { typeNames } from './type-names.js';

/*
 * Stream `task:<id>`: one delegated background task (SPEC.md "Task records", "Task status").
 * Times are epoch seconds, given on the command, so the task machine never reads a clock.
 * tasks.json is folded from these facts (machines/task.logic.ts), never written on its own.
 */
const Nullable = v.nullable(v.string());
const RunFacts = { provider: Nullable, model: Nullable, session_id: Nullable };

export const TASK_EVENT_SCHEMAS = {
  /**
   * `provider`/`model` are the overrides the creator asked for (null: the agent's own); the first
   * run's resolved values arrive with its end. `caller_user` is the person the creating agent acted
   * for, and `caller_role` the role its call was authenticated with (a token-less legacy caller is a
   * viewer whatever user it names), so every run, its result's wake turn and a resume after a restart
   * run with no more than the rights of whoever caused the task. Absent in facts older than it.
   */
  'task.created': v.object({
    task_id: v.string(),
    name: v.string(),
    parent_agent: v.string(),
    agent: v.string(),
    transport: v.string(),
    chat_id: v.number(),
    topic_id: v.nullable(v.number()),
    caller_user: Nullable,
    caller_role: v.optional(v.nullable(v.picklist(ROLES))),
    prompt: v.string(),
    provider: Nullable,
    model: Nullable,
    created_at: v.number(),
  }),
  /** The task's run asked its parent (`/tasks/ask_parent`) and waits for the answer. */
  'task.question_asked': v.object({ question: v.string(), at: v.number() }),
  /** The parent answered while the asking run was still alive: the same run goes on. */
  'task.answered': v.object({ answer: v.string(), at: v.number() }),
  /**
   * A new run in the task's folder, continuing its provider session with `prompt`. `provider` and
   * `session_id` are given when the task's own facts did not hold them yet (a first run cut off by a
   * restart, whose session the turn's facts recorded).
   */
  'task.resumed': v.object({ prompt: v.string(), at: v.number(), provider: v.optional(Nullable), session_id: v.optional(Nullable) }),
  'task.completed': v.object({ result: v.string(), ...RunFacts, at: v.number() }),
  /** `reason`: `timeout`, `exit-code`, `error`, `stale` (left running by a previous run of svc), ... */
  'task.failed': v.object({ reason: v.string(), result: v.string(), ...RunFacts, at: v.number() }),
  'task.cancelled': v.object({ at: v.number() }),
  /** Entry and folder removed; nothing follows on the stream. */
  'task.deleted': v.object({ at: v.number() }),
};
export const TASK_EVENTS = typeNames(TASK_EVENT_SCHEMAS);
