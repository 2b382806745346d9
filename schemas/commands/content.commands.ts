import * as v from 'valibot';
import { defineCommand } from '../command.js';
import { PrincipalSchema } from '../principal.schema.js';

/*
 * Commands of the admin API's content routes (SPEC.md "Admin REST": memory, RAG, skills, files).
 * Each carries the Principal: the handler applies `allowed_agents` to the agent it touches. Names
 * and paths are only bounded here; what they may name is decided by store/contained-file.ts.
 */

const Agent = v.pipe(v.string(), v.maxLength(128));
/** A path or name from outside; the containment helper refuses past 4096 characters with a clear message. */
const RequestedPath = v.pipe(v.string(), v.maxLength(8192));
const Content = v.string();

// ---------------------------------------------------------------- memory

export const MemoryModuleEntrySchema = v.object({ name: v.string(), filename: v.string(), size: v.string(), lines: v.number() });
/** `version`: what a write may name as `base_version` (store/workspace.ts memoryVersion). */
export const MemoryModuleTextSchema = v.object({ filename: v.string(), content: v.string(), version: v.string() });

const MemoryVersion = v.pipe(v.string('must be a string'), v.regex(/^[0-9a-f]{1,64}$/, 'must be the version a read of the module gave'));

export const MEMORY_COMMANDS = {
  list: defineCommand('memory.module_list', v.strictObject({ principal: PrincipalSchema, agent: Agent }), v.array(MemoryModuleEntrySchema)),
  read: defineCommand('memory.module_read', v.strictObject({ principal: PrincipalSchema, agent: Agent, filename: RequestedPath }), MemoryModuleTextSchema),
  write: defineCommand(
    'memory.module_write',
    v.strictObject({ principal: PrincipalSchema, agent: Agent, filename: RequestedPath, content: Content, base_version: v.optional(MemoryVersion) }),
    v.object({ ...MemoryModuleEntrySchema.entries, created: v.boolean(), version: v.string() }),
  ),
} as const;

// ---------------------------------------------------------------- skills

export const SKILL_LIST_SCOPES = ['merged', 'own', 'global'] as const;

export const SkillEntrySchema = v.object({
  name: v.string(),
  description: v.string(),
  path: v.string(),
  mtime: v.number(),
  size: v.number(),
  has_doc: v.boolean(),
  doc_filename: v.nullable(v.string()),
  scope: v.picklist(['global', 'agent']),
  overrides: v.boolean(),
});
export type SkillEntryWire = v.InferOutput<typeof SkillEntrySchema>;

/** `agent: null` is the global scope (admin only, by its routes' declared role). */
const SkillTarget = { principal: PrincipalSchema, agent: v.nullable(Agent), name: RequestedPath };

export const SKILL_COMMANDS = {
  list: defineCommand('skill.list', v.strictObject({ principal: PrincipalSchema, agent: v.nullable(Agent), scope: v.picklist(SKILL_LIST_SCOPES) }), v.array(SkillEntrySchema)),
  read: defineCommand('skill.get', v.strictObject(SkillTarget), v.object({ ...SkillEntrySchema.entries, content: v.nullable(v.string()) })),
  write: defineCommand('skill.save', v.strictObject({ ...SkillTarget, content: Content, create: v.boolean() }), SkillEntrySchema),
  delete: defineCommand('skill.remove', v.strictObject(SkillTarget), v.object({ name: v.string(), deleted: v.literal(true) })),
} as const;

// ---------------------------------------------------------------- user files

export const UserFileEntrySchema = v.object({ name: v.string(), path: v.string(), size: v.number(), mime: v.string(), modified: v.number(), isDir: v.boolean() });
const FileTarget = v.strictObject({ principal: PrincipalSchema, agent: Agent, path: RequestedPath });
/** A file the caller may fetch: what a download or a signed URL names. */
export const LocatedFileSchema = v.object({ agent: v.string(), relative_path: v.string(), name: v.string(), size: v.number() });

export const USER_FILES_COMMANDS = {
  list: defineCommand('files.list', FileTarget, v.array(UserFileEntrySchema)),
  locate: defineCommand('files.locate', FileTarget, LocatedFileSchema),
  mkdir: defineCommand('files.mkdir', FileTarget, v.object({ agent: v.string(), relative_path: v.string() })),
  delete: defineCommand('files.delete', FileTarget, v.object({ agent: v.string(), relative_path: v.string(), deleted: v.literal(true) })),
  /** Where an upload may go (`/upload?agent=&relative_path=`): `path` an existing folder, '' the workspace. */
  placeUpload: defineCommand('files.place_upload', FileTarget, v.object({ agent: v.string(), relative_path: v.string() })),
} as const;

/** `/upload?agent=&relative_path=` (WIRE.md §2 Files): both absent keeps the direct API's dated folder. */
export const UploadPlacementQuerySchema = v.object({ agent: v.optional(Agent), relative_path: v.optional(RequestedPath) });

// ---------------------------------------------------------------- RAG

/** `PUT /api/rag/config`: any subset; unknown fields refused. Types as the config schema's `rag` block. */
export const RagConfigUpdateSchema = v.strictObject({
  enabled: v.optional(v.boolean()),
  reranker_enabled: v.optional(v.boolean()),
  index_workspace: v.optional(v.boolean()),
  index_memory: v.optional(v.boolean()),
  top_k_retrieval: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(1000))),
  top_k_final: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(1000))),
});
export type RagConfigUpdate = v.InferOutput<typeof RagConfigUpdateSchema>;

export const RagStatusSchema = v.object({
  enabled: v.boolean(),
  embedding_model: v.string(),
  reranker_enabled: v.boolean(),
  reranker_model: v.string(),
  index_workspace: v.boolean(),
  index_memory: v.boolean(),
  top_k_retrieval: v.number(),
  top_k_final: v.number(),
  vector_db_path: v.string(),
  vector_db_exists: v.boolean(),
  vector_db_size_bytes: v.number(),
  chunk_count: v.number(),
  memory_fact_count: v.number(),
});

export const RAG_COMMANDS = {
  status: defineCommand('rag.status', v.strictObject({ principal: PrincipalSchema }), RagStatusSchema),
  configure: defineCommand(
    'rag.configure',
    v.strictObject({ principal: PrincipalSchema, fields: RagConfigUpdateSchema }),
    v.object({ status: v.literal('ok'), rag: v.record(v.string(), v.unknown()), restart_required: v.literal(true) }),
  ),
} as const;

// ---------------------------------------------------------------- HTTP bodies and queries (WIRE.md §2)

/** `?agent=` of the memory, files and RAG routes; other query parameters (cache busters) are ignored. */
export const AgentParamQuerySchema = v.object({ agent: v.optional(Agent) });
export const ContentBodySchema = v.strictObject({ content: Content });
/**
 * A memory write; `base_version` (optional): the version the editor loaded. When the file's version
 * differs now, nothing is written and the answer is 409 `memory-conflict`.
 */
export const MemoryWriteBodySchema = v.strictObject({ content: Content, base_version: v.optional(MemoryVersion) });
export const CreateSkillBodySchema = v.strictObject({ name: RequestedPath, content: Content });
export const SkillScopeQuerySchema = v.object({ scope: v.optional(v.picklist(SKILL_LIST_SCOPES), 'merged') });
/**
 * `type` and `sort` are the panel's file-type filter and order (it always sends `sort`). Accepted so
 * its files page loads; checked, so a typo is still a 400; not yet applied to the listing.
 */
export const FILES_LIST_TYPES = ['image', 'document', 'audio', 'video', 'archive'] as const;
export const FILES_LIST_SORTS = ['name', 'size', 'date'] as const;
export const FilesListQuerySchema = v.object({
  agent: v.optional(Agent),
  path: v.optional(RequestedPath, ''),
  type: v.optional(v.picklist(['', ...FILES_LIST_TYPES], `must be one of ${FILES_LIST_TYPES.join(', ')} (or empty)`)),
  sort: v.optional(v.picklist(FILES_LIST_SORTS, `must be one of ${FILES_LIST_SORTS.join(', ')}`)),
});
/** `relative_path`, or `path` as WIRE.md also allows. */
export const FilesDownloadQuerySchema = v.object({ agent: v.optional(Agent), relative_path: v.optional(RequestedPath), path: v.optional(RequestedPath) });
export const FilesMkdirBodySchema = v.strictObject({ agent: v.optional(Agent), relative_path: v.optional(RequestedPath), name: v.optional(RequestedPath) });
export const FilesDeleteBodySchema = v.strictObject({ agent: v.optional(Agent), relative_path: v.optional(RequestedPath), path: v.optional(RequestedPath) });
/** A signed link lives at most an hour: long enough to start a download, short enough to be useless when leaked later. */
export const MAX_SIGNED_URL_TTL_SECONDS = 3600;
export const DEFAULT_SIGNED_URL_TTL_SECONDS = 300;
export const FilesSignUrlBodySchema = v.strictObject({
  agent: v.optional(Agent),
  relative_path: v.optional(RequestedPath),
  path: v.optional(RequestedPath),
  ttl: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(MAX_SIGNED_URL_TTL_SECONDS)), DEFAULT_SIGNED_URL_TTL_SECONDS),
});
export const SignedDownloadQuerySchema = v.object({
  agent: Agent,
  path: RequestedPath,
  exp: v.pipe(v.string(), v.regex(/^\d{1,12}$/, 'epoch seconds')),
  sig: v.pipe(v.string(), v.regex(/^[A-Za-z0-9_-]{43}$/, 'a base64url HMAC-SHA256')),
});
