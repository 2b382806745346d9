// Longer than 450 lines: most of it is the table of one-line notes for every config field, kept
// beside the schema walk that checks each field has one.
import * as v from 'valibot';
import { isDeepStrictEqual } from 'node:util';
import { effectiveSubAgentConfig } from '../machines/index.js';
import {
  AgentConfigShape,
  HOT_RELOADABLE_FIELDS,
  SUB_AGENT_INHERITED_FIELDS,
  SubAgentConfigSchema,
  defaultConfig,
  type AgentConfig,
} from '../schemas/index.js';

/*
 * `svc config reference` and docs/configuration.md: every field of config.json and of a sub-agent
 * registry entry, with its type, default and reload behaviour read from the valibot schemas that
 * parse the files, so the reference cannot say something the parser does not do. Only the one-line
 * notes are written by hand, keyed by dotted path; a test fails when a schema field has none.
 */

export interface FieldRow {
  /** Dotted path: `api.port`, `heartbeat.group_targets[].chat_id`; registry fields as `agents[].name`. */
  path: string;
  type: string;
  /** Rendered default, or `required` / `inherited`. */
  default: string;
  /** Config fields only: applied by hot reload, or read at start. */
  reload?: 'hot' | 'restart';
}

interface Node {
  type: string;
  kind?: string;
  wrapped?: Node;
  pipe?: Node[];
  entries?: Record<string, Node>;
  item?: Node;
  key?: Node;
  value?: Node;
  options?: readonly string[];
  requirement?: unknown;
  message?: unknown;
}

const asNode = (s: unknown) => s as Node;

/** The schema with optional/nullable wrappers taken off, and whether null is accepted. */
function unwrap(schema: Node): { inner: Node; nullable: boolean } {
  let inner = schema;
  let nullable = false;
  while (inner.type === 'optional' || inner.type === 'nullable' || inner.type === 'nullish') {
    if (inner.type !== 'optional') nullable = true;
    inner = inner.wrapped!;
  }
  return { inner, nullable };
}

/** The object entries a schema checks (through wrappers and pipes), or null for a leaf. */
function objectEntries(schema: Node): Record<string, Node> | null {
  const { inner } = unwrap(schema);
  if (inner.entries && /object$/.test(inner.type)) return inner.entries;
  if (inner.pipe) {
    for (const step of inner.pipe.slice(1)) {
      const found = objectEntries(step);
      if (found) return found;
    }
  }
  return null;
}

/** An array of objects: its items' entries, documented as `path[].key`. */
function itemEntries(schema: Node): Record<string, Node> | null {
  const { inner } = unwrap(schema);
  const base = inner.pipe ? inner.pipe[0]! : inner;
  return base.type === 'array' ? objectEntries(base.item!) : null;
}

/** A type as a reader of the JSON file would say it, with the rule a check adds. */
export function typeText(schema: Node): string {
  const { inner, nullable } = unwrap(schema);
  const base = inner.pipe ? inner.pipe[0]! : inner;
  const checks = (inner.pipe ?? [])
    .slice(1)
    .filter((step) => step.kind === 'validation' && typeof step.message === 'string')
    .map((step) => step.message as string);
  let text: string;
  switch (base.type) {
    case 'picklist':
      text = `one of ${base.options!.map((o) => `\`${o}\``).join(', ')}`;
      break;
    case 'array':
      text = objectEntries(base.item!) ? 'list of objects' : `list of (${typeText(base.item!)})`;
      break;
    case 'record':
      text = `map of (${typeText(base.key!)}) to (${typeText(base.value!)})`;
      break;
    case 'object':
    case 'loose_object':
    case 'strict_object':
      text = `{${Object.entries(base.entries!).map(([k, s]) => `${k}: ${typeText(s)}`).join(', ')}}`;
      break;
    case 'custom':
      text = 'object';
      break;
    default:
      text = base.type;
  }
  // A check's message names the rule better than the base type (`a whole number >= 0`).
  const rule = checks.length ? checks.join('; ') : null;
  if (rule && (base.type === 'number' || base.type === 'string')) text = `${base.type}: ${rule}`;
  else if (rule) text = `${text} (${rule})`;
  return nullable ? `${text}, or null` : text;
}

/** A default as it would be written in config.json; long multi-line text is cut to its first line. */
function defaultText(value: unknown): string {
  if (value === undefined) return 'required';
  if (typeof value === 'string' && value.includes('\n')) return `\`${JSON.stringify(value.split('\n')[0]!)}\` … (several lines)`;
  return `\`${JSON.stringify(value)}\``;
}

function at(obj: unknown, path: string[]): unknown {
  let cur = obj;
  for (const key of path) cur = cur !== null && typeof cur === 'object' ? (cur as Record<string, unknown>)[key] : undefined;
  return cur;
}

const HOT: ReadonlySet<string> = new Set(HOT_RELOADABLE_FIELDS);

/**
 * Every config.json field: leaves of nested blocks as dotted paths. The default is what a config
 * with the field left out gets (the parse of `{}`, runtime rules included, e.g. `timeouts.normal`);
 * list items have no such config, so theirs is the schema's own default.
 */
export function configFields(): FieldRow[] {
  const defaults = defaultConfig();
  const rows: FieldRow[] = [];
  const walk = (entries: Record<string, Node>, prefix: string[], top: string | null, inItem: boolean): void => {
    for (const [key, schema] of Object.entries(entries)) {
      const path = [...prefix, key];
      const topKey = top ?? key;
      const reload = HOT.has(topKey) ? 'hot' : 'restart';
      const nested = objectEntries(schema);
      if (nested) {
        walk(nested, path, topKey, inItem);
        continue;
      }
      const fallback = inItem ? v.getDefault(schema as unknown as v.GenericSchema) : at(defaults, path);
      // An optional field with no default (one SPEC.md does not name) is simply absent: `none`, not `required`.
      const absent = fallback === undefined && schema.type === 'optional';
      rows.push({ path: path.join('.'), type: typeText(schema), default: absent ? 'none' : defaultText(fallback), reload });
      const items = itemEntries(schema);
      if (items) walk(items, [...path.slice(0, -1), `${key}[]`], topKey, true);
    }
  };
  walk(asNode(AgentConfigShape).entries!, [], null, false);
  return rows;
}

/**
 * Every field of one entry of the sub-agent registry (`_secrets/agents.json`). The default is what
 * an entry that leaves the field out gets, found by merging an entry of just a name over a main
 * config whose every field differs from its defaults where it matters: a field equal to the main
 * config's is inherited; one that is not was forced (only the keys that differ are shown).
 */
export function registryFields(): FieldRow[] {
  const main: AgentConfig = { ...defaultConfig(), additional_directories: ['/main-only'] };
  main.api = { ...main.api, enabled: true };
  const agent = effectiveSubAgentConfig(main, null, { name: 'probe' } as never, { agentsDir: '/agents' }) as unknown as Record<string, unknown>;
  const inherited: ReadonlySet<string> = new Set(SUB_AGENT_INHERITED_FIELDS);
  const blocks = asNode(AgentConfigShape).entries!;
  return Object.entries(objectEntries(asNode(SubAgentConfigSchema))!).map(([key, schema]) => {
    const { nullable } = unwrap(schema);
    // A block is described once, in the main config's section.
    const type = objectEntries(schema) && blocks[key] && objectEntries(blocks[key]) ? `object: keys of the \`${key}\` block${nullable ? ', or null' : ''}` : typeText(schema);
    const row = { path: `agents[].${key}`, type };
    if (schema.type !== 'optional') return { ...row, default: 'required' };
    const mine = agent[key];
    const theirs = (main as unknown as Record<string, unknown>)[key];
    if (inherited.has(key) && isDeepStrictEqual(mine, theirs)) return { ...row, default: 'main config\'s' };
    if (mine === undefined) return { ...row, default: 'none' };
    if (mine !== null && typeof mine === 'object' && !Array.isArray(mine) && theirs !== null && typeof theirs === 'object') {
      const changed = Object.fromEntries(Object.entries(mine).filter(([k, val]) => !isDeepStrictEqual(val, (theirs as Record<string, unknown>)[k])));
      return { ...row, default: Object.keys(changed).length ? defaultText(changed) : `defaults of \`${key}\`` };
    }
    return { ...row, default: defaultText(mine) };
  });
}

/**
 * What each field is for, in a user's words. Keyed by the paths configFields() and registryFields()
 * produce; a field added to a schema without a note here fails test/bin/config-reference.test.ts.
 */
export const FIELD_NOTES: Readonly<Record<string, string>> = {
  log_level: 'Log level of svc.log and stderr; `--verbose` on `svc start` overrides it with DEBUG.',
  provider: 'Default provider CLI: `claude` (Claude Code), `codex` (Codex) or `gemini` (Gemini CLI).',
  model: 'Default model id; its provider is derived from it (Claude ids, `gemini-*` and Gemini aliases, else Codex).',
  svc_home: 'Informational: the home svc runs on is `--home DIR`, else `$SVC_HOME`, else `~/.svc`; changing this field does not move it.',
  idle_timeout_minutes: 'A chat session idle this long starts afresh; 0 never expires sessions.',
  session_age_warning_hours: 'After a session is this old, every 10th answer adds a reminder to start a new one with `/new`.',
  daily_reset_hour: 'Hour (in `user_timezone`) of the daily session reset.',
  daily_reset_enabled: 'Start every session afresh once a day at `daily_reset_hour`.',
  user_timezone: 'IANA time zone (e.g. `Europe/Berlin`) for daily session resets and the dated upload folders; empty uses `TZ`, then the host\'s zone, then UTC.',
  max_budget_usd: 'Spending cap per turn passed to Claude Code (`--max-budget-usd`); null means none.',
  max_turns: 'Agentic turns per message passed to Claude Code (`--max-turns`); null means no limit.',
  max_session_messages: 'A session rolls over to a new one after this many messages; null means never.',
  permission_mode: 'CLI permission mode for callers whose role has no entry in `permission_mode_by_role`.',
  permission_mode_by_role: 'Permission mode per user role; `{}` makes every caller use `permission_mode`.',
  cli_timeout: 'Seconds an inter-agent (or scheduled) turn may run. If set to anything but 600 while `timeouts.normal` is not set, it also becomes `timeouts.normal`.',
  max_concurrent_cli: 'CLI processes running at once across all agents and chats; later turns wait in order and their chat is told.',
  reasoning_effort: 'Reasoning effort passed to the CLI (Codex only for models that support it).',
  file_access: 'What `/files` and `/api/transcribe` may serve: `all`, `home` (the svc home) or `workspace`; any other value acts as `workspace`. svc\'s own secrets are never served.',
  gemini_api_key: 'API key for Gemini CLI when it is not signed in; the strings `""`, `"null"` and `"none"` mean no key.',
  transport: 'Chat transport of the main agent: `telegram` or `matrix`.',
  transports: 'Transports to run at once; when empty, `transport` alone is used, otherwise `transport` is the first entry.',
  telegram_token: 'Telegram bot token (from @BotFather); without it the telegram transport stays off.',
  telegram_api_root: 'Bot API server the bot talks to: Telegram\'s public one, or a self-hosted Bot API server.',
  allowed_user_ids: 'Telegram user ids allowed to talk to the bot; the first is also the direct API\'s chat id when `api.chat_id` is 0.',
  allowed_group_ids: 'Telegram group ids the bot answers in; empty means no groups. In a group both the group and the sender must be allowed.',
  group_mention_only: 'In groups, answer only messages that mention or reply to the bot.',
  'matrix.homeserver': 'Matrix homeserver URL.',
  'matrix.user_id': 'The bot\'s Matrix user id (`@bot:example.org`).',
  'matrix.password': 'Password for the first login; the credentials are then kept in `<store_path>/credentials.json`.',
  'matrix.access_token': 'Access token to restore a session without a password (with `device_id`).',
  'matrix.device_id': 'Device id that goes with `access_token`.',
  'matrix.allowed_rooms': 'Room ids or aliases the bot answers in.',
  'matrix.allowed_users': 'Matrix user ids allowed to talk to the bot.',
  'matrix.store_path': 'Directory of the end-to-end key store, relative to the home.',
  'streaming.enabled': 'Stream answers into the chat as they are written.',
  'streaming.min_chars': 'Characters gathered before the first streamed message is sent.',
  'streaming.max_chars': 'Characters per streamed message before a new one is started.',
  'streaming.idle_ms': 'Milliseconds without new text after which what has arrived is sent.',
  'streaming.edit_interval_seconds': 'Least time between two edits of a streamed message.',
  'streaming.max_edit_failures': 'Failed edits after which streaming falls back to one final message.',
  'streaming.append_mode': 'Send each streamed part as a new message instead of editing one.',
  'streaming.sentence_break': 'Prefer to cut streamed parts at the end of a sentence.',
  'docker.enabled': 'Run the CLIs inside a Docker sandbox container; if it cannot be set up, svc warns and runs them on the host.',
  'docker.image_name': 'Image of the sandbox.',
  'docker.container_name': 'Name of the sandbox container.',
  'docker.auto_build': 'Build the image when it is missing.',
  'docker.mount_host_cache': 'Mount the host\'s cache directory into the container (off: it exposes the host cache).',
  'docker.mounts': 'Host directories (absolute, existing) mounted at `/mnt/<name>` in the container.',
  'docker.extras': 'Extra packages built into the image; dependencies are added automatically. A change needs a rebuild.',
  'heartbeat.enabled': 'Send the agent a periodic check-in prompt. Turning it on takes a restart.',
  'heartbeat.interval_minutes': 'Minutes between heartbeats.',
  'heartbeat.cooldown_minutes': 'Skip a heartbeat when the user was active this recently.',
  'heartbeat.quiet_start': 'Hour (in `user_timezone`) from which no heartbeats are sent.',
  'heartbeat.quiet_end': 'Hour (in `user_timezone`) at which heartbeats resume.',
  'heartbeat.prompt': 'Prompt sent on each heartbeat.',
  'heartbeat.ack_token': 'Reply meaning "nothing to report"; such replies are not forwarded.',
  'heartbeat.group_targets': 'Group chats that get heartbeats of their own; each entry\'s unset fields fall back to the ones above.',
  'heartbeat.group_targets[].chat_id': 'Chat id of the group.',
  'heartbeat.group_targets[].topic_id': 'Topic inside the group; null for the whole chat.',
  'heartbeat.group_targets[].prompt': 'Prompt for this group; null uses `heartbeat.prompt`.',
  'heartbeat.group_targets[].ack_token': 'Acknowledgement reply for this group; null uses `heartbeat.ack_token`.',
  'heartbeat.group_targets[].interval_minutes': 'Interval for this group; null uses `heartbeat.interval_minutes`.',
  'heartbeat.group_targets[].quiet_start': 'Quiet start for this group; null uses `heartbeat.quiet_start`.',
  'heartbeat.group_targets[].quiet_end': 'Quiet end for this group; null uses `heartbeat.quiet_end`.',
  'cleanup.enabled': 'Delete old files from the workspace once a day. Turning it on takes a restart.',
  'cleanup.media_files_days': 'Days received media files are kept.',
  'cleanup.output_to_user_days': 'Days files in `workspace/output_to_user` are kept.',
  'cleanup.api_files_days': 'Days files uploaded through the API (`workspace/api_files`) are kept.',
  'cleanup.check_hour': 'Hour (in `user_timezone`) the cleanup runs.',
  'memory.enabled': 'Inject the agent\'s memory modules into its sessions.',
  'memory.module_line_limit': 'Soft limit of lines per memory module.',
  'memory.session_max_age_days': 'Days after which old session records are pruned.',
  'memory.check_hour': 'Hour (in `user_timezone`) of the daily memory maintenance.',
  'memory.hook_compact_lines': 'Lines per module in the reminder re-injected every 6 messages.',
  'memory.inject_all_modules': 'Inject every module, not only those in the Always Load table of MAINMEMORY.md.',
  'memory.vector_search': 'Inject the facts most similar to the message instead of whole modules.',
  'memory.vector_model': 'Embedding model for vector search; empty detects one.',
  'memory.vector_results': 'Facts injected per message by vector search.',
  'webhooks.enabled': 'Run the webhook server.',
  'webhooks.host': 'Address the webhook server listens on.',
  'webhooks.port': 'Port of the webhook server.',
  'webhooks.token': 'Bearer token accepted by every hook without its own; generated when empty.',
  'webhooks.max_body_bytes': 'Largest accepted webhook body.',
  'webhooks.rate_limit_per_minute': 'Webhook calls accepted per minute (sliding window).',
  'rag.enabled': 'Retrieve indexed workspace and memory chunks for prompts (`PUT /api/rag/config`).',
  'rag.embedding_model': 'Embedding model of the index; empty detects one.',
  'rag.reranker_enabled': 'Rerank retrieved chunks before the best `top_k_final` are used.',
  'rag.reranker_model': 'Reranker model; empty detects one.',
  'rag.index_workspace': 'Index the agent workspace.',
  'rag.index_memory': 'Index the memory modules.',
  'rag.top_k_retrieval': 'Chunks retrieved per query before reranking.',
  'rag.top_k_final': 'Chunks put into the prompt; at most `top_k_retrieval`.',
  'fileshare.enabled': 'Run the file-share server and tell agent tools about it (`FILESHARE_URL`).',
  'fileshare.host': 'Address the file-share server listens on.',
  'fileshare.port': 'Port of the file-share server.',
  'fileshare.allow_public': 'Let the file-share server (which has no authentication) listen on an address other than loopback; without it svc does not start it there.',
  'api.enabled': 'Run the API server (direct encrypted API); `svc api enable` sets it.',
  'api.host': 'Address the API listens on; `svc api enable` writes 127.0.0.1 unless told otherwise.',
  'api.port': 'Port of the API (HTTP and WebSocket).',
  'api.token': 'Bearer token of the API; generated by `svc api enable` (or at start when empty).',
  'api.chat_id': 'Chat id of API connections whose auth frame names none; 0 uses the first of `allowed_user_ids`, else 1.',
  'api.allow_public': 'Acknowledge that the API listens on a public address (silences the start-up warning and `svc doctor`).',
  'api.jwt_secret': 'Secret that signs the admin panel\'s tokens (HS256); generated at start when empty. Changing it logs everybody out.',
  'api.trusted_proxies': 'Addresses of reverse proxies whose `X-Forwarded-For` names the client (for the login rate limit, and the address login and audit records show); exact IPs in any spelling (`::ffff:127.0.0.1` is 127.0.0.1), no ranges. Absent or empty: the peer address is the client.',
  'api.cors_origins': 'Browser origins allowed to call the API with credentials (exact origins).',
  'panel.enabled': 'Serve the admin web panel (docs/panel.md) on the API port and on its own listener; off, those paths answer 404. Built into `dist/panel` by `npm run build`.',
  'panel.listen': 'The panel\'s own listener on `panel.host:panel.port`: `auto` opens it only while the API server is off (`api.enabled` false), `on` always, `off` never. Opened and closed at once when svc runs a server already; otherwise applied at the next start. `svc admin start` / `svc admin stop` set it.',
  'panel.host': 'Address of the panel\'s own listener; a public one is warned about as the API\'s is.',
  'panel.port': 'Port of the panel\'s own listener; a busy port is logged and svc runs on without it.',
  'cli_parameters.claude': 'Extra arguments appended to every `claude` run; one argument per list item.',
  'cli_parameters.codex': 'Extra arguments appended to every `codex` run; one argument per list item.',
  'cli_parameters.gemini': 'Extra arguments appended to every `gemini` run; one argument per list item.',
  'image.max_dimension': 'Incoming images larger than this (pixels) are scaled down.',
  'image.output_format': 'Format incoming images are converted to.',
  'image.quality': 'Quality of lossy image formats.',
  'timeouts.normal': 'Seconds a foreground chat turn may run.',
  'timeouts.background': 'Seconds a named background session turn may run.',
  'timeouts.subagent': 'Reserved.',
  'timeouts.warning_intervals': 'Seconds before the deadline at which a timeout warning is logged.',
  'timeouts.extend_on_activity': 'Extend the deadline when the CLI is still producing output.',
  'timeouts.activity_extension': 'Seconds added per extension.',
  'timeouts.max_extensions': 'Extensions per turn at most.',
  'tasks.enabled': 'Run delegated background tasks.',
  'tasks.max_parallel': 'Tasks running at once per chat.',
  'tasks.timeout_seconds': 'Seconds a task may run.',
  'scene.reaction_style': 'How the bot acknowledges a message: no reaction, a "seen" reaction, or detailed status.',
  'scene.technical_footer': 'Append model, tokens, cost and time to each answer.',
  'transcription.language': 'Language of voice messages (`auto` or a language code).',
  'transcription.model': 'Size of the local speech-to-text model.',
  'transcription.command': 'Your own transcription command, tried first: called with the audio file\'s path, prints the text.',
  'interagent.sync_timeout': 'Seconds a synchronous call to another agent may take.',
  'interagent.async_timeout': 'Seconds an asynchronous call to another agent may take.',
  'workflow.enabled': 'Run workflows from `workflows/*.yaml`; when false, new runs are refused and runs already going finish.',
  'workflow.max_parallel_runs': 'Workflow runs active (running or waiting) at once; a run beyond it is refused, not queued.',
  'workflow.default_step_timeout': 'Seconds an ask_agent step may take unless it sets its own `timeout`.',
  update_check: 'Check periodically for a newer svc and say so.',
  topic_defaults: 'Default model per chat topic (key: topic id); a `@model` directive in a message still wins.',
  additional_directories: 'Extra directories (absolute, existing) the main agent\'s Claude Code may use besides its workspace.',
  interagent_port: 'Port of the internal API on 127.0.0.1 (agents\' tools and `svc ask` use it).',

  'agents[].name': 'Unique lowercase name; the agent\'s home is `agents/<name>/`. `main` is reserved.',
  'agents[].transport': 'The agent\'s own chat transport; it needs its own bot.',
  'agents[].telegram_token': 'The agent\'s Telegram bot token; required when its transport is telegram (the default).',
  'agents[].matrix': 'The agent\'s Matrix account (a `matrix` block); required when its transport is matrix.',
  'agents[].allowed_user_ids': 'Users allowed to talk to this agent.',
  'agents[].allowed_group_ids': 'Groups this agent answers in.',
  'agents[].group_mention_only': 'As the main config\'s field, for this agent.',
  'agents[].provider': 'As the main config\'s field, for this agent.',
  'agents[].model': 'As the main config\'s field, for this agent; `/model` in its chat writes it here.',
  'agents[].log_level': 'As the main config\'s field, for this agent.',
  'agents[].idle_timeout_minutes': 'As the main config\'s field, for this agent.',
  'agents[].session_age_warning_hours': 'As the main config\'s field, for this agent.',
  'agents[].daily_reset_hour': 'As the main config\'s field, for this agent.',
  'agents[].daily_reset_enabled': 'As the main config\'s field, for this agent.',
  'agents[].max_budget_usd': 'As the main config\'s field, for this agent.',
  'agents[].max_turns': 'As the main config\'s field, for this agent.',
  'agents[].max_session_messages': 'As the main config\'s field, for this agent.',
  'agents[].permission_mode': 'As the main config\'s field, for this agent.',
  'agents[].cli_timeout': 'As the main config\'s field, for this agent.',
  'agents[].reasoning_effort': 'As the main config\'s field, for this agent.',
  'agents[].file_access': 'As the main config\'s field, for this agent.',
  'agents[].user_timezone': 'As the main config\'s field, for this agent.',
  'agents[].streaming': 'Any keys of the `streaming` block; the rest come from the main config.',
  'agents[].docker': 'Any keys of the `docker` block; the rest come from the main config.',
  'agents[].heartbeat': 'Any keys of the `heartbeat` block; the rest come from the main config.',
  'agents[].cleanup': 'Any keys of the `cleanup` block; the rest come from the main config.',
  'agents[].webhooks': 'Any keys of the `webhooks` block; the rest come from the main config.',
  'agents[].cli_parameters': 'Any keys of the `cli_parameters` block; the rest come from the main config.',
  'agents[].api': 'Any keys of the `api` block over the main config\'s; without a block the agent runs no API.',
  'agents[].additional_directories': 'Extra directories for this agent; not inherited from the main config (empty: workspace only).',
  'agents[].interagent_token': 'Token this agent\'s tools present to the internal API; a random string of 32 or more characters.',
  'agents[].can_call': 'Agents this one may call through the internal API.',
  'agents[].display_name': 'Name shown for the agent.',
  'agents[].description': 'What the agent is for, shown in agent lists.',
};

/**
 * Fields (or whole blocks) this version accepts and keeps but nothing reads yet: the chat
 * transports, the sandbox, scheduled observers and the admin panel are not built. Said in the
 * reference so nobody sets them and waits for an effect; remove an entry when its feature lands.
 */
export const NOT_YET_USED: readonly string[] = [
  'update_check',
  'docker', 'streaming.append_mode', 'rag',
  'memory.vector_search', 'memory.vector_model', 'memory.vector_results', 'timeouts.subagent',
  'timeouts.warning_intervals',
];

export function notYetUsed(path: string): boolean {
  return NOT_YET_USED.some((p) => path === p || path.startsWith(`${p}.`) || path.startsWith(`${p}[]`));
}

const cell = (s: string) => s.replace(/\|/g, '\\|');

function table(rows: FieldRow[], withReload: boolean): string[] {
  const head = withReload ? ['| Field | Type | Default | Reload | Note |', '|---|---|---|---|---|'] : ['| Field | Type | Default | Note |', '|---|---|---|---|'];
  return [
    ...head,
    ...rows.map((r) => {
      const note = `${notYetUsed(r.path.replace(/^agents\[\]\./, '')) ? '*Not used by this version yet.* ' : ''}${FIELD_NOTES[r.path] ?? ''}`;
      const cells = [`\`${r.path}\``, r.type, r.default, ...(withReload ? [r.reload ?? ''] : []), note];
      return `| ${cells.map(cell).join(' | ')} |`;
    }),
  ];
}

/** The whole of docs/configuration.md (`npm run docs` writes it; a test keeps it current). */
export function configReference(): string {
  const rows = configFields();
  const topLevel = rows.filter((r) => !r.path.includes('.'));
  const blocks = new Map<string, FieldRow[]>();
  for (const r of rows) {
    if (!r.path.includes('.')) continue;
    const block = r.path.split('.')[0]!;
    blocks.set(block, [...(blocks.get(block) ?? []), r]);
  }
  const lines = [
    '# Configuration reference',
    '',
    '<!-- Generated by `npm run docs` (`./bin/svc.js config reference`) from the schemas that parse these files. Do not edit by hand. -->',
    '',
    'svc reads `~/.svc/config/config.json` (the home is `$SVC_HOME` or `--home DIR` if given). The first',
    '`svc start` writes it with every default below; `./bin/svc.js config show` prints the configuration in',
    'force (secrets as `***`) and `./bin/svc.js config validate` checks the file without starting.',
    '',
    '- A field left out takes its default. Keys svc does not know are kept but ignored, with a warning.',
    '- svc checks the file every 5 seconds. A valid edit applies fields marked **hot** at once; fields',
    '  marked **restart** are recorded and take effect at the next start. An invalid edit is rejected',
    '  with a warning (stderr and `logs/svc.log`) and the last good configuration stays in force.',
    '- Nested blocks are written as JSON objects: `api.port` is `{"api": {"port": 8741}}`. A block',
    '  may name only the keys it changes. `[]` marks the fields of each item of a list.',
    '- Fields marked *Not used by this version yet* are accepted and kept, but nothing in this version',
    '  of svc reads them: the Telegram and Matrix transports and the Docker sandbox are not included',
    '  yet.',
    '- Timeouts: `cli_timeout` (default 1800) is copied into `timeouts.normal` only when the file sets',
    '  `cli_timeout` to a value other than 600 and does not set `timeouts.normal`; an untouched',
    '  configuration gives foreground turns 600 seconds.',
    '',
    '## Top-level fields',
    '',
    ...table(topLevel, true),
  ];
  for (const [block, blockRows] of blocks) {
    lines.push('', `## \`${block}\``, '', ...table(blockRows, true));
  }
  lines.push(
    '',
    '## Sub-agent registry',
    '',
    'Sub-agents are listed in `~/.svc/_secrets/agents.json` (the older location `~/.svc/agents.json` is',
    'still read): a JSON array with one object per agent. Each agent has its own home',
    '`~/.svc/agents/<name>/` and its configuration is, from lowest to highest priority, the main',
    '`config.json`, the agent\'s own `agents/<name>/config/config.json`, then the fields of its entry',
    'that are set and not null. Its `timeouts` and `tasks` always come from the main configuration.',
    '',
    'svc checks the file every 5 seconds: a new entry starts an agent, a removed one stops it, and a',
    'change of its transport, bot token or Matrix account restarts it. Other changes take effect after',
    '`/agent_restart <name>` in a chat, or a restart of svc.',
    '',
    ...table(registryFields(), false),
    '',
  );
  return lines.join('\n');
}
