// Longer than 450 lines: the one place that knows where each vendor's CLI keeps its login and models.
// The table below is its index; split per provider, the quiet readers they share (JSON, dotenv, ~) would scatter.
import * as fs from 'node:fs';
import { delimiter, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { providerDisplayName, type DetectedProvider } from '../../machines/index.js';
import { CLAUDE_MODELS, DEFAULT_MODEL, GEMINI_ALIASES, PROVIDERS, type AgentConfig, type Provider } from '../../schemas/index.js';
import { readDotEnv, type HomePaths } from '../../store/index.js';
import { cleanModelList, modelCachePath, readModelCache, type CachedProvider, type FetchModels } from './model-cache.js';

/*
 * Where each real CLI keeps its login, models and login command. Sources: the vendors' docs and public
 * code that reads these files (see the report that came with this file). Rows marked (plausible) could
 * not be confirmed against the vendor's own source and are best guesses; each is one line to change.
 *
 * | provider | what                  | value                                                                                      |
 * |----------|-----------------------|--------------------------------------------------------------------------------------------|
 * | claude   | env credentials       | ANTHROPIC_API_KEY, CLAUDE_CODE_OAUTH_TOKEN (`claude setup-token`), ANTHROPIC_AUTH_TOKEN     |
 * | claude   | cloud switches        | CLAUDE_CODE_USE_BEDROCK / _VERTEX / _FOUNDRY = 1 (credentials then live with the cloud)     |
 * | claude   | credentials file      | $CLAUDE_CONFIG_DIR or ~/.claude, `.credentials.json` → claudeAiOauth.accessToken|refreshToken |
 * | claude   | macOS                 | Keychain, unreadable here; `~/.claude.json` oauthAccount is taken as the sign (plausible)    |
 * | claude   | login                 | `claude auth login` (recent CLIs; older: `claude` then /login; token: `claude setup-token`)  |
 * | codex    | env credentials       | OPENAI_API_KEY, CODEX_API_KEY                                                              |
 * | codex    | credentials file      | $CODEX_HOME or ~/.codex, `auth.json` → OPENAI_API_KEY or tokens.access_token|refresh_token  |
 * | codex    | models                | $CODEX_HOME/models_cache.json `models[].slug` (visibility != hide, by priority), config.toml `model` |
 * | codex    | login                 | `codex login` (headless: `codex login --device-auth`)                                      |
 * | gemini   | auth type             | ~/.gemini/settings.json security.auth.selectedType (older: selectedAuthType)               |
 * | gemini   | credentials           | config gemini_api_key, GEMINI_API_KEY (env, ~/.gemini/.env), GOOGLE_API_KEY, ~/.gemini/oauth_creds.json |
 * | gemini   | models                | <pkg>/node_modules/@google/gemini-cli-core/dist/src/config/models.js (or hoisted), else bundle/gemini.js |
 * | gemini   | login                 | `gemini` interactive: its auth dialog runs on first start (then /quit)                      |
 *
 * Every source also counts when it is set in `~/.svc/.env`, because CLI children get those values.
 */

export interface ProviderFacts {
  id: Provider;
  name: string;
  command: string;
  npmPackage: string;
  /** Arguments that start the CLI's own interactive login. */
  loginArgs: string[];
}

export const PROVIDER_FACTS: Record<Provider, ProviderFacts> = {
  claude: { id: 'claude', name: providerDisplayName('claude'), command: 'claude', npmPackage: '@anthropic-ai/claude-code', loginArgs: ['auth', 'login'] },
  codex: { id: 'codex', name: providerDisplayName('codex'), command: 'codex', npmPackage: '@openai/codex', loginArgs: ['login'] },
  gemini: { id: 'gemini', name: providerDisplayName('gemini'), command: 'gemini', npmPackage: '@google/gemini-cli', loginArgs: [] },
};

/** Codex presets used when neither our cache nor codex's own cache has a list (plausible; they age). */
export const CODEX_PRESET_MODELS = ['gpt-5.2-codex', 'gpt-5.1-codex-max', 'gpt-5.1-codex-mini', 'gpt-5.2'] as const;

/** Credentials files are small; a huge one is not a credentials file and is not read. */
const MAX_SMALL_FILE = 1024 * 1024;
/** Bounded so a broken install cannot make the hourly scan read gigabytes. */
const MAX_SOURCE_FILE = 64 * 1024 * 1024;

type Env = Readonly<Record<string, string | undefined>>;

// ---------------------------------------------------------------- PATH

/**
 * First `name` on PATH that is a regular file with an execute bit for us. Relative and empty PATH
 * entries are skipped: they would make the answer depend on the daemon's working directory.
 */
export function findExecutable(name: string, PATH: string | undefined): string | null {
  if (!name || name.includes('/') || name.includes(sep)) return null;
  for (const dir of (PATH ?? '').split(delimiter)) {
    if (!dir || !isAbsolute(dir)) continue;
    const candidate = join(dir, name);
    try {
      if (!fs.statSync(candidate).isFile()) continue;
      fs.accessSync(candidate, fs.constants.X_OK);
      return candidate;
    } catch {
      // missing, not executable, or unreadable: try the next directory
    }
  }
  return null;
}

// ---------------------------------------------------------------- small readers (never throw)

function readSmallText(path: string, limit = MAX_SMALL_FILE): string | undefined {
  try {
    const st = fs.statSync(path);
    if (!st.isFile() || st.size > limit) return undefined;
    return fs.readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

function readJsonQuiet(path: string, comments = false): Record<string, unknown> | undefined {
  const text = readSmallText(path);
  if (text === undefined) return undefined;
  try {
    const value: unknown = JSON.parse(comments ? stripJsonComments(text) : text);
    return isObject(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/** Removes // and /* *\/ comments outside strings (gemini's settings.json allows them). */
export function stripJsonComments(text: string): string {
  let out = '';
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      out += text.slice(i, j + 1);
      i = j;
    } else if (c === '/' && text[i + 1] === '/') {
      while (i < text.length && text[i] !== '\n') i++;
      out += '\n';
    } else if (c === '/' && text[i + 1] === '*') {
      const end = text.indexOf('*/', i + 2);
      i = end < 0 ? text.length : end + 1;
    } else out += c;
  }
  return out;
}

function readDotEnvQuiet(path: string): Record<string, string> {
  try {
    return readDotEnv(path);
  } catch {
    return {};
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function nonEmpty(v: unknown): v is string {
  return typeof v === 'string' && v.trim() !== '';
}

function truthyFlag(v: string | undefined): boolean {
  return v !== undefined && ['1', 'true', 'yes'].includes(v.trim().toLowerCase());
}

/** `~/…` when under the home, so a listing never prints the user's absolute home path. */
export function displayPath(path: string, home: string): string {
  const rel = relative(home, path);
  return rel && !rel.startsWith('..') && !isAbsolute(rel) ? `~/${rel.split(sep).join('/')}` : path;
}

function expandTilde(p: string, home: string): string {
  if (p === '~') return home;
  if (p.startsWith('~/')) return join(home, p.slice(2));
  return resolve(p);
}

// ---------------------------------------------------------------- credentials

interface AuthContext {
  env: Env;
  /** `~/.svc/.env`: CLI children receive these for keys the host does not set. */
  svcDotenv: Record<string, string>;
  home: string;
  platform: NodeJS.Platform;
}

type Found = string | null;

function envSource(ctx: AuthContext, key: string): Found {
  if (nonEmpty(ctx.env[key])) return `env:${key}`;
  if (nonEmpty(ctx.svcDotenv[key])) return `env:${key} (~/.svc/.env)`;
  return null;
}

function firstEnv(ctx: AuthContext, keys: readonly string[]): Found {
  for (const k of keys) {
    const s = envSource(ctx, k);
    if (s) return s;
  }
  return null;
}

function envValue(ctx: AuthContext, key: string): string | undefined {
  return nonEmpty(ctx.env[key]) ? ctx.env[key] : ctx.svcDotenv[key];
}

export function claudeConfigDir(env: Env, home: string): string {
  return nonEmpty(env.CLAUDE_CONFIG_DIR) ? expandTilde(env.CLAUDE_CONFIG_DIR.trim(), home) : join(home, '.claude');
}

function claudeAuth(ctx: AuthContext): Found {
  const fromEnv = firstEnv(ctx, ['ANTHROPIC_API_KEY', 'CLAUDE_CODE_OAUTH_TOKEN', 'ANTHROPIC_AUTH_TOKEN']);
  if (fromEnv) return fromEnv;
  for (const flag of ['CLAUDE_CODE_USE_BEDROCK', 'CLAUDE_CODE_USE_VERTEX', 'CLAUDE_CODE_USE_FOUNDRY']) {
    if (truthyFlag(envValue(ctx, flag))) return envSource(ctx, flag);
  }
  const credsFile = join(claudeConfigDir(ctx.env, ctx.home), '.credentials.json');
  const oauth = readJsonQuiet(credsFile)?.claudeAiOauth;
  if (isObject(oauth) && (nonEmpty(oauth.accessToken) || nonEmpty(oauth.refreshToken))) return `file:${displayPath(credsFile, ctx.home)}`;
  if (ctx.platform === 'darwin') {
    const stateFile = join(ctx.home, '.claude.json');
    const account = readJsonQuiet(stateFile)?.oauthAccount;
    if (isObject(account) && (nonEmpty(account.accountUuid) || nonEmpty(account.emailAddress))) return `keychain (${displayPath(stateFile, ctx.home)})`;
  }
  return null;
}

/** `$CODEX_HOME` when set (a leading ~ expanded), else `~/.codex`. */
export function codexHomeDir(env: Env, home: string): string {
  return nonEmpty(env.CODEX_HOME) ? expandTilde(env.CODEX_HOME.trim(), home) : join(home, '.codex');
}

function codexAuth(ctx: AuthContext): Found {
  const fromEnv = firstEnv(ctx, ['OPENAI_API_KEY', 'CODEX_API_KEY']);
  if (fromEnv) return fromEnv;
  const authFile = join(codexHomeDir(ctx.env, ctx.home), 'auth.json');
  const auth = readJsonQuiet(authFile);
  if (!auth) return null;
  const tokens = auth.tokens;
  if (nonEmpty(auth.OPENAI_API_KEY) || (isObject(tokens) && (nonEmpty(tokens.access_token) || nonEmpty(tokens.refresh_token)))) {
    return `file:${displayPath(authFile, ctx.home)}`;
  }
  return null;
}

export function geminiDir(home: string): string {
  return join(home, '.gemini');
}

/** The auth type gemini's settings.json selects, if any. */
export function geminiSelectedAuthType(home: string): string | undefined {
  const settings = readJsonQuiet(join(geminiDir(home), 'settings.json'), true);
  if (!settings) return undefined;
  const security = settings.security;
  const nested = isObject(security) && isObject(security.auth) ? security.auth.selectedType : undefined;
  const chosen = nested ?? settings.selectedAuthType;
  return nonEmpty(chosen) ? chosen.trim() : undefined;
}

function geminiAuth(ctx: AuthContext, config: Pick<AgentConfig, 'gemini_api_key'>): Found {
  const dir = geminiDir(ctx.home);
  const geminiDotenvFile = join(dir, '.env');
  const geminiDotenv = readDotEnvQuiet(geminiDotenvFile);
  const key = (name: string): Found =>
    envSource(ctx, name) ?? (nonEmpty(geminiDotenv[name]) ? `file:${displayPath(geminiDotenvFile, ctx.home)} (${name})` : null);
  const apiKey = (): Found => (nonEmpty(config.gemini_api_key) ? 'config:gemini_api_key' : key('GEMINI_API_KEY'));
  const vertex = (): Found => {
    const k = key('GOOGLE_API_KEY');
    if (k) return k;
    const adc = envValue(ctx, 'GOOGLE_APPLICATION_CREDENTIALS');
    return nonEmpty(adc) && readSmallText(expandTilde(adc, ctx.home)) !== undefined ? envSource(ctx, 'GOOGLE_APPLICATION_CREDENTIALS') : null;
  };
  const oauth = (): Found => {
    const file = join(dir, 'oauth_creds.json');
    const creds = readJsonQuiet(file);
    return creds && (nonEmpty(creds.refresh_token) || nonEmpty(creds.access_token)) ? `file:${displayPath(file, ctx.home)}` : null;
  };
  const selected = geminiSelectedAuthType(ctx.home);
  switch (selected) {
    case 'oauth-personal':
      return oauth();
    case 'gemini-api-key':
      return apiKey();
    case 'vertex-ai':
      return vertex();
    case 'cloud-shell':
    case 'compute-default-credentials':
      return `settings:${selected}`;
    default:
      // No choice recorded: the CLI picks from what the environment offers.
      return apiKey() ?? vertex() ?? oauth();
  }
}

// ---------------------------------------------------------------- models

/**
 * Codex's own model list: its `models_cache.json` (visible entries, by priority) with the model set
 * in its `config.toml` first. Empty when codex has written neither.
 */
export function readCodexModels(codexHome: string): string[] {
  const out: string[] = [];
  const configured = codexConfiguredModel(codexHome);
  if (configured) out.push(configured);
  const list = readJsonQuiet(join(codexHome, 'models_cache.json'))?.models;
  if (Array.isArray(list)) {
    const visible = list
      .map((m, i) => ({ m, i }))
      .filter(({ m }) => isObject(m) && nonEmpty(m.slug) && m.visibility !== 'hide')
      .sort((a, b) => priority(a.m) - priority(b.m) || a.i - b.i);
    for (const { m } of visible) out.push(String((m as Record<string, unknown>).slug).trim());
  }
  return cleanModelList(out.filter((id) => !/\s/.test(id))) ?? [];
}

function priority(m: unknown): number {
  const p = isObject(m) ? m.priority : undefined;
  return typeof p === 'number' && Number.isFinite(p) ? p : Number.MAX_SAFE_INTEGER;
}

/** Top-level `model = "…"` of codex's config.toml (before the first table). */
export function codexConfiguredModel(codexHome: string): string | undefined {
  const text = readSmallText(join(codexHome, 'config.toml'));
  if (!text) return undefined;
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line.startsWith('[')) break;
    const m = /^model\s*=\s*(?:"([^"\\]*)"|'([^']*)')\s*(?:#.*)?$/.exec(line);
    if (m) return (m[1] ?? m[2] ?? '').trim() || undefined;
  }
  return undefined;
}

const GEMINI_ID = /^(?:auto-)?gemini-\d[\w.-]*$/;

/** Model ids written as string literals in a gemini CLI source file, in order of appearance. */
export function geminiModelsFromSource(source: string): string[] {
  const out: string[] = [];
  for (const m of source.matchAll(/(["'`])((?:auto-)?gemini-\d[\w.-]*)\1/g)) {
    const id = m[2]!;
    if (GEMINI_ID.test(id) && !id.includes('embedding') && !out.includes(id)) out.push(id);
  }
  return out;
}

/**
 * Installed `@google/gemini-cli` package roots: the one the executable on PATH resolves into, then
 * the npm global prefix's (npm_config_prefix, else the prefix of the running node).
 */
export function geminiPackageRoots(geminiPath: string | null, env: Env, execPath: string = process.execPath): string[] {
  const roots: string[] = [];
  const add = (dir: string) => {
    const pkg = readJsonQuiet(join(dir, 'package.json'));
    if (pkg?.name === '@google/gemini-cli' && !roots.includes(dir)) roots.push(dir);
  };
  if (geminiPath) {
    try {
      let dir = dirname(fs.realpathSync(geminiPath));
      for (let i = 0; i < 6; i++) {
        add(dir);
        if (roots.length) break;
        const up = dirname(dir);
        if (up === dir) break;
        dir = up;
      }
    } catch {
      // dangling link: fall through to the prefix
    }
  }
  const prefixes = [env.npm_config_prefix, env.NPM_CONFIG_PREFIX, dirname(dirname(execPath))].filter(nonEmpty);
  for (const prefix of prefixes) {
    add(join(prefix, 'lib', 'node_modules', '@google', 'gemini-cli'));
    add(join(prefix, 'node_modules', '@google', 'gemini-cli'));
  }
  return roots;
}

/** The files of an installed gemini CLI that name its model ids, most specific first. */
export function geminiModelSourceFiles(root: string): string[] {
  const modelsJs = join('dist', 'src', 'config', 'models.js');
  const core = [
    join(root, 'node_modules', '@google', 'gemini-cli-core', modelsJs),
    join(dirname(root), 'gemini-cli-core', modelsJs),
  ].filter((f) => fs.existsSync(f));
  if (core.length) return core;
  // Newer releases ship one bundle instead of separate packages.
  return [join(root, 'bundle', 'gemini.js')].filter((f) => fs.existsSync(f));
}

/** Model ids the installed gemini CLI knows (aliases not included). */
export function discoverGeminiModels(geminiPath: string | null, env: Env, execPath?: string): string[] {
  const out: string[] = [];
  for (const root of geminiPackageRoots(geminiPath, env, execPath)) {
    for (const file of geminiModelSourceFiles(root)) {
      const text = readSmallText(file, MAX_SOURCE_FILE);
      if (text) for (const id of geminiModelsFromSource(text)) if (!out.includes(id)) out.push(id);
    }
    if (out.length) break;
  }
  return out;
}

function geminiConfiguredModel(home: string): string | undefined {
  const settings = readJsonQuiet(join(geminiDir(home), 'settings.json'), true);
  const model = settings?.model;
  const name = isObject(model) ? model.name : model;
  return nonEmpty(name) ? name.trim() : undefined;
}

export interface LocalSourceOptions {
  env: Env;
  home: string;
  execPath?: string;
}

/**
 * The default `fetchModels` for the model caches: local files only, no network.
 * codex: its cache/config, else the presets; gemini: aliases plus the ids in its installed files.
 */
export function localModelSource(opts: LocalSourceOptions): FetchModels {
  return async (provider: CachedProvider) => {
    if (provider === 'codex') {
      const found = readCodexModels(codexHomeDir(opts.env, opts.home));
      return found.length ? found : [...CODEX_PRESET_MODELS];
    }
    const discovered = discoverGeminiModels(findExecutable('gemini', opts.env.PATH), opts.env, opts.execPath);
    return [...GEMINI_ALIASES, ...discovered];
  };
}

// ---------------------------------------------------------------- detection

export interface DetectOptions {
  env: Env;
  /** The user's home directory (where ~/.claude, ~/.codex, ~/.gemini live). */
  home: string;
  /** The service home (for `~/.svc/.env` and the model caches). */
  paths: Pick<HomePaths, 'configDir' | 'envFile'>;
  config: Pick<AgentConfig, 'gemini_api_key'>;
  /** Already known model lists (e.g. from a ModelCacheRefresher); otherwise our caches, then the CLIs' files. */
  models?: Partial<Record<CachedProvider, readonly string[]>>;
  platform?: NodeJS.Platform;
  execPath?: string;
}

function cachedModels(opts: DetectOptions, provider: CachedProvider): string[] | null {
  const given = opts.models?.[provider];
  if (given) return cleanModelList([...given]) ?? null;
  const read = readModelCache(modelCachePath(opts.paths, provider), provider);
  return read.state === 'ok' && read.cache.models.length ? read.cache.models : null;
}

function unique(ids: readonly string[]): string[] {
  return [...new Set(ids)];
}

/**
 * What is installed, signed in and offered, for each provider. Reads only; never throws — a missing
 * or malformed file simply does not count as credentials.
 */
export function detectProviders(opts: DetectOptions): DetectedProvider[] {
  const ctx: AuthContext = {
    env: opts.env,
    svcDotenv: readDotEnvQuiet(opts.paths.envFile),
    home: opts.home,
    platform: opts.platform ?? process.platform,
  };
  const PATH = opts.env.PATH;
  return PROVIDERS.map((id): DetectedProvider => {
    const facts = PROVIDER_FACTS[id];
    const path = findExecutable(facts.command, PATH);
    let source: Found = null;
    let models: string[];
    let defaultModel: string;
    try {
      if (id === 'claude') {
        source = claudeAuth(ctx);
        models = [...CLAUDE_MODELS];
        defaultModel = DEFAULT_MODEL;
      } else if (id === 'codex') {
        source = codexAuth(ctx);
        const codexHome = codexHomeDir(opts.env, opts.home);
        models = cachedModels(opts, 'codex') ?? readCodexModels(codexHome);
        if (!models.length) models = [...CODEX_PRESET_MODELS];
        defaultModel = codexConfiguredModel(codexHome) ?? models[0]!;
      } else {
        source = geminiAuth(ctx, opts.config);
        const found = cachedModels(opts, 'gemini') ?? discoverGeminiModels(path, opts.env, opts.execPath);
        models = unique([...GEMINI_ALIASES, ...found]);
        defaultModel = geminiConfiguredModel(opts.home) ?? 'auto';
      }
    } catch {
      // Unexpected file-system trouble: report the provider as not signed in rather than fail the listing.
      models = id === 'claude' ? [...CLAUDE_MODELS] : id === 'gemini' ? [...GEMINI_ALIASES] : [...CODEX_PRESET_MODELS];
      defaultModel = id === 'claude' ? DEFAULT_MODEL : id === 'gemini' ? 'auto' : models[0]!;
    }
    return {
      id,
      name: facts.name,
      installed: path !== null,
      path,
      authenticated: source !== null,
      auth_source: source,
      models,
      default_model: defaultModel,
    };
  });
}
