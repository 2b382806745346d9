import t, { type Test } from 'tap';
import { chmodSync, copyFileSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { delimiter, dirname, join, resolve } from 'node:path';
import {
  CODEX_PRESET_MODELS,
  codexConfiguredModel,
  detectProviders,
  discoverGeminiModels,
  displayPath,
  findExecutable,
  geminiModelsFromSource,
  localModelSource,
  readCodexModels,
  stripJsonComments,
  type DetectOptions,
} from '../../actors/index.js';
import type { DetectedProvider } from '../../machines/index.js';
import { CLAUDE_MODELS, GEMINI_ALIASES } from '../../schemas/index.js';
import { homePaths } from '../../store/index.js';

const BIN = resolve(import.meta.dirname, '../fixtures/bin');

interface World {
  root: string;
  home: string;
  svc: ReturnType<typeof homePaths>;
  pathDir: string;
  /** A node prefix with nothing installed, so the host's global packages never leak in. */
  execPath: string;
  detect(extra?: Partial<DetectOptions> & { env?: Record<string, string | undefined> }): Record<string, DetectedProvider>;
  file(rel: string, content: string): string;
}

function world(t: Test): World {
  const root = t.testdir({ home: {}, svc: { config: {} }, path: {}, prefix: { bin: {} } });
  const home = join(root, 'home');
  const svc = homePaths(join(root, 'svc'));
  const pathDir = join(root, 'path');
  const execPath = join(root, 'prefix', 'bin', 'node');
  return {
    root,
    home,
    svc,
    pathDir,
    execPath,
    detect(extra = {}) {
      const list = detectProviders({
        env: { PATH: pathDir, ...extra.env },
        home,
        paths: svc,
        config: extra.config ?? { gemini_api_key: null },
        platform: extra.platform ?? 'linux',
        execPath,
        ...(extra.models ? { models: extra.models } : {}),
      });
      return Object.fromEntries(list.map((d) => [d.id, d]));
    },
    file(rel, content) {
      const p = join(home, rel);
      mkdirSync(dirname(p), { recursive: true });
      writeFileSync(p, content);
      return p;
    },
  };
}

await t.test('findExecutable: PATH order, execute bit, files only, absolute entries only', async (t) => {
  const root = t.testdir({ a: { tool: 'not executable' }, b: { tool: { 'is-a-dir': '' } }, c: {}, d: {} });
  copyFileSync(join(BIN, 'codex'), join(root, 'c', 'tool'));
  chmodSync(join(root, 'c', 'tool'), 0o755);
  symlinkSync(join(BIN, 'claude'), join(root, 'd', 'linked'));
  symlinkSync(join(root, 'nowhere'), join(root, 'd', 'dangling'));
  const PATH = [join(root, 'a'), join(root, 'b'), join(root, 'c'), join(root, 'd')].join(delimiter);

  t.equal(findExecutable('tool', PATH), join(root, 'c', 'tool'), 'skips the non-executable file and the directory');
  t.equal(findExecutable('linked', PATH), join(root, 'd', 'linked'), 'a symlink to an executable counts');
  t.equal(findExecutable('dangling', PATH), null);
  t.equal(findExecutable('missing', PATH), null);
  t.equal(findExecutable('tool', undefined), null);
  t.equal(findExecutable('tool', ''), null);
  t.equal(findExecutable('tool', `c${delimiter}.${delimiter}`), null, 'relative entries are ignored');
  t.equal(findExecutable('../c/tool', join(root, 'a')), null, 'a name with a path is not a command name');
  t.equal(findExecutable('', PATH), null);
});

await t.test('nothing installed, nothing signed in: three entries, no throw', async (t) => {
  const w = world(t);
  const d = w.detect();
  t.same(Object.keys(d), ['claude', 'codex', 'gemini']);
  for (const p of Object.values(d)) {
    t.equal(p.installed, false, `${p.id} not installed`);
    t.equal(p.path, null);
    t.equal(p.authenticated, false);
    t.equal(p.auth_source, null);
  }
  t.same(d.claude!.name, 'Claude Code');
  t.same(d.codex!.name, 'Codex');
  t.same(d.gemini!.name, 'Gemini CLI');
  t.same(d.claude!.models, [...CLAUDE_MODELS]);
  t.equal(d.claude!.default_model, 'opus');
  t.same(d.codex!.models, [...CODEX_PRESET_MODELS]);
  t.equal(d.codex!.default_model, CODEX_PRESET_MODELS[0]);
  t.same(d.gemini!.models, [...GEMINI_ALIASES]);
  t.equal(d.gemini!.default_model, 'auto');

  // A home that does not exist at all, and no PATH: still three entries.
  const none = detectProviders({ env: {}, home: join(w.root, 'no-such-home'), paths: w.svc, config: { gemini_api_key: null }, execPath: w.execPath });
  t.same(none.map((p) => [p.id, p.installed, p.authenticated]), [['claude', false, false], ['codex', false, false], ['gemini', false, false]]);
});

await t.test('installed: the fake CLIs on a PATH directory', async (t) => {
  const w = world(t);
  symlinkSync(join(BIN, 'claude'), join(w.pathDir, 'claude'));
  copyFileSync(join(BIN, 'gemini'), join(w.pathDir, 'gemini'));
  chmodSync(join(w.pathDir, 'gemini'), 0o755);
  copyFileSync(join(BIN, 'codex'), join(w.pathDir, 'codex'));
  chmodSync(join(w.pathDir, 'codex'), 0o644);
  const d = w.detect();
  t.equal(d.claude!.installed, true);
  t.equal(d.claude!.path, join(w.pathDir, 'claude'));
  t.equal(d.gemini!.installed, true);
  t.equal(d.codex!.installed, false, 'no execute bit, not installed');
  t.equal(d.claude!.authenticated, false, 'installed is not signed in');
});

await t.test('claude credentials: env, ~/.svc/.env, cloud switch, credentials file, CLAUDE_CONFIG_DIR, macOS', async (t) => {
  const w = world(t);
  t.equal(w.detect({ env: { ANTHROPIC_API_KEY: 'sk-x' } }).claude!.auth_source, 'env:ANTHROPIC_API_KEY');
  t.equal(w.detect({ env: { ANTHROPIC_API_KEY: '   ' } }).claude!.authenticated, false, 'blank value is not a key');
  t.equal(w.detect({ env: { CLAUDE_CODE_OAUTH_TOKEN: 'sk-ant-oat01-x' } }).claude!.auth_source, 'env:CLAUDE_CODE_OAUTH_TOKEN');
  t.equal(w.detect({ env: { CLAUDE_CODE_USE_BEDROCK: '1' } }).claude!.auth_source, 'env:CLAUDE_CODE_USE_BEDROCK');
  t.equal(w.detect({ env: { CLAUDE_CODE_USE_BEDROCK: '0' } }).claude!.authenticated, false);

  writeFileSync(w.svc.envFile, 'ANTHROPIC_API_KEY="from-dotenv"\n');
  t.equal(w.detect().claude!.auth_source, 'env:ANTHROPIC_API_KEY (~/.svc/.env)');
  t.equal(w.detect({ env: { ANTHROPIC_API_KEY: 'host' } }).claude!.auth_source, 'env:ANTHROPIC_API_KEY', 'host env wins');
  writeFileSync(w.svc.envFile, '');

  const creds = '.claude/.credentials.json';
  w.file(creds, JSON.stringify({ claudeAiOauth: { accessToken: 'at', refreshToken: 'rt', expiresAt: 1 } }));
  t.equal(w.detect().claude!.auth_source, 'file:~/.claude/.credentials.json');
  t.equal(w.detect().claude!.authenticated, true);

  for (const [what, content] of [
    ['malformed JSON', '{"claudeAiOauth": {"accessToken": '],
    ['empty file', ''],
    ['no oauth block', JSON.stringify({ other: 1 })],
    ['empty tokens', JSON.stringify({ claudeAiOauth: { accessToken: '', refreshToken: null } })],
    ['oauth block is an array', JSON.stringify({ claudeAiOauth: ['at'] })],
    ['top level is an array', JSON.stringify([{ claudeAiOauth: { accessToken: 'x' } }])],
    ['binary garbage', '\u0000\u0001\u0002'],
  ] as const) {
    w.file(creds, content);
    t.equal(w.detect().claude!.authenticated, false, what);
  }

  const custom = join(w.root, 'claude-config');
  mkdirSync(custom);
  writeFileSync(join(custom, '.credentials.json'), JSON.stringify({ claudeAiOauth: { refreshToken: 'rt' } }));
  t.equal(w.detect({ env: { CLAUDE_CONFIG_DIR: custom } }).claude!.auth_source, `file:${custom}/.credentials.json`);

  w.file('.claude.json', JSON.stringify({ oauthAccount: { accountUuid: 'u-1', emailAddress: 'a@b.c' } }));
  t.equal(w.detect({ platform: 'linux' }).claude!.authenticated, false, 'on Linux the file is what counts');
  t.equal(w.detect({ platform: 'darwin' }).claude!.auth_source, 'keychain (~/.claude.json)');
});

await t.test('codex credentials: env, auth.json (tokens or key), CODEX_HOME honoured, malformed', async (t) => {
  const w = world(t);
  t.equal(w.detect({ env: { OPENAI_API_KEY: 'sk' } }).codex!.auth_source, 'env:OPENAI_API_KEY');
  t.equal(w.detect({ env: { CODEX_API_KEY: 'sk' } }).codex!.auth_source, 'env:CODEX_API_KEY');
  writeFileSync(w.svc.envFile, 'export OPENAI_API_KEY=sk-dot # comment\n');
  t.equal(w.detect().codex!.auth_source, 'env:OPENAI_API_KEY (~/.svc/.env)');
  writeFileSync(w.svc.envFile, '');

  w.file('.codex/auth.json', JSON.stringify({ OPENAI_API_KEY: null, tokens: { id_token: 'i', access_token: 'a', refresh_token: 'r' }, last_refresh: 'x' }));
  t.equal(w.detect().codex!.auth_source, 'file:~/.codex/auth.json');
  w.file('.codex/auth.json', JSON.stringify({ OPENAI_API_KEY: 'sk-file' }));
  t.equal(w.detect().codex!.auth_source, 'file:~/.codex/auth.json');
  for (const bad of ['{', 'null', '[]', JSON.stringify({ OPENAI_API_KEY: '', tokens: null }), JSON.stringify({ tokens: { access_token: 5 } })]) {
    w.file('.codex/auth.json', bad);
    t.equal(w.detect().codex!.authenticated, false, `auth.json = ${bad}`);
  }

  // CODEX_HOME replaces ~/.codex entirely.
  w.file('.codex/auth.json', JSON.stringify({ OPENAI_API_KEY: 'sk-file' }));
  const codexHome = join(w.root, 'codex-home');
  mkdirSync(codexHome);
  t.equal(w.detect({ env: { CODEX_HOME: codexHome } }).codex!.authenticated, false, '~/.codex is not read when CODEX_HOME is set');
  writeFileSync(join(codexHome, 'auth.json'), JSON.stringify({ tokens: { refresh_token: 'r' } }));
  t.equal(w.detect({ env: { CODEX_HOME: codexHome } }).codex!.auth_source, `file:${codexHome}/auth.json`);
  mkdirSync(join(w.home, 'ch'));
  writeFileSync(join(w.home, 'ch', 'auth.json'), JSON.stringify({ tokens: { access_token: 'a' } }));
  t.equal(w.detect({ env: { CODEX_HOME: '~/ch' } }).codex!.auth_source, 'file:~/ch/auth.json', 'a leading ~ is expanded');
});

await t.test('codex models: its models_cache.json by priority, hidden skipped, config.toml model first and default', async (t) => {
  const w = world(t);
  const codexHome = join(w.root, 'codex-home');
  mkdirSync(codexHome);
  writeFileSync(join(codexHome, 'models_cache.json'), JSON.stringify({
    fetched_at: '2026-01-01T00:00:00Z',
    models: [
      { slug: 'gpt-b', visibility: 'list', priority: 2 },
      { slug: 'internal', visibility: 'hide', priority: 0 },
      { slug: 'gpt-a', visibility: 'list', priority: 1 },
      { slug: 'gpt-c' },
      { display_name: 'no slug' },
      'junk',
      { slug: 'has space', priority: 3 },
    ],
  }));
  t.same(readCodexModels(codexHome), ['gpt-a', 'gpt-b', 'gpt-c']);
  t.same(w.detect({ env: { CODEX_HOME: codexHome } }).codex!.models, ['gpt-a', 'gpt-b', 'gpt-c']);
  t.equal(w.detect({ env: { CODEX_HOME: codexHome } }).codex!.default_model, 'gpt-a');

  writeFileSync(join(codexHome, 'config.toml'), '# comment\nmodel = "gpt-z" # mine\nmodel_reasoning_effort = "high"\n[profiles.x]\nmodel = "other"\n');
  t.equal(codexConfiguredModel(codexHome), 'gpt-z');
  t.same(readCodexModels(codexHome), ['gpt-z', 'gpt-a', 'gpt-b', 'gpt-c']);
  t.equal(w.detect({ env: { CODEX_HOME: codexHome } }).codex!.default_model, 'gpt-z');

  writeFileSync(join(codexHome, 'config.toml'), '[profiles.x]\nmodel = "only-in-a-table"\n');
  t.equal(codexConfiguredModel(codexHome), undefined);
  writeFileSync(join(codexHome, 'models_cache.json'), '{not json');
  t.same(readCodexModels(codexHome), [], 'a corrupt codex cache yields nothing, not an error');
  t.same(w.detect({ env: { CODEX_HOME: codexHome } }).codex!.models, [...CODEX_PRESET_MODELS], 'presets as the last resort');
});

await t.test('gemini credentials follow the selected auth type', async (t) => {
  const w = world(t);
  const oauth = JSON.stringify({ access_token: 'ya29', refresh_token: '1//x', token_type: 'Bearer' });
  t.equal(w.detect({ env: { GEMINI_API_KEY: 'k' } }).gemini!.auth_source, 'env:GEMINI_API_KEY');
  t.equal(w.detect({ env: { GOOGLE_API_KEY: 'k' } }).gemini!.auth_source, 'env:GOOGLE_API_KEY');
  t.equal(w.detect({ config: { gemini_api_key: 'cfg' } }).gemini!.auth_source, 'config:gemini_api_key');
  w.file('.gemini/.env', 'GEMINI_API_KEY=from-gemini-env\n');
  t.equal(w.detect().gemini!.auth_source, 'file:~/.gemini/.env (GEMINI_API_KEY)');
  w.file('.gemini/.env', '');

  w.file('.gemini/oauth_creds.json', oauth);
  t.equal(w.detect().gemini!.auth_source, 'file:~/.gemini/oauth_creds.json', 'no settings: the oauth file counts');

  w.file('.gemini/settings.json', JSON.stringify({ security: { auth: { selectedType: 'gemini-api-key' } } }));
  t.equal(w.detect().gemini!.authenticated, false, 'api-key mode with only oauth creds is not signed in');
  t.equal(w.detect({ config: { gemini_api_key: 'cfg' } }).gemini!.auth_source, 'config:gemini_api_key');

  w.file('.gemini/settings.json', '{\n  // legacy layout, with comments\n  "selectedAuthType": "oauth-personal", /* yes */ "theme": "a//b"\n}');
  t.equal(w.detect({ env: { GEMINI_API_KEY: 'k' } }).gemini!.auth_source, 'file:~/.gemini/oauth_creds.json', 'oauth mode uses the oauth file');
  w.file('.gemini/oauth_creds.json', '{"access_token": ');
  t.equal(w.detect({ env: { GEMINI_API_KEY: 'k' } }).gemini!.authenticated, false, 'oauth mode with malformed creds is not signed in, whatever keys exist');

  w.file('.gemini/settings.json', JSON.stringify({ security: { auth: { selectedType: 'vertex-ai' } } }));
  t.equal(w.detect({ env: { GEMINI_API_KEY: 'k' } }).gemini!.authenticated, false);
  t.equal(w.detect({ env: { GOOGLE_API_KEY: 'k' } }).gemini!.auth_source, 'env:GOOGLE_API_KEY');
  const adc = join(w.root, 'adc.json');
  writeFileSync(adc, '{}');
  t.equal(w.detect({ env: { GOOGLE_APPLICATION_CREDENTIALS: adc } }).gemini!.auth_source, 'env:GOOGLE_APPLICATION_CREDENTIALS');
  t.equal(w.detect({ env: { GOOGLE_APPLICATION_CREDENTIALS: join(w.root, 'missing.json') } }).gemini!.authenticated, false);

  w.file('.gemini/settings.json', JSON.stringify({ security: { auth: { selectedType: 'cloud-shell' } } }));
  t.equal(w.detect().gemini!.auth_source, 'settings:cloud-shell');

  w.file('.gemini/settings.json', '{ this is not json');
  w.file('.gemini/oauth_creds.json', oauth);
  t.equal(w.detect().gemini!.auth_source, 'file:~/.gemini/oauth_creds.json', 'unreadable settings: as if none were chosen');

  w.file('.gemini/settings.json', JSON.stringify({ model: { name: 'gemini-2.5-flash' } }));
  t.equal(w.detect().gemini!.default_model, 'gemini-2.5-flash');
  w.file('.gemini/settings.json', JSON.stringify({ model: 'pro' }));
  t.equal(w.detect().gemini!.default_model, 'pro', 'older flat setting');
});

const MODELS_JS = `
export const DEFAULT_GEMINI_MODEL = 'gemini-2.5-pro';
export const DEFAULT_GEMINI_FLASH_MODEL = "gemini-2.5-flash";
export const PREVIEW_GEMINI_MODEL = \`gemini-3-pro-preview\`;
export const DEFAULT_GEMINI_MODEL_AUTO = 'auto-gemini-2.5';
export const DEFAULT_GEMINI_EMBEDDING_MODEL = 'gemini-embedding-001';
export const NOT_A_MODEL = 'gemini-cli';
export const AGAIN = 'gemini-2.5-pro';
`;

/** prefix/lib/node_modules/@google/gemini-cli with prefix/bin/gemini linking to its entry, as npm -g lays it out. */
function installGemini(root: string, layout: 'nested' | 'hoisted' | 'bundle'): { bin: string; prefix: string } {
  const prefix = join(root, 'npm');
  const pkg = join(prefix, 'lib', 'node_modules', '@google', 'gemini-cli');
  mkdirSync(join(pkg, 'dist'), { recursive: true });
  writeFileSync(join(pkg, 'package.json'), JSON.stringify({ name: '@google/gemini-cli', version: '0.0.0' }));
  const entry = join(pkg, layout === 'bundle' ? 'bundle' : 'dist', layout === 'bundle' ? 'gemini.js' : 'index.js');
  mkdirSync(dirname(entry), { recursive: true });
  writeFileSync(entry, layout === 'bundle' ? `#!/usr/bin/env node\nconst a = "gemini-2.5-pro"; const b = 'gemini-api-key'; const c = 'gemini-3-flash-preview';\n` : '#!/usr/bin/env node\n');
  chmodSync(entry, 0o755);
  if (layout !== 'bundle') {
    const core = layout === 'nested' ? join(pkg, 'node_modules', '@google', 'gemini-cli-core') : join(dirname(pkg), 'gemini-cli-core');
    mkdirSync(join(core, 'dist', 'src', 'config'), { recursive: true });
    writeFileSync(join(core, 'dist', 'src', 'config', 'models.js'), MODELS_JS);
  }
  mkdirSync(join(prefix, 'bin'), { recursive: true });
  const bin = join(prefix, 'bin', 'gemini');
  symlinkSync(entry, bin);
  return { bin, prefix };
}

await t.test('gemini models from the installed CLI files', async (t) => {
  t.same(geminiModelsFromSource(MODELS_JS), ['gemini-2.5-pro', 'gemini-2.5-flash', 'gemini-3-pro-preview', 'auto-gemini-2.5']);
  t.same(geminiModelsFromSource(''), []);
  t.same(geminiModelsFromSource('"gemini-2.5-pro\' \'gemini-\' "gemini-x"'), [], 'unbalanced quotes and non-versioned names are not ids');

  for (const layout of ['nested', 'hoisted', 'bundle'] as const) {
    const root = t.testdir({});
    const { bin, prefix } = installGemini(root, layout);
    const expected = layout === 'bundle' ? ['gemini-2.5-pro', 'gemini-3-flash-preview'] : ['gemini-2.5-pro', 'gemini-2.5-flash', 'gemini-3-pro-preview', 'auto-gemini-2.5'];
    t.same(discoverGeminiModels(bin, {}, join(root, 'elsewhere', 'bin', 'node')), expected, `${layout}: found through the executable`);
    t.same(discoverGeminiModels(null, { npm_config_prefix: prefix }, join(root, 'elsewhere', 'bin', 'node')), expected, `${layout}: found through the npm prefix`);
    t.same(discoverGeminiModels(null, {}, join(prefix, 'bin', 'node')), expected, `${layout}: found through node's own prefix`);
  }

  const empty = t.testdir({});
  t.same(discoverGeminiModels(null, {}, join(empty, 'bin', 'node')), [], 'not installed: nothing');
  t.same(discoverGeminiModels(join(BIN, 'gemini'), {}, join(empty, 'bin', 'node')), [], 'an executable outside any gemini package: nothing');
});

await t.test('detected gemini models: aliases plus discovered; our cache wins over a rescan; models option wins over both', async (t) => {
  const w = world(t);
  const { bin } = installGemini(w.root, 'nested');
  symlinkSync(bin, join(w.pathDir, 'gemini'));
  const d = w.detect();
  t.equal(d.gemini!.installed, true);
  t.same(d.gemini!.models, [...GEMINI_ALIASES, 'gemini-2.5-pro', 'gemini-2.5-flash', 'gemini-3-pro-preview', 'auto-gemini-2.5']);

  writeFileSync(join(w.svc.configDir, 'gemini_models.json'), JSON.stringify({ provider: 'gemini', fetched_at: 1, models: ['auto', 'gemini-9-cached'] }));
  t.same(w.detect().gemini!.models, [...GEMINI_ALIASES, 'gemini-9-cached'], 'cache content, aliases always present');
  writeFileSync(join(w.svc.configDir, 'gemini_models.json'), '{"provider": "gemini", "fetched_at": "yesterday"');
  t.same(w.detect().gemini!.models.length, 8, 'corrupt cache ignored: rescanned');

  writeFileSync(join(w.svc.configDir, 'codex_models.json'), JSON.stringify({ provider: 'codex', fetched_at: 1, models: ['gpt-cached'] }));
  t.same(w.detect().codex!.models, ['gpt-cached']);
  t.same(w.detect({ models: { codex: ['gpt-live'], gemini: ['gemini-live-1'] } }).codex!.models, ['gpt-live']);
  t.same(w.detect({ models: { codex: ['gpt-live'], gemini: ['gemini-live-1'] } }).gemini!.models, [...GEMINI_ALIASES, 'gemini-live-1']);
});

await t.test('localModelSource: the default fetchModels for the caches', async (t) => {
  const w = world(t);
  const { bin } = installGemini(w.root, 'hoisted');
  symlinkSync(bin, join(w.pathDir, 'gemini'));
  const codexHome = join(w.root, 'ch');
  mkdirSync(codexHome);
  const fetch = localModelSource({ env: { PATH: w.pathDir, CODEX_HOME: codexHome }, home: w.home, execPath: w.execPath });
  t.same(await fetch('codex'), [...CODEX_PRESET_MODELS], 'no codex cache: presets');
  writeFileSync(join(codexHome, 'models_cache.json'), JSON.stringify({ models: [{ slug: 'gpt-x', visibility: 'list', priority: 1 }] }));
  t.same(await fetch('codex'), ['gpt-x']);
  t.same(await fetch('gemini'), [...GEMINI_ALIASES, 'gemini-2.5-pro', 'gemini-2.5-flash', 'gemini-3-pro-preview', 'auto-gemini-2.5']);
});

await t.test('helpers', async (t) => {
  t.equal(displayPath('/h/u/.codex/auth.json', '/h/u'), '~/.codex/auth.json');
  t.equal(displayPath('/elsewhere/auth.json', '/h/u'), '/elsewhere/auth.json');
  t.equal(displayPath('/h/user2/x', '/h/u'), '/h/user2/x');
  t.equal(stripJsonComments('{"a": "http://x", // c\n"b": /* d */ 1}'), '{"a": "http://x", \n"b":  1}');
  t.equal(stripJsonComments('{"a": "q\\"//x"}'), '{"a": "q\\"//x"}', 'escaped quotes stay inside the string');
});
