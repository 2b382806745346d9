import * as fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  DEFAULT_NORMAL_TIMEOUT,
  SvcError,
  configFileDefaults,
  defaultConfig,
  isPlainObject,
  parseJsonText,
  validateConfig,
  validateRegistry,
  type AgentConfig,
  type SubAgentConfig,
} from '../schemas/index.js';
import type { HomePaths } from './home.js';
import { ensureDir, writeJsonAtomicSync } from './json-file.js';

const EXAMPLE_NAME = 'config.example.json';

/*
 * Source runs from `store/` (tap), the build from `dist/store/`: the shipped folder sits one or two
 * levels up depending on which.
 */
const EXAMPLE_CANDIDATES = [
  new URL(`../home-defaults/${EXAMPLE_NAME}`, import.meta.url),
  new URL(`../../home-defaults/${EXAMPLE_NAME}`, import.meta.url),
];

export function findExampleConfig(): string | null {
  for (const url of EXAMPLE_CANDIDATES) {
    const path = fileURLToPath(url);
    if (fs.existsSync(path)) return path;
  }
  return null;
}

export interface LoadConfigOptions {
  /** Seed for a missing config.json; `null` means "none", use the schema defaults. Default: the shipped example. */
  exampleFile?: string | null;
}

export interface LoadedConfig {
  /** Validated, with the runtime rules applied. */
  config: AgentConfig;
  /** The file's JSON after defaults were merged in, exactly as on disk. */
  raw: Record<string, unknown>;
  /** True when this call created config.json. */
  created: boolean;
  /** Dotted paths of the keys this call added to the file (empty: the file was not rewritten). */
  keysAdded: string[];
  /** Dotted paths of keys the schema does not know (kept in the file, but most likely typos). */
  unknownKeys: string[];
}

/** Top-level fields holding a map: user keys are the content, so defaults are never mixed into them. */
const MAP_FIELDS = new Set(['permission_mode_by_role', 'topic_defaults']);

/**
 * The file with every missing default key added (SPEC.md: deep merge, write back only when keys
 * were added). Never adds `api` (`svc api enable` writes that block) and never fills map fields,
 * where a missing key is meaningful (`permission_mode_by_role: {}` restores legacy behaviour).
 */
export function fillConfigDefaults(raw: Record<string, unknown>): { merged: Record<string, unknown>; keysAdded: string[] } {
  const keysAdded: string[] = [];
  const fill = (target: Record<string, unknown>, defaults: Record<string, unknown>, prefix: string): Record<string, unknown> => {
    const out: Record<string, unknown> = { ...target };
    for (const [key, def] of Object.entries(defaults)) {
      const path = prefix ? `${prefix}.${key}` : key;
      if (!(key in out)) {
        out[key] = def;
        keysAdded.push(path);
      } else if (isPlainObject(def) && isPlainObject(out[key]) && !(prefix === '' && MAP_FIELDS.has(key))) {
        out[key] = fill(out[key] as Record<string, unknown>, def, path);
      }
    }
    return out;
  };
  const defaults = configFileDefaults();
  // DESIGN.md §10's timeouts rule must read the same before and after this write-back: a file that
  // sets cli_timeout (≠600) but not timeouts.normal gets normal = cli_timeout written, not 600.
  const legacy = raw.cli_timeout;
  const rawTimeouts = isPlainObject(raw.timeouts) ? raw.timeouts : {};
  if (typeof legacy === 'number' && legacy !== DEFAULT_NORMAL_TIMEOUT && !('normal' in rawTimeouts) && isPlainObject(defaults.timeouts)) {
    defaults.timeouts = { ...defaults.timeouts, normal: legacy };
  }
  let merged = fill(raw, defaults, '');
  // An `api` block someone already wrote is completed like any other block.
  if (isPlainObject(raw.api)) merged = { ...merged, api: fill(raw.api, { ...defaultConfig().api }, 'api') };
  return { merged, keysAdded };
}

function invalid(file: string, errors: string[]): SvcError {
  return new SvcError('config-invalid', errors.join('\n'), { file, errors });
}

function isDirectory(path: string): boolean {
  try {
    return fs.statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/**
 * The `additional_directories` entries of config.json's text that exist as directories (the I/O
 * half of validating it). Text that is not JSON names none: the validation says what is wrong.
 */
export function existingDirectories(text: string): string[] {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return [];
  }
  if (!isPlainObject(raw) || !Array.isArray(raw.additional_directories)) return [];
  return raw.additional_directories.filter((d): d is string => typeof d === 'string' && isDirectory(d));
}

/**
 * `additional_directories` as config.json says now, or null when the file is unreadable or holds no
 * such list of strings. The main agent starts with it (it is not hot-reloaded), so the admin panel
 * shows what is configured rather than what the running process began with.
 */
export function configuredAdditionalDirectories(paths: Pick<HomePaths, 'configFile'>): string[] | null {
  let raw: unknown;
  try {
    raw = JSON.parse(fs.readFileSync(paths.configFile, 'utf8'));
  } catch {
    return null;
  }
  if (!isPlainObject(raw) || !Array.isArray(raw.additional_directories)) return null;
  const dirs = raw.additional_directories;
  return dirs.every((d): d is string => typeof d === 'string') ? dirs : null;
}

function seedText(exampleFile: string | null): string {
  if (exampleFile) {
    try {
      return fs.readFileSync(exampleFile, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
  return `${JSON.stringify(configFileDefaults(), null, 2)}\n`;
}

function readRawConfig(file: string): Record<string, unknown> {
  const text = fs.readFileSync(file, 'utf8');
  const json = parseJsonText(text, file);
  if (!json.ok) throw invalid(file, [json.error]);
  if (!isPlainObject(json.value)) {
    throw invalid(file, [`${file}: top level = ${Array.isArray(json.value) ? 'a list' : JSON.stringify(json.value)} is not allowed (a JSON object {...})`]);
  }
  return json.value;
}

/**
 * Reads config.json, creating it (and the home) on first start. A bad file is reported with file,
 * field, value and rule and is never rewritten or reset.
 */
export function loadConfig(paths: HomePaths, opts: LoadConfigOptions = {}): LoadedConfig {
  const file = paths.configFile;
  if (!fs.existsSync(paths.root)) fs.mkdirSync(paths.root, { recursive: true, mode: 0o700 });
  fs.mkdirSync(paths.configDir, { recursive: true, mode: 0o700 });

  let created = false;
  if (!fs.existsSync(file)) {
    const seedFile = opts.exampleFile === undefined ? findExampleConfig() : opts.exampleFile;
    const seed = parseJsonText(seedText(seedFile), seedFile ?? 'built-in defaults');
    if (!seed.ok) throw new SvcError('config-invalid', seed.error, { file: seedFile });
    writeJsonAtomicSync(file, seed.value, { mode: 0o600 });
    created = true;
  }

  const raw = readRawConfig(file);
  const { merged, keysAdded } = fillConfigDefaults(raw);
  const checked = validateConfig(merged, file);
  if (!checked.ok) throw invalid(file, checked.errors);
  const missing = checked.config.additional_directories
    .map((d, i) => [d, i] as const)
    .filter(([d]) => !isDirectory(d))
    .map(([d, i]) => `${file}: additional_directories[${i}] = ${JSON.stringify(d)} is not allowed (an existing directory; this path does not exist or is not a directory)`);
  if (missing.length) throw invalid(file, missing);

  if (keysAdded.length) writeJsonAtomicSync(file, merged, { mode: 0o600 });
  return { config: checked.config, raw: merged, created, keysAdded, unknownKeys: checked.unknownKeys };
}

/**
 * `svc api enable`: writes the `api` block (enabled, with a token and a JWT secret when they are
 * empty), keeping every other key of the file as it is. Returns the API token.
 */
/**
 * `host` given: bind there (and `public` also sets `allow_public`, because the user asked for it).
 * Not given: a host the file already names is kept, else loopback — never 0.0.0.0 by default.
 */
export function enableApi(paths: HomePaths, randomToken: () => string, bind: { host?: string; public?: boolean } = {}): { token: string; host: string } {
  // The host as the user wrote it, before loading fills in defaults (the schema's default is 0.0.0.0).
  const written = fs.existsSync(paths.configFile) ? readRawConfig(paths.configFile).api : undefined;
  const { raw } = loadConfig(paths);
  const writtenHost = isPlainObject(written) && typeof written.host === 'string' ? written.host : '127.0.0.1';
  const current = isPlainObject(raw.api) ? raw.api : {};
  const api: Record<string, unknown> = { ...defaultConfig().api, ...current, host: writtenHost, enabled: true };
  if (bind.host !== undefined) api.host = bind.host;
  if (bind.public) api.allow_public = true;
  if (typeof api.token !== 'string' || api.token === '') api.token = randomToken();
  if (typeof api.jwt_secret !== 'string' || api.jwt_secret === '') api.jwt_secret = randomToken();
  const next = { ...raw, api };
  const checked = validateConfig(next, paths.configFile);
  if (!checked.ok) throw invalid(paths.configFile, checked.errors);
  writeJsonAtomicSync(paths.configFile, next, { mode: 0o600 });
  return { token: api.token as string, host: api.host as string };
}

// ---------------------------------------------------------------- sub-agent registry

/** The registry file in use: `_secrets/agents.json`, else the legacy root `agents.json`, else null. */
export function registryLocation(paths: HomePaths): string | null {
  if (fs.existsSync(paths.agentsRegistry)) return paths.agentsRegistry;
  if (fs.existsSync(paths.legacyAgentsRegistry)) return paths.legacyAgentsRegistry;
  return null;
}

export function loadRegistry(paths: HomePaths): SubAgentConfig[] {
  const file = registryLocation(paths);
  if (!file) return [];
  const json = parseJsonText(fs.readFileSync(file, 'utf8'), file);
  if (!json.ok) throw new SvcError('registry-invalid', json.error, { file });
  const checked = validateRegistry(json.value, file);
  if (!checked.ok) throw new SvcError('registry-invalid', checked.errors.join('\n'), { file, errors: checked.errors });
  return checked.entries;
}

/** New writes always go to `_secrets/` (0700 dir, 0600 file); the legacy file is left for older readers. */
export function saveRegistry(paths: HomePaths, entries: readonly SubAgentConfig[]): void {
  const checked = validateRegistry(entries, paths.agentsRegistry);
  if (!checked.ok) throw new SvcError('registry-invalid', checked.errors.join('\n'), { file: paths.agentsRegistry, errors: checked.errors });
  ensureDir(paths.secretsDir, 0o700);
  writeJsonAtomicSync(paths.agentsRegistry, entries, { mode: 0o600, dirMode: 0o700 });
}

// ---------------------------------------------------------------- .env

const DOTENV_KEY = /^[A-Za-z_][A-Za-z0-9_.-]*$/;

/** Standard dotenv syntax: comments, `export ` prefix, single quotes literal, double quotes with escapes, multi-line quoted values. */
export function parseDotEnv(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  const lines = text.replace(/\r\n?/g, '\n').split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (line === '' || line.startsWith('#')) continue;
    const body = line.startsWith('export ') ? line.slice(7).trimStart() : line;
    const eq = body.indexOf('=');
    if (eq <= 0) continue;
    const key = body.slice(0, eq).trim();
    if (!DOTENV_KEY.test(key)) continue;
    let rest = body.slice(eq + 1).trimStart();
    const quote = rest[0];
    if (quote === '"' || quote === "'" || quote === '`') {
      // A quoted value may span lines; find its closing quote.
      let value = rest.slice(1);
      let close = findClose(value, quote);
      while (close < 0 && i + 1 < lines.length) {
        value += `\n${lines[++i]!}`;
        close = findClose(value, quote);
      }
      if (close < 0) continue;
      value = value.slice(0, close);
      out[key] = quote === '"' ? unescapeDouble(value) : value;
      continue;
    }
    const hash = rest.search(/\s#/);
    if (hash >= 0) rest = rest.slice(0, hash);
    out[key] = rest.trim();
  }
  return out;
}

function findClose(value: string, quote: string): number {
  for (let j = 0; j < value.length; j++) {
    if (value[j] === '\\' && quote === '"') j++;
    else if (value[j] === quote) return j;
  }
  return -1;
}

function unescapeDouble(value: string): string {
  return value.replace(/\\([nrt"\\])/g, (_, c: string) => ({ n: '\n', r: '\r', t: '\t', '"': '"', '\\': '\\' })[c] ?? c);
}

const dotenvCache = new Map<string, { mtimeMs: number; size: number; values: Record<string, string> }>();

/** `.env` values, re-read only when the file's mtime or size changed; a missing file is empty. */
export function readDotEnv(path: string): Record<string, string> {
  let st: fs.Stats;
  try {
    st = fs.statSync(path);
  } catch {
    dotenvCache.delete(path);
    return {};
  }
  const hit = dotenvCache.get(path);
  if (hit && hit.mtimeMs === st.mtimeMs && hit.size === st.size) return { ...hit.values };
  const values = parseDotEnv(fs.readFileSync(path, 'utf8'));
  dotenvCache.set(path, { mtimeMs: st.mtimeMs, size: st.size, values });
  return { ...values };
}

/**
 * Environment for a CLI child (SPEC.md): host variables are never overridden, provider settings
 * come next, `.env` only fills gaps.
 */
export function buildChildEnv(
  hostEnv: Readonly<Record<string, string | undefined>>,
  providerEnv: Readonly<Record<string, string>>,
  dotenv: Readonly<Record<string, string>>,
): Record<string, string> {
  const out: Record<string, string> = { ...dotenv, ...providerEnv };
  for (const [k, val] of Object.entries(hostEnv)) if (val !== undefined) out[k] = val;
  return out;
}

/**
 * Runtime edits persisted by helpers (SPEC.md: `/model` writes model and provider): set top-level
 * fields of config.json, keeping everything else exactly as the user wrote it.
 */
export function setConfigFields(paths: HomePaths, fields: Record<string, unknown>): void {
  const raw = JSON.parse(fs.readFileSync(paths.configFile, 'utf8')) as Record<string, unknown>;
  writeJsonAtomicSync(paths.configFile, { ...raw, ...fields }, { mode: 0o600 });
}

/**
 * `api.jwt_secret`, generated and written back (like api.token) when the admin API starts without
 * one, so the panel's tokens survive a restart.
 */
export function ensureJwtSecret(paths: HomePaths, randomSecret: () => string): { secret: string; generated: boolean } {
  const raw = readRawConfig(paths.configFile);
  const current = isPlainObject(raw.api) ? raw.api : {};
  if (typeof current.jwt_secret === 'string' && current.jwt_secret !== '') return { secret: current.jwt_secret, generated: false };
  const secret = randomSecret();
  if (typeof secret !== 'string' || secret.length < 32) {
    throw new SvcError('invalid-token', 'generated api.jwt_secret is not allowed (a string of at least 32 characters)');
  }
  const next = { ...raw, api: { ...current, jwt_secret: secret } };
  const checked = validateConfig(next, paths.configFile);
  if (!checked.ok) throw invalid(paths.configFile, checked.errors);
  writeJsonAtomicSync(paths.configFile, next, { mode: 0o600 });
  return { secret, generated: true };
}

/**
 * SPEC.md "API token auto-generation": when the API starts and config.json has an `api` block without
 * a token, one is generated and written back (atomically, every other key kept as it is).
 */
export function ensureApiToken(paths: HomePaths, randomToken: () => string): { token: string; generated: boolean } {
  const raw = readRawConfig(paths.configFile);
  const current = isPlainObject(raw.api) ? raw.api : {};
  if (typeof current.token === 'string' && current.token !== '') return { token: current.token, generated: false };
  const token = randomToken();
  if (typeof token !== 'string' || token.length < 16) {
    throw new SvcError('invalid-token', `generated api.token is not allowed (a string of at least 16 characters)`);
  }
  const next = { ...raw, api: { ...current, token } };
  const checked = validateConfig(next, paths.configFile);
  if (!checked.ok) throw invalid(paths.configFile, checked.errors);
  writeJsonAtomicSync(paths.configFile, next, { mode: 0o600 });
  return { token, generated: true };
}

/**
 * SPEC.md WebhookConfig: `webhooks.token` (the global bearer fallback) is generated when the
 * webhook server starts without one, and written back as api.token is: atomically, every other
 * key kept, so it is generated once and the same token works after a restart.
 */
export function ensureWebhookToken(paths: HomePaths, randomToken: () => string): { token: string; generated: boolean } {
  const raw = readRawConfig(paths.configFile);
  const current = isPlainObject(raw.webhooks) ? raw.webhooks : {};
  if (typeof current.token === 'string' && current.token !== '') return { token: current.token, generated: false };
  const token = randomToken();
  if (typeof token !== 'string' || token.length < 16) {
    throw new SvcError('invalid-token', `generated webhooks.token is not allowed (a string of at least 16 characters)`);
  }
  const next = { ...raw, webhooks: { ...current, token } };
  const checked = validateConfig(next, paths.configFile);
  if (!checked.ok) throw invalid(paths.configFile, checked.errors);
  writeJsonAtomicSync(paths.configFile, next, { mode: 0o600 });
  return { token, generated: true };
}

/**
 * Sets fields inside one block of config.json (`rag`, ...), keeping every other key as the user
 * wrote it. The whole result is validated first: a value the schema refuses writes nothing.
 * Returns the config as it will load.
 */
export function setConfigBlockFields(paths: HomePaths, block: string, fields: Record<string, unknown>, check?: (next: AgentConfig) => void): AgentConfig {
  const raw = readRawConfig(paths.configFile);
  const current = isPlainObject(raw[block]) ? raw[block] : {};
  const next = { ...raw, [block]: { ...current, ...fields } };
  const checked = validateConfig(next, paths.configFile);
  if (!checked.ok) throw invalid(paths.configFile, checked.errors);
  check?.(checked.config);
  writeJsonAtomicSync(paths.configFile, next, { mode: 0o600 });
  return checked.config;
}
