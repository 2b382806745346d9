import * as v from 'valibot';

/*
 * `config/config.json`: every field, default and allowed value SPEC.md gives ("Configuration file").
 * `v.optional(schema, default)` everywhere so parsing `{}` yields a complete config; array and object
 * defaults are factories so no two parses share a mutable default.
 */

export const PROVIDERS = ['claude', 'codex', 'gemini'] as const;
export type Provider = (typeof PROVIDERS)[number];
export const DEFAULT_PROVIDER: Provider = 'claude';

/** Provider_a's hardcoded ids, small → large tier; the large one is the default `model`. */
export const CLAUDE_MODELS = ['haiku', 'sonnet', 'opus'] as const;
export const CLAUDE_MODEL_TIERS = { small: 'haiku', medium: 'sonnet', large: 'opus' } as const;
export const DEFAULT_MODEL = CLAUDE_MODEL_TIERS.large;
export const GEMINI_ALIASES = ['auto', 'pro', 'flash', 'flash-lite'] as const;

export const PERMISSION_MODES = ['acceptEdits', 'auto', 'bypassPermissions', 'default', 'dontAsk', 'plan'] as const;
export type PermissionMode = (typeof PERMISSION_MODES)[number];
export const ROLES = ['admin', 'operator', 'viewer'] as const;
export type Role = (typeof ROLES)[number];
export const REASONING_EFFORTS = ['low', 'medium', 'high', 'xhigh'] as const;
export const TRANSPORTS = ['telegram', 'matrix'] as const;
export type Transport = (typeof TRANSPORTS)[number];
export const DEFAULT_TRANSPORT: Transport = 'telegram';
/** Documented values only; any other string is accepted and behaves as `workspace` where it is used. */
export const FILE_ACCESS_LEVELS = ['all', 'home', 'workspace'] as const;
export const LOG_LEVELS = ['DEBUG', 'INFO', 'WARNING', 'WARN', 'ERROR', 'CRITICAL'] as const;
export const DOCKER_EXTRAS = [
  'ffmpeg', 'speech', 'opencv', 'tesseract', 'easyocr', 'pymupdf', 'pandoc',
  'scipy', 'pandas', 'matplotlib', 'pytorch-cpu', 'transformers', 'browser',
] as const;
export const IMAGE_FORMATS = ['webp', 'jpeg', 'png'] as const;
export const TRANSCRIPTION_MODELS = ['tiny', 'base', 'small', 'medium', 'large'] as const;
export const REACTION_STYLES = ['off', 'seen', 'detailed'] as const;

/** SPEC.md "Hot reload": applied to the running service as soon as the file validates. */
export const HOT_RELOADABLE_FIELDS = [
  'model', 'provider', 'reasoning_effort', 'cli_timeout', 'max_budget_usd', 'max_turns', 'max_session_messages',
  'idle_timeout_minutes', 'session_age_warning_hours', 'daily_reset_hour', 'daily_reset_enabled',
  'permission_mode', 'permission_mode_by_role', 'file_access', 'user_timezone', 'streaming', 'heartbeat',
  'cleanup', 'cli_parameters', 'allowed_user_ids', 'allowed_group_ids', 'group_mention_only', 'transcription',
  'max_concurrent_cli', 'panel',
] as const;
/** SPEC.md "Hot reload": recorded on change, applied only after a restart. */
export const RESTART_REQUIRED_FIELDS = [
  'transport', 'transports', 'telegram_token', 'telegram_api_root', 'matrix', 'docker', 'api', 'webhooks', 'svc_home', 'log_level',
  'gemini_api_key', 'timeouts', 'tasks', 'rag',
] as const;

// ---------------------------------------------------------------- building blocks

const int = (min?: number, max?: number) => {
  const rule = min !== undefined && max !== undefined ? `a whole number from ${min} to ${max}`
    : min !== undefined ? `a whole number >= ${min}` : 'a whole number';
  return v.pipe(
    v.number(),
    v.check((n) => Number.isInteger(n) && (min === undefined || n >= min) && (max === undefined || n <= max), rule),
  );
};
const num = (min = 0) => v.pipe(v.number(), v.check((n) => Number.isFinite(n) && n >= min, `a number >= ${min}`));
const positive = () => v.pipe(v.number(), v.check((n) => Number.isFinite(n) && n > 0, 'a number > 0'));
const hour = () => int(0, 23);
const port = () => int(0, 65535);
const str = (d = '') => v.optional(v.string(), d);
const bool = (d: boolean) => v.optional(v.boolean(), d);
const strList = () => v.optional(v.array(v.string()), () => [] as string[]);
const intList = () => v.optional(v.array(int()), () => [] as number[]);
const oneOf = <const T extends readonly [string, ...string[]]>(values: T) => v.picklist(values);

/** POSIX `/…` or a Windows drive/UNC path; `~` is not expanded, so it is relative here. */
export function isAbsolutePath(p: string): boolean {
  return p.startsWith('/') || /^[A-Za-z]:[\\/]/.test(p) || p.startsWith('\\\\');
}
export const AbsolutePathSchema = v.pipe(
  v.string(),
  v.check(isAbsolutePath, 'an absolute path (relative paths and ~ are not accepted)'),
);

// ---------------------------------------------------------------- sub-configs

export const MatrixConfigSchema = v.object({
  homeserver: str(),
  user_id: str(),
  password: str(),
  access_token: str(),
  device_id: str(),
  allowed_rooms: strList(),
  allowed_users: strList(),
  store_path: str('matrix_store'),
});

export const CLIParametersConfigSchema = v.object({
  claude: strList(),
  codex: strList(),
  gemini: strList(),
});

export const TimeoutConfigSchema = v.object({
  normal: v.optional(positive(), 600.0),
  background: v.optional(positive(), 1800.0),
  subagent: v.optional(positive(), 3600.0),
  warning_intervals: v.optional(v.array(num()), () => [60.0, 10.0]),
  extend_on_activity: bool(true),
  activity_extension: v.optional(num(), 120.0),
  max_extensions: v.optional(int(0), 3),
});
export const DEFAULT_NORMAL_TIMEOUT = 600.0;

export const TasksConfigSchema = v.object({
  enabled: bool(true),
  max_parallel: v.optional(int(1), 5),
  timeout_seconds: v.optional(positive(), 3600.0),
});

export const StreamingConfigSchema = v.object({
  enabled: bool(true),
  min_chars: v.optional(int(0), 200),
  max_chars: v.optional(int(1), 4000),
  idle_ms: v.optional(int(0), 800),
  edit_interval_seconds: v.optional(num(), 2.0),
  max_edit_failures: v.optional(int(0), 3),
  append_mode: bool(false),
  sentence_break: bool(true),
});

export const DockerConfigSchema = v.object({
  enabled: bool(false),
  image_name: str('svc-sandbox'),
  container_name: str('svc-sandbox'),
  auto_build: bool(true),
  mount_host_cache: bool(false),
  mounts: strList(),
  extras: v.optional(v.array(oneOf(DOCKER_EXTRAS)), () => [] as (typeof DOCKER_EXTRAS)[number][]),
});

/**
 * The longest heartbeat interval (one week). setTimeout holds at most 2^31-1 ms (about 24.8 days):
 * a longer delay fires after 1 ms, so an uncapped interval would turn into a tight loop.
 */
export const MAX_HEARTBEAT_INTERVAL_MINUTES = 10_080;

export const HeartbeatTargetSchema = v.object({
  chat_id: int(),
  topic_id: v.optional(v.nullable(int()), null),
  prompt: v.optional(v.nullable(v.string()), null),
  ack_token: v.optional(v.nullable(v.string()), null),
  interval_minutes: v.optional(v.nullable(int(1, MAX_HEARTBEAT_INTERVAL_MINUTES)), null),
  quiet_start: v.optional(v.nullable(hour()), null),
  quiet_end: v.optional(v.nullable(hour()), null),
});

export const DEFAULT_HEARTBEAT_PROMPT = [
  'This is a scheduled heartbeat check-in.',
  'Review your memory, open tasks and anything the user asked you to keep an eye on.',
  'If something needs the user\'s attention, tell them briefly.',
  'If nothing needs attention, reply with exactly HEARTBEAT_OK and nothing else.',
].join('\n');

export const HeartbeatConfigSchema = v.object({
  enabled: bool(false),
  interval_minutes: v.optional(int(1, MAX_HEARTBEAT_INTERVAL_MINUTES), 30),
  cooldown_minutes: v.optional(int(0), 5),
  quiet_start: v.optional(hour(), 21),
  quiet_end: v.optional(hour(), 8),
  prompt: str(DEFAULT_HEARTBEAT_PROMPT),
  ack_token: str('HEARTBEAT_OK'),
  group_targets: v.optional(v.array(HeartbeatTargetSchema), () => []),
});

export const ImageConfigSchema = v.object({
  max_dimension: v.optional(int(1), 3000),
  output_format: v.optional(oneOf(IMAGE_FORMATS), 'webp'),
  quality: v.optional(int(1, 100), 85),
});

export const TranscriptionConfigSchema = v.object({
  language: str('auto'),
  model: v.optional(oneOf(TRANSCRIPTION_MODELS), 'small'),
  command: v.optional(v.nullable(v.string()), null),
});

export const SceneConfigSchema = v.object({
  reaction_style: v.optional(oneOf(REACTION_STYLES), 'seen'),
  technical_footer: bool(false),
});

export const CleanupConfigSchema = v.object({
  enabled: bool(true),
  media_files_days: v.optional(int(0), 30),
  output_to_user_days: v.optional(int(0), 30),
  api_files_days: v.optional(int(0), 30),
  check_hour: v.optional(hour(), 3),
});

export const MemoryConfigSchema = v.object({
  enabled: bool(true),
  module_line_limit: v.optional(int(1), 80),
  session_max_age_days: v.optional(int(0), 30),
  check_hour: v.optional(hour(), 4),
  hook_compact_lines: v.optional(int(0), 20),
  inject_all_modules: bool(false),
  vector_search: bool(false),
  vector_model: str(),
  vector_results: v.optional(int(1), 5),
});

/*
 * RAG (SPEC.md "RAG status", `PUT /api/rag/config`). Off by default: svc ships no indexer yet, and
 * turning retrieval on should be a choice. When on, workspace and memory are both indexed (they are
 * what an agent's answers draw on). 20 candidates reranked down to 5 is the usual retrieve-then-rerank
 * shape: enough recall for the reranker, few enough chunks to keep a prompt small. Empty model
 * names mean "detect one", as `memory.vector_model` does.
 */
export const RagConfigSchema = v.object({
  enabled: bool(false),
  embedding_model: str(),
  reranker_enabled: bool(false),
  reranker_model: str(),
  index_workspace: bool(true),
  index_memory: bool(true),
  top_k_retrieval: v.optional(int(1, 1000), 20),
  top_k_final: v.optional(int(1, 1000), 5),
});

export const WebhookConfigSchema = v.object({
  enabled: bool(false),
  host: str('127.0.0.1'),
  port: v.optional(port(), 8742),
  token: str(),
  max_body_bytes: v.optional(int(1), 262144),
  rate_limit_per_minute: v.optional(int(1), 30),
});

export const FileshareConfigSchema = v.object({
  enabled: bool(false),
  host: str('127.0.0.1'),
  port: v.optional(port(), 8090),
  // Not in SPEC.md: fileshare has no authentication, so a bind beyond loopback must be asked for.
  allow_public: bool(false),
});

/** `panel.listen`: the panel's own listener on `panel.host:panel.port`; `auto` opens it only while the API server is off. */
export const PANEL_LISTEN_MODES = ['auto', 'on', 'off'] as const;
export type PanelListen = (typeof PANEL_LISTEN_MODES)[number];

/**
 * Not in SPEC.md (issue 23): svc's own admin web panel, served same-origin on the API port and,
 * per `listen`, on a port of its own. Hot while a server exists to open or close the listener on.
 */
export const PanelConfigSchema = v.object({
  enabled: bool(true),
  listen: v.optional(oneOf(PANEL_LISTEN_MODES), 'auto'),
  host: str('127.0.0.1'),
  port: v.optional(port(), 3000),
});

export const ApiConfigSchema = v.object({
  enabled: bool(false),
  host: str('0.0.0.0'),
  port: v.optional(port(), 8741),
  token: str(),
  chat_id: v.optional(int(), 0),
  allow_public: bool(false),
  jwt_secret: str(),
  cors_origins: strList(),
  /** Not in SPEC.md (issue 12): absent means none, so files and defaults SPEC.md describes stay as they were. */
  trusted_proxies: v.optional(v.array(v.string())),
});

export const InteragentConfigSchema = v.object({
  sync_timeout: v.optional(positive(), 600.0),
  async_timeout: v.optional(positive(), 3600.0),
});

export const WorkflowConfigSchema = v.object({
  enabled: bool(true),
  max_parallel_runs: v.optional(int(1), 5),
  default_step_timeout: v.optional(positive(), 3600.0),
});

export const TopicDefaultSchema = v.object({ model: v.string() });

export const DEFAULT_PERMISSION_MODE_BY_ROLE: Record<Role, PermissionMode> = {
  admin: 'bypassPermissions',
  operator: 'acceptEdits',
  viewer: 'default',
};

export function isPlainObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}
/** valibot's object schemas accept arrays; a config block or file must be a real JSON object. */
const objectOnly = () => v.custom<Record<string, unknown>>(isPlainObject, 'a JSON object');
const block = <S extends v.GenericSchema>(schema: S) =>
  v.optional(v.pipe(objectOnly(), schema as unknown as v.GenericSchema<Record<string, unknown>, v.InferOutput<S>>), () => ({}));

// ---------------------------------------------------------------- AgentConfig

export const DEFAULT_MAX_CONCURRENT_CLI = 8;

/** Field-by-field shape; unknown top-level keys are kept so a write-back never drops what a user added. */
export const AgentConfigShape = v.looseObject({
  log_level: v.optional(
    v.pipe(v.string(), v.check((s) => (LOG_LEVELS as readonly string[]).includes(s.toUpperCase()), `one of ${LOG_LEVELS.join(', ')}`)),
    'INFO',
  ),
  provider: v.optional(oneOf(PROVIDERS), DEFAULT_PROVIDER),
  model: v.optional(v.pipe(v.string(), v.check((s) => s.trim() !== '', 'a non-empty model id')), DEFAULT_MODEL),
  svc_home: str('~/.svc'),
  idle_timeout_minutes: v.optional(int(0), 1440),
  session_age_warning_hours: v.optional(int(0), 12),
  daily_reset_hour: v.optional(hour(), 4),
  daily_reset_enabled: bool(false),
  user_timezone: str(),
  max_budget_usd: v.optional(v.nullable(num()), null),
  max_turns: v.optional(v.nullable(int(1)), null),
  max_session_messages: v.optional(v.nullable(int(1)), null),
  permission_mode: v.optional(oneOf(PERMISSION_MODES), 'bypassPermissions'),
  permission_mode_by_role: v.optional(
    v.record(oneOf(ROLES), oneOf(PERMISSION_MODES)),
    () => ({ ...DEFAULT_PERMISSION_MODE_BY_ROLE }),
  ),
  /** Absent stays absent here so the timeouts rule can tell "set in the file" from "defaulted"; normaliseConfig fills it. */
  cli_timeout: v.optional(positive()),
  /**
   * CLI processes running at once across every agent and chat; further turns queue. Daemon-wide, so
   * read from the main config only (not a sub-agent override). 8 by measurement on 2 cores: CLI
   * start-up is CPU-bound (throughput stops growing past 2 at once), a turn is then mostly waiting
   * on the provider's API, and 8 Claude Code processes at ~250 MB RSS each fit a 4 GB machine.
   */
  max_concurrent_cli: v.optional(int(1), DEFAULT_MAX_CONCURRENT_CLI),
  reasoning_effort: v.optional(oneOf(REASONING_EFFORTS), 'medium'),
  file_access: str('all'),
  gemini_api_key: v.optional(v.nullable(v.string()), null),
  transport: v.optional(oneOf(TRANSPORTS), DEFAULT_TRANSPORT),
  transports: v.optional(v.array(oneOf(TRANSPORTS)), () => [] as Transport[]),
  telegram_token: str(),
  /** Where the bot talks to Telegram: its public Bot API, a self-hosted Bot API server, or a test's fake. */
  telegram_api_root: v.optional(v.pipe(v.string(), v.url('an http(s) URL'), v.regex(/^https?:\/\//, 'an http(s) URL')), 'https://api.telegram.org'),
  allowed_user_ids: intList(),
  allowed_group_ids: intList(),
  group_mention_only: bool(false),
  matrix: block(MatrixConfigSchema),
  streaming: block(StreamingConfigSchema),
  docker: block(DockerConfigSchema),
  heartbeat: block(HeartbeatConfigSchema),
  cleanup: block(CleanupConfigSchema),
  memory: block(MemoryConfigSchema),
  rag: block(RagConfigSchema),
  webhooks: block(WebhookConfigSchema),
  fileshare: block(FileshareConfigSchema),
  api: block(ApiConfigSchema),
  panel: block(PanelConfigSchema),
  cli_parameters: block(CLIParametersConfigSchema),
  image: block(ImageConfigSchema),
  timeouts: block(v.object({ ...TimeoutConfigSchema.entries, normal: v.optional(positive()) })),
  tasks: block(TasksConfigSchema),
  scene: block(SceneConfigSchema),
  transcription: block(TranscriptionConfigSchema),
  interagent: block(InteragentConfigSchema),
  workflow: block(WorkflowConfigSchema),
  update_check: bool(true),
  topic_defaults: v.optional(v.record(v.string(), TopicDefaultSchema), () => ({})),
  additional_directories: v.optional(v.array(AbsolutePathSchema), () => [] as string[]),
  interagent_port: v.optional(port(), 8799),
});

/** The names of every field AgentConfig defines (extra keys a user added are not among them). */
export const AGENT_CONFIG_FIELDS = Object.keys(AgentConfigShape.entries) as (keyof typeof AgentConfigShape.entries)[];

export const DEFAULT_CLI_TIMEOUT = 1800.0;

type ConfigShape = v.InferOutput<typeof AgentConfigShape>;
// An intersection, not Omit: the shape is a loose object, and Omit over its index signature drops every named key.
type NormalisedConfig = ConfigShape & { cli_timeout: number; timeouts: ConfigShape['timeouts'] & { normal: number } };

/**
 * Runtime rules SPEC.md states beside the table; applied on every parse so no consumer can see a
 * config that skipped them. Idempotent: parsing a normalised config again changes nothing.
 */
export function normaliseConfig(config: ConfigShape): NormalisedConfig {
  const key = config.gemini_api_key;
  const gemini_api_key = key !== null && ['', 'null', 'none'].includes(key.trim().toLowerCase()) ? null : key;
  // DESIGN.md §10: the legacy field speaks for `timeouts.normal` only when the file set it on purpose
  // (to something other than 600) and left `timeouts.normal` out; an untouched config gives 600 s.
  const legacy = config.cli_timeout;
  const normal = config.timeouts.normal ?? (legacy !== undefined && legacy !== DEFAULT_NORMAL_TIMEOUT ? legacy : DEFAULT_NORMAL_TIMEOUT);
  const first = config.transports[0];
  return {
    ...config,
    gemini_api_key,
    cli_timeout: legacy ?? DEFAULT_CLI_TIMEOUT,
    timeouts: { ...config.timeouts, normal },
    transport: first ?? config.transport,
  };
}

/** AgentConfig as the service uses it: shape plus the runtime rules. */
export const AgentConfigSchema = v.pipe(objectOnly(), AgentConfigShape, v.transform(normaliseConfig));

export type AgentConfig = v.InferOutput<typeof AgentConfigSchema>;
export type AgentConfigInput = v.InferInput<typeof AgentConfigShape>;
export type MatrixConfig = v.InferOutput<typeof MatrixConfigSchema>;
export type CLIParametersConfig = v.InferOutput<typeof CLIParametersConfigSchema>;
export type TimeoutConfig = v.InferOutput<typeof TimeoutConfigSchema>;
export type TasksConfig = v.InferOutput<typeof TasksConfigSchema>;
export type StreamingConfig = v.InferOutput<typeof StreamingConfigSchema>;
export type DockerConfig = v.InferOutput<typeof DockerConfigSchema>;
export type DockerExtra = (typeof DOCKER_EXTRAS)[number];
export type HeartbeatTarget = v.InferOutput<typeof HeartbeatTargetSchema>;
export type HeartbeatConfig = v.InferOutput<typeof HeartbeatConfigSchema>;
export type ImageConfig = v.InferOutput<typeof ImageConfigSchema>;
export type TranscriptionConfig = v.InferOutput<typeof TranscriptionConfigSchema>;
export type SceneConfig = v.InferOutput<typeof SceneConfigSchema>;
export type CleanupConfig = v.InferOutput<typeof CleanupConfigSchema>;
export type MemoryConfig = v.InferOutput<typeof MemoryConfigSchema>;
export type RagConfig = v.InferOutput<typeof RagConfigSchema>;
export type WebhookConfig = v.InferOutput<typeof WebhookConfigSchema>;
export type FileshareConfig = v.InferOutput<typeof FileshareConfigSchema>;
export type ApiConfig = v.InferOutput<typeof ApiConfigSchema>;
export type PanelConfig = v.InferOutput<typeof PanelConfigSchema>;
export type InteragentConfig = v.InferOutput<typeof InteragentConfigSchema>;
export type WorkflowConfig = v.InferOutput<typeof WorkflowConfigSchema>;

/** A complete config with every default and the runtime rules applied. */
export function defaultConfig(): AgentConfig {
  return v.parse(AgentConfigSchema, {});
}

/**
 * What a fresh `config.json` holds: every default, the provider_c key as the string "null" (so the
 * field is visible to whoever edits the file) and no `api` block (`svc api enable` writes that).
 */
export function configFileDefaults(): Record<string, unknown> {
  const defaults: Record<string, unknown> = { ...defaultConfig() };
  defaults.gemini_api_key = 'null';
  delete defaults.api;
  return defaults;
}

// ---------------------------------------------------------------- error wording

/**
 * One line per issue: file, field path, the offending value and what is allowed, e.g.
 * `config.json: permission_mode = "yolo" is not allowed (one of acceptEdits, auto, ...)`.
 */
export function formatIssues(issues: readonly v.BaseIssue<unknown>[], file: string): string[] {
  const lines = issues.map((issue) => formatIssue(issue, file));
  return [...new Set(lines)];
}

function formatIssue(issue: v.BaseIssue<unknown>, file: string): string {
  const path = issue.path ?? [];
  const last = path[path.length - 1];
  const keyIssue = last?.origin === 'key';
  const field = pathText(keyIssue ? path.slice(0, -1) : path);
  const rule = ruleText(issue);
  // A forwarded object-level check reports the whole object as input; the field's own value is what to show.
  const input = issue.type === 'partial_check' || issue.type === 'check' ? (last && 'value' in last ? last.value : issue.input) : issue.input;
  if (keyIssue && issue.input === undefined) return `${file}: ${pathText(path)} is missing (required)`;
  if (keyIssue) return `${file}: ${field || 'top level'} key ${show(issue.input)} is not allowed (${rule})`;
  if (input === undefined) return `${file}: ${field || 'top level'} is missing (required: ${rule})`;
  const verb = issue.kind === 'schema' && issue.type !== 'picklist' ? 'has the wrong type' : 'is not allowed';
  return `${file}: ${field || 'top level'} = ${show(input)} ${verb} (${rule})`;
}

function ruleText(issue: v.BaseIssue<unknown>): string {
  if (issue.kind === 'schema') {
    if (issue.type === 'picklist') return `one of ${listExpected(issue.expected)}`;
    if (issue.type === 'custom') return `expected ${issue.message}`;
    return `expected ${(issue.expected ?? issue.type).replace(/^Object$/, 'an object').replace(/^Array$/, 'a list')}`;
  }
  return issue.message;
}

function listExpected(expected: string | null): string {
  return (expected ?? '').replace(/^\(|\)$/g, '').split(' | ').map((s) => s.replace(/^"|"$/g, '')).join(', ');
}

function pathText(path: readonly { key: unknown }[]): string {
  let out = '';
  for (const item of path) {
    if (typeof item.key === 'number') out += `[${item.key}]`;
    else out += out ? `.${String(item.key)}` : String(item.key);
  }
  return out;
}

function show(value: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

// ---------------------------------------------------------------- JSON text

export type JsonTextResult = { ok: true; value: unknown } | { ok: false; error: string };

/**
 * JSON.parse with an error that names the file, line and column: V8's own message often has no
 * position ("Unexpected end of JSON input"), which is useless for a hand-edited file.
 */
export function parseJsonText(text: string, file: string): JsonTextResult {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    const at = jsonErrorOffset(text);
    const { line, column } = lineColumn(text, at.offset);
    const near = text.slice(at.offset, at.offset + 20).split('\n')[0];
    const where = at.offset >= text.length ? '' : `, near ${JSON.stringify(near)}`;
    return {
      ok: false,
      error: `${file}: not valid JSON at line ${line} column ${column} (${at.reason}${where}); fix the file by hand, it was not changed`,
    };
  }
}

function lineColumn(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, offset);
  const line = before.split('\n').length;
  const column = offset - (before.lastIndexOf('\n') + 1) + 1;
  return { line, column };
}

/** A small JSON scanner that only finds where the text stops being JSON and why. */
function jsonErrorOffset(text: string): { offset: number; reason: string } {
  let i = 0;
  const fail = (reason: string): never => {
    throw i >= text.length ? { offset: text.length, reason: 'unexpected end of file, it looks truncated' } : { offset: i, reason };
  };
  const ws = () => {
    while (i < text.length && ' \t\n\r'.includes(text[i]!)) i++;
  };
  const str = () => {
    i++;
    while (i < text.length) {
      const c = text[i]!;
      if (c === '"') return void i++;
      if (c === '\\') {
        const n = text[i + 1];
        if (n === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) fail('bad \\u escape');
          i += 6;
        } else if (n !== undefined && '"\\/bfnrt'.includes(n)) i += 2;
        else fail('bad escape in string');
      } else if (c < ' ') fail(c === '\n' ? 'unterminated string' : 'control character in string');
      else i++;
    }
    fail('unterminated string');
  };
  const value = (): void => {
    ws();
    const c = text[i];
    if (c === undefined) fail('unexpected end of file');
    if (c === '{') {
      i++;
      ws();
      if (text[i] === '}') return void i++;
      for (;;) {
        ws();
        if (text[i] !== '"') fail(text[i] === '}' ? 'trailing comma' : 'expected a quoted key');
        str();
        ws();
        if (text[i] !== ':') fail("expected ':' after key");
        i++;
        value();
        ws();
        if (text[i] === ',') { i++; continue; }
        if (text[i] === '}') return void i++;
        fail("expected ',' or '}'");
      }
    }
    if (c === '[') {
      i++;
      ws();
      if (text[i] === ']') return void i++;
      for (;;) {
        ws();
        if (text[i] === ']') fail('trailing comma');
        value();
        ws();
        if (text[i] === ',') { i++; continue; }
        if (text[i] === ']') return void i++;
        fail("expected ',' or ']'");
      }
    }
    if (c === '"') return str();
    const m = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i, i + 400));
    if (m && m[0] !== '' && m[0] !== '-') return void (i += m[0].length);
    for (const word of ['true', 'false', 'null']) if (text.startsWith(word, i)) return void (i += word.length);
    fail(`unexpected character ${JSON.stringify(c)}`);
  };
  try {
    value();
    ws();
    if (i < text.length) fail('unexpected text after the end');
    return { offset: text.length, reason: 'invalid JSON' };
  } catch (e) {
    return e as { offset: number; reason: string };
  }
}

// ---------------------------------------------------------------- validation entry point

/** `unknownKeys`: dotted paths the schema does not know; accepted (and kept on write-back) but most likely typos. */
export type ConfigCheck = { ok: true; config: AgentConfig; unknownKeys: string[] } | { ok: false; errors: string[] };

/** Validate an already-parsed JSON value as AgentConfig (with the runtime rules applied). */
export function validateConfig(raw: unknown, file: string): ConfigCheck {
  const result = v.safeParse(AgentConfigSchema, raw);
  return result.success
    ? { ok: true, config: result.output, unknownKeys: unknownKeys(raw, AgentConfigShape) }
    : { ok: false, errors: formatIssues(result.issues, file) };
}

/** The object entries a schema checks, seen through optional/nullable/pipe wrappers; null for anything else. */
function entriesOf(schema: v.GenericSchema): Record<string, v.GenericSchema> | null {
  const s = schema as unknown as { type: string; wrapped?: v.GenericSchema; pipe?: v.GenericSchema[]; entries?: Record<string, v.GenericSchema> };
  if (s.type === 'optional' || s.type === 'nullable' || s.type === 'nullish') return entriesOf(s.wrapped!);
  if (s.type === 'object' || s.type === 'loose_object' || s.type === 'strict_object') return s.entries!;
  if (s.pipe) {
    for (const step of s.pipe.slice(1)) {
      const found = entriesOf(step);
      if (found) return found;
    }
  }
  return null;
}

/** Keys of `raw` (recursively, through nested blocks, never into maps or lists) that `schema` does not name. */
function unknownKeys(raw: unknown, schema: v.GenericSchema, prefix = ''): string[] {
  const entries = entriesOf(schema);
  if (!entries || !isPlainObject(raw)) return [];
  return Object.entries(raw).flatMap(([key, value]) => {
    const path = prefix ? `${prefix}.${key}` : key;
    if (!Object.hasOwn(entries, key)) return [path];
    return unknownKeys(value, entries[key]!, path);
  });
}
