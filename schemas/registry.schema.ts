import * as v from 'valibot';
import {
  AgentConfigShape,
  AbsolutePathSchema,
  ApiConfigSchema,
  CLIParametersConfigSchema,
  CleanupConfigSchema,
  DEFAULT_TRANSPORT,
  DockerConfigSchema,
  HeartbeatConfigSchema,
  MatrixConfigSchema,
  StreamingConfigSchema,
  WebhookConfigSchema,
  formatIssues,
} from './config.schema.js';

/*
 * Sub-agent registry (`_secrets/agents.json`, legacy `agents.json`): a JSON array of entries.
 * Every field but `name` is optional and carries no default, because an absent or null field means
 * "inherit from the main config" (SPEC.md "Effective config merge priority").
 */

export const AGENT_NAME_PATTERN = /^[a-z0-9_-]+$/;
/** A sub-agent's name is a directory name (`agents/<name>/`) and a word on CLI command lines. */
export const MAX_AGENT_NAME_LENGTH = 64;
/** The main agent's name: a sub-agent by that name would be confused with it everywhere (workspace, routing, can_call). */
/** `SVC_AGENT_NAME` of the main agent: the one agent without a registry entry. */
export const MAIN_AGENT = 'main';
export const RESERVED_AGENT_NAMES: readonly string[] = [MAIN_AGENT];
export const MIN_INTERAGENT_TOKEN_LENGTH = 32;

const F = AgentConfigShape.entries;
/** The main config's rule for a field, without its default, null meaning "inherit". */
const inherit = <S extends v.GenericSchema>(schema: S) => v.optional(v.nullable(schema));
/** A block that overrides only the keys it names. */
const overrides = <S extends v.ObjectSchema<v.ObjectEntries, undefined>>(schema: S) => inherit(v.partial(schema));

/** Fields a registry entry may override on top of the main and the agent's own config. */
export const SUB_AGENT_INHERITED_FIELDS = [
  'group_mention_only', 'provider', 'model', 'log_level', 'idle_timeout_minutes', 'session_age_warning_hours',
  'daily_reset_hour', 'daily_reset_enabled', 'max_budget_usd', 'max_turns', 'max_session_messages',
  'permission_mode', 'cli_timeout', 'reasoning_effort', 'file_access', 'streaming', 'docker', 'heartbeat',
  'cleanup', 'webhooks', 'cli_parameters', 'user_timezone', 'additional_directories', 'api',
] as const;

const EntryFields = v.looseObject({
  name: v.pipe(
    v.string(),
    v.check((s) => AGENT_NAME_PATTERN.test(s), 'a lowercase name of a-z, 0-9, _ and - (e.g. "research_bot")'),
    v.check((s) => s.length <= MAX_AGENT_NAME_LENGTH, `at most ${MAX_AGENT_NAME_LENGTH} characters`),
    // A leading "-" reads as an option to every tool handed the name or its directory.
    v.check((s) => !s.startsWith('-'), 'a name that does not start with "-"'),
    v.check((s) => !RESERVED_AGENT_NAMES.includes(s.toLowerCase()), `a name other than ${RESERVED_AGENT_NAMES.map((n) => `"${n}"`).join(', ')} (reserved for the main agent)`),
  ),
  transport: inherit(F.transport.wrapped),
  telegram_token: inherit(v.string()),
  matrix: inherit(MatrixConfigSchema),
  allowed_user_ids: inherit(F.allowed_user_ids.wrapped),
  allowed_group_ids: inherit(F.allowed_group_ids.wrapped),
  group_mention_only: inherit(F.group_mention_only.wrapped),
  provider: inherit(F.provider.wrapped),
  model: inherit(F.model.wrapped),
  log_level: inherit(F.log_level.wrapped),
  idle_timeout_minutes: inherit(F.idle_timeout_minutes.wrapped),
  session_age_warning_hours: inherit(F.session_age_warning_hours.wrapped),
  daily_reset_hour: inherit(F.daily_reset_hour.wrapped),
  daily_reset_enabled: inherit(F.daily_reset_enabled.wrapped),
  max_budget_usd: inherit(F.max_budget_usd.wrapped),
  max_turns: inherit(F.max_turns.wrapped),
  max_session_messages: inherit(F.max_session_messages.wrapped),
  permission_mode: inherit(F.permission_mode.wrapped),
  cli_timeout: inherit(F.cli_timeout.wrapped),
  reasoning_effort: inherit(F.reasoning_effort.wrapped),
  file_access: inherit(F.file_access.wrapped),
  user_timezone: inherit(F.user_timezone.wrapped),
  streaming: overrides(StreamingConfigSchema),
  docker: overrides(DockerConfigSchema),
  heartbeat: overrides(HeartbeatConfigSchema),
  cleanup: overrides(CleanupConfigSchema),
  webhooks: overrides(WebhookConfigSchema),
  cli_parameters: overrides(CLIParametersConfigSchema),
  api: overrides(ApiConfigSchema),
  additional_directories: inherit(v.array(AbsolutePathSchema)),
  interagent_token: inherit(
    v.pipe(
      v.string(),
      v.check((s) => s.length >= MIN_INTERAGENT_TOKEN_LENGTH, `a random string of at least ${MIN_INTERAGENT_TOKEN_LENGTH} characters`),
    ),
  ),
  /** Agents this one may call through the internal API (SPEC.md "Inter-agent authentication"). */
  can_call: inherit(v.array(v.string())),
  display_name: inherit(v.string()),
  description: inherit(v.string()),
});

/** One registry entry; unknown keys are kept so rewriting the file (e.g. after `/model`) loses nothing. */
export const SubAgentConfigSchema = v.pipe(
  EntryFields,
  v.forward(
    v.partialCheck(
      [['transport'], ['telegram_token']],
      (e) => (e.transport ?? DEFAULT_TRANSPORT) !== 'telegram' || (typeof e.telegram_token === 'string' && e.telegram_token.trim() !== ''),
      'a bot token when transport is telegram',
    ),
    ['telegram_token'],
  ),
  v.forward(
    v.partialCheck(
      [['transport'], ['matrix']],
      (e) => e.transport !== 'matrix' || (!!e.matrix && e.matrix.homeserver !== '' && e.matrix.user_id !== ''),
      'a matrix block with homeserver and user_id when transport is matrix',
    ),
    ['matrix'],
  ),
);

export type SubAgentConfig = v.InferOutput<typeof SubAgentConfigSchema>;

function duplicateNames(entries: readonly { name: string }[]): string[] {
  const seen = new Set<string>();
  const dupes = new Set<string>();
  for (const e of entries) (seen.has(e.name) ? dupes : seen).add(e.name);
  return [...dupes];
}

export const RegistrySchema = v.pipe(
  v.array(SubAgentConfigSchema),
  v.check(
    (entries) => duplicateNames(entries).length === 0,
    (issue) => `unique agent names; duplicated: ${duplicateNames(issue.input as { name: string }[]).join(', ')}`,
  ),
);

export type Registry = v.InferOutput<typeof RegistrySchema>;

export type RegistryCheck = { ok: true; entries: SubAgentConfig[] } | { ok: false; errors: string[] };

/** Validate an already-parsed JSON value as the sub-agent registry. */
export function validateRegistry(raw: unknown, file: string): RegistryCheck {
  const result = v.safeParse(RegistrySchema, raw);
  return result.success ? { ok: true, entries: result.output } : { ok: false, errors: formatIssues(result.issues, file) };
}
