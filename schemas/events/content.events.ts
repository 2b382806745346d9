import * as v from 'valibot';
import { typeNames } from './type-names.js';

/*
 * Changes made through the admin API to the content of the home (SPEC.md "Admin REST": memory,
 * RAG, skills, files). The files on disk are the state; these facts record who changed what and
 * when (the command's `by`), for the audit log and activity. Contents are never copied in.
 */

/** Stream `memory:<agent>`. */
export const memoryStream = (agent: string): string => `memory:${agent}`;
export const MEMORY_EVENT_SCHEMAS = {
  /** `filename` relative to `memory_system/`. */
  'memory.module_written': v.object({ agent: v.string(), filename: v.string(), bytes: v.number(), created: v.boolean() }),
};
export const MEMORY_EVENTS = typeNames(MEMORY_EVENT_SCHEMAS);

/** Stream `skills:<agent>`, or `skills:*global` for the global scope (no agent name can start with `*`). */
export const skillsStream = (agent: string | null): string => `skills:${agent ?? '*global'}`;
export const SKILL_EVENT_SCHEMAS = {
  'skill.written': v.object({ agent: v.nullable(v.string()), name: v.string(), doc_filename: v.string(), bytes: v.number(), created: v.boolean() }),
  'skill.deleted': v.object({ agent: v.nullable(v.string()), name: v.string() }),
  /**
   * One skill sync (SPEC.md "Skill storage and sync"): counts only, never one fact per file, so a
   * home with hundreds of skills and a watcher does not flood the log.
   */
  'skill.synced': v.object({
    trigger: v.picklist(['start', 'watch', 'stop']),
    mode: v.picklist(['link', 'copy']),
    /** Names with a source skill, over every scope. */
    skills: v.number(),
    linked: v.number(),
    copied: v.number(),
    removed: v.number(),
    unchanged: v.number(),
    /** A root keeps its own skill of a name another root is the source of. */
    conflicts: v.number(),
    /** Directories that look like skills but have no valid SKILL.md: reported, not linked or copied anywhere. */
    invalid: v.number(),
    /** Actions refused because the disk changed under the plan, or that failed. */
    failed: v.number(),
  }),
};
/** Where skill syncs are recorded: not a scope, so no agent name can collide (`*`). */
export const SKILL_SYNC_STREAM = 'skills:*sync';
export const SKILL_EVENTS = typeNames(SKILL_EVENT_SCHEMAS);

/** Stream `files:<agent>`: the agent's user-files area (its workspace). */
export const userFilesStream = (agent: string): string => `files:${agent}`;
export const USER_FILES_EVENT_SCHEMAS = {
  'files.directory_created': v.object({ agent: v.string(), path: v.string() }),
  'files.deleted': v.object({ agent: v.string(), path: v.string(), was_dir: v.boolean() }),
};
export const USER_FILES_EVENTS = typeNames(USER_FILES_EVENT_SCHEMAS);

/** Stream `config`, beside the config file's own facts. */
export const RAG_STREAM = 'config';
export const RAG_EVENT_SCHEMAS = {
  /** The `rag` fields written to config.json; they take effect after a restart. */
  'rag.config_changed': v.object({ fields: v.record(v.string(), v.union([v.boolean(), v.number()])) }),
};
export const RAG_EVENTS = typeNames(RAG_EVENT_SCHEMAS);
