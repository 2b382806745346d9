import {
  AGENT_CONFIG_FIELDS,
  CLAUDE_MODELS,
  DEFAULT_TRANSPORT,
  GEMINI_ALIASES,
  HOT_RELOADABLE_FIELDS,
  SUB_AGENT_INHERITED_FIELDS,
  SvcError,
  defaultConfig,
  isPlainObject,
  normaliseConfig,
  parseJsonText,
  validateConfig,
  validateRegistry,
  type AgentConfig,
  type ConfigCheck,
  type Provider,
  type RegistryCheck,
  type SubAgentConfig,
} from '../schemas/index.js';

// The rule itself lives beside the schema, so every parse applies it (the loader in store/ included).
export { normaliseConfig };

/** Validate a parsed JSON value as config.json; errors name file, field, value and what is allowed. */
export function parseConfig(raw: unknown, file: string): ConfigCheck {
  return validateConfig(raw, file);
}

/**
 * Text of config.json → config, with the existence of `additional_directories` decided by the
 * caller (I/O): `existingDirs` lists the entries it found to be directories.
 */
export function parseConfigText(text: string, file: string, existingDirs: readonly string[]): ConfigCheck {
  const json = parseJsonText(text, file);
  if (!json.ok) return { ok: false, errors: [json.error] };
  const checked = validateConfig(json.value, file);
  if (!checked.ok) return checked;
  const missing = missingDirectoryErrors(checked.config.additional_directories, existingDirs, file);
  return missing.length ? { ok: false, errors: missing } : checked;
}

export function missingDirectoryErrors(dirs: readonly string[], existingDirs: readonly string[], file: string): string[] {
  const present = new Set(existingDirs);
  return dirs.flatMap((d, i) =>
    present.has(d) ? [] : [`${file}: additional_directories[${i}] = ${JSON.stringify(d)} is not allowed (an existing directory; this path does not exist or is not a directory)`],
  );
}

export function parseRegistryText(text: string, file: string): RegistryCheck {
  const json = parseJsonText(text, file);
  if (!json.ok) return { ok: false, errors: [json.error] };
  return validateRegistry(json.value, file);
}

// ---------------------------------------------------------------- hot reload

const HOT = new Set<string>(HOT_RELOADABLE_FIELDS);

export interface ConfigDiff {
  hot: string[];
  restart: string[];
}

/**
 * Changed top-level AgentConfig fields, split per SPEC.md "Hot reload". Fields in neither list are
 * restart-required (nothing re-reads them while running). Keys a user added that AgentConfig does not
 * define are ignored: nothing reads them.
 */
export function diffConfig(old: AgentConfig, next: AgentConfig): ConfigDiff {
  const hot: string[] = [];
  const restart: string[] = [];
  for (const field of AGENT_CONFIG_FIELDS) {
    if (deepEqual(old[field], next[field])) continue;
    (HOT.has(field) ? hot : restart).push(field);
  }
  return { hot, restart };
}

export function isHotReloadable(field: string): boolean {
  return HOT.has(field);
}

/**
 * What the running service uses after an edit: the new config, except restart-required fields,
 * which keep the values the service started with.
 */
export function applyHotFields(applied: AgentConfig, next: AgentConfig): AgentConfig {
  const out: Record<string, unknown> = { ...next };
  for (const field of AGENT_CONFIG_FIELDS) if (!HOT.has(field)) out[field] = applied[field];
  return out as AgentConfig;
}

/** Restart-required fields whose file value differs from what is running. */
export function pendingRestartFields(applied: AgentConfig, fileConfig: AgentConfig): string[] {
  return AGENT_CONFIG_FIELDS.filter((f) => !HOT.has(f) && !deepEqual(applied[f], fileConfig[f]));
}

// ---------------------------------------------------------------- sub-agents

/** Top-level fields holding a map: a layer replaces them whole (`{}` in permission_mode_by_role means "legacy"). */
const MAP_FIELDS = new Set(['permission_mode_by_role', 'topic_defaults']);

function clone<T>(value: T): T {
  return value === undefined ? value : (JSON.parse(JSON.stringify(value)) as T);
}

/** Deep-merge `layer` over `base`: objects merge key by key, anything else replaces. */
function mergeInto(base: Record<string, unknown>, layer: Record<string, unknown>, opts: { skipNull: boolean; top: boolean }): void {
  for (const [key, value] of Object.entries(layer)) {
    if (value === undefined || (value === null && opts.skipNull)) continue;
    const current = base[key];
    if (isPlainObject(value) && isPlainObject(current) && !(opts.top && MAP_FIELDS.has(key))) {
      const merged = { ...current };
      mergeInto(merged, value, { skipNull: opts.skipNull, top: false });
      base[key] = merged;
    } else {
      base[key] = clone(value);
    }
  }
}

export interface AgentPaths {
  /** `~/.svc/agents`: each sub-agent's home is `<agentsDir>/<name>`. */
  agentsDir: string;
}

/**
 * A sub-agent's effective config (SPEC.md "Effective config merge priority"): main config, then the
 * agent's own `config/config.json`, then the registry entry's non-null fields; then the forced fields.
 * Throws `config-invalid` when the layers combine into something AgentConfig rejects.
 */
export function effectiveSubAgentConfig(
  main: AgentConfig,
  agentOwnConfig: Record<string, unknown> | null,
  entry: SubAgentConfig,
  paths: AgentPaths,
): AgentConfig {
  const merged: Record<string, unknown> = clone(main) as Record<string, unknown>;
  // Main's extra directories are main's sandbox; a sub-agent only gets what its own layers grant.
  merged.additional_directories = [];
  if (agentOwnConfig) mergeInto(merged, agentOwnConfig, { skipNull: false, top: true });

  const overrides: Record<string, unknown> = {};
  for (const field of SUB_AGENT_INHERITED_FIELDS) {
    const value = (entry as Record<string, unknown>)[field];
    if (value !== undefined && value !== null) overrides[field] = value;
  }
  mergeInto(merged, overrides, { skipNull: true, top: true });

  const home = `${paths.agentsDir.replace(/[\\/]+$/, '')}/${entry.name}`;
  merged.svc_home = home;
  merged.transport = entry.transport ?? DEFAULT_TRANSPORT;
  merged.transports = [];
  merged.telegram_token = entry.telegram_token ?? '';
  merged.matrix = entry.matrix ? clone(entry.matrix) : defaultConfig().matrix;
  merged.allowed_user_ids = [...(entry.allowed_user_ids ?? [])];
  merged.allowed_group_ids = [...(entry.allowed_group_ids ?? [])];
  if (entry.api === undefined || entry.api === null) merged.api = { ...(merged.api as Record<string, unknown>), enabled: false };

  const file = `agents.json entry "${entry.name}" (over main config${agentOwnConfig ? ` and ${home}/config/config.json` : ''})`;
  const checked = validateConfig(merged, file);
  if (!checked.ok) throw new SvcError('config-invalid', checked.errors.join('\n'), { agent: entry.name, errors: checked.errors });
  return checked.config;
}

export interface RegistryChange {
  name: string;
  /** Transport, messenger token or Matrix identity changed: a running agent must be restarted. */
  restart: boolean;
  fields: string[];
}

export interface RegistryDiff {
  added: string[];
  removed: string[];
  changed: RegistryChange[];
}

export function diffRegistry(oldEntries: readonly SubAgentConfig[], newEntries: readonly SubAgentConfig[]): RegistryDiff {
  const before = new Map(oldEntries.map((e) => [e.name, e]));
  const after = new Map(newEntries.map((e) => [e.name, e]));
  const added = newEntries.filter((e) => !before.has(e.name)).map((e) => e.name);
  const removed = oldEntries.filter((e) => !after.has(e.name)).map((e) => e.name);
  const changed: RegistryChange[] = [];
  for (const next of newEntries) {
    const prev = before.get(next.name);
    if (!prev) continue;
    const a = prev as Record<string, unknown>;
    const b = next as Record<string, unknown>;
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])];
    // Absent and null both mean "inherit", so going from one to the other is no change.
    const fields = keys.filter((k) => !deepEqual(a[k] ?? null, b[k] ?? null));
    if (fields.length === 0) continue;
    const restart =
      (prev.transport ?? DEFAULT_TRANSPORT) !== (next.transport ?? DEFAULT_TRANSPORT) ||
      (prev.telegram_token ?? '') !== (next.telegram_token ?? '') ||
      (prev.matrix?.homeserver ?? '') !== (next.matrix?.homeserver ?? '') ||
      (prev.matrix?.user_id ?? '') !== (next.matrix?.user_id ?? '');
    changed.push({ name: next.name, restart, fields });
  }
  return { added, removed, changed };
}

// ---------------------------------------------------------------- models

const CLAUDE = new Set<string>(CLAUDE_MODELS);
const GEMINI = new Set<string>(GEMINI_ALIASES);

/** SPEC.md "Model and timezone resolution": which provider serves a model id. */
export function resolveProvider(model: string, discoveredGemini: readonly string[]): Provider {
  const id = model.trim();
  const lower = id.toLowerCase();
  if (CLAUDE.has(lower)) return 'claude';
  if (GEMINI.has(lower) || discoveredGemini.includes(id) || lower.startsWith('gemini-') || lower.startsWith('auto-gemini-')) return 'gemini';
  return 'codex';
}

// ---------------------------------------------------------------- helpers

/** Structural equality of JSON values; object key order does not matter. */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((x, i) => deepEqual(x, b[i]));
  if (isPlainObject(a) && isPlainObject(b)) {
    const ka = Object.keys(a).filter((k) => a[k] !== undefined);
    const kb = Object.keys(b).filter((k) => b[k] !== undefined);
    return ka.length === kb.length && ka.every((k) => deepEqual(a[k], b[k]));
  }
  return false;
}
