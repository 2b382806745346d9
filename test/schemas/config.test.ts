import t from 'tap';
import * as v from 'valibot';
import {
  AgentConfigSchema,
  CLAUDE_MODELS,
  DEFAULT_HEARTBEAT_PROMPT,
  DEFAULT_PROVIDER,
  GEMINI_ALIASES,
  MAX_HEARTBEAT_INTERVAL_MINUTES,
  HOT_RELOADABLE_FIELDS,
  PERMISSION_MODES,
  PROVIDERS,
  RESTART_REQUIRED_FIELDS,
  RegistrySchema,
  configFileDefaults,
  defaultConfig,
  normaliseConfig,
  parseJsonText,
  validateConfig,
  validateRegistry,
} from '../../schemas/index.js';

const errorsOf = (raw: unknown): string[] => {
  const r = validateConfig(raw, 'config.json');
  if (r.ok) throw new Error(`expected rejection of ${JSON.stringify(raw)}`);
  return r.errors;
};

await t.test('constants name the providers, models and field classes', async (t) => {
  t.same(PROVIDERS, ['claude', 'codex', 'gemini']);
  t.equal(DEFAULT_PROVIDER, 'claude');
  t.same(CLAUDE_MODELS, ['haiku', 'sonnet', 'opus']);
  t.same(GEMINI_ALIASES, ['auto', 'pro', 'flash', 'flash-lite']);
  t.same(PERMISSION_MODES, ['acceptEdits', 'auto', 'bypassPermissions', 'default', 'dontAsk', 'plan']);
  t.ok(HOT_RELOADABLE_FIELDS.includes('model') && HOT_RELOADABLE_FIELDS.includes('transcription'));
  t.ok(RESTART_REQUIRED_FIELDS.includes('telegram_token') && RESTART_REQUIRED_FIELDS.includes('gemini_api_key'));
  t.same(HOT_RELOADABLE_FIELDS.filter((f) => (RESTART_REQUIRED_FIELDS as readonly string[]).includes(f)), []);
});

await t.test('{} parses to every default of SPEC.md', async (t) => {
  const c = v.parse(AgentConfigSchema, {});
  t.match(c, {
    log_level: 'INFO', provider: 'claude', model: 'opus', svc_home: '~/.svc', idle_timeout_minutes: 1440,
    session_age_warning_hours: 12, daily_reset_hour: 4, daily_reset_enabled: false, user_timezone: '',
    max_budget_usd: null, max_turns: null, max_session_messages: null, permission_mode: 'bypassPermissions',
    cli_timeout: 1800, reasoning_effort: 'medium', file_access: 'all', gemini_api_key: null, transport: 'telegram',
    telegram_token: '', telegram_api_root: 'https://api.telegram.org', group_mention_only: false, update_check: true, interagent_port: 8799,
  });
  t.same(c.permission_mode_by_role, { admin: 'bypassPermissions', operator: 'acceptEdits', viewer: 'default' });
  t.same(c.transports, []);
  t.same(c.allowed_user_ids, []);
  t.same(c.allowed_group_ids, []);
  t.same(c.topic_defaults, {});
  t.same(c.additional_directories, []);
  t.same(c.matrix, { homeserver: '', user_id: '', password: '', access_token: '', device_id: '', allowed_rooms: [], allowed_users: [], store_path: 'matrix_store' });
  t.same(c.cli_parameters, { claude: [], codex: [], gemini: [] });
  // DESIGN.md §10: the default cli_timeout (1800) was not set by the file, so foreground turns get 600 s.
  t.same(c.timeouts, { normal: 600, background: 1800, subagent: 3600, warning_intervals: [60, 10], extend_on_activity: true, activity_extension: 120, max_extensions: 3 });
  t.same(c.tasks, { enabled: true, max_parallel: 5, timeout_seconds: 3600 });
  t.same(c.streaming, { enabled: true, min_chars: 200, max_chars: 4000, idle_ms: 800, edit_interval_seconds: 2, max_edit_failures: 3, append_mode: false, sentence_break: true });
  t.same(c.docker, { enabled: false, image_name: 'svc-sandbox', container_name: 'svc-sandbox', auto_build: true, mount_host_cache: false, mounts: [], extras: [] });
  t.same(c.heartbeat, { enabled: false, interval_minutes: 30, cooldown_minutes: 5, quiet_start: 21, quiet_end: 8, prompt: DEFAULT_HEARTBEAT_PROMPT, ack_token: 'HEARTBEAT_OK', group_targets: [] });
  t.ok(c.heartbeat.prompt.includes('\n'), 'default heartbeat prompt is multi-line');
  t.same(c.image, { max_dimension: 3000, output_format: 'webp', quality: 85 });
  t.same(c.transcription, { language: 'auto', model: 'small', command: null });
  t.same(c.scene, { reaction_style: 'seen', technical_footer: false });
  t.same(c.cleanup, { enabled: true, media_files_days: 30, output_to_user_days: 30, api_files_days: 30, check_hour: 3 });
  t.same(c.memory, { enabled: true, module_line_limit: 80, session_max_age_days: 30, check_hour: 4, hook_compact_lines: 20, inject_all_modules: false, vector_search: false, vector_model: '', vector_results: 5 });
  t.same(c.webhooks, { enabled: false, host: '127.0.0.1', port: 8742, token: '', max_body_bytes: 262144, rate_limit_per_minute: 30 });
  t.same(c.fileshare, { enabled: false, host: '127.0.0.1', port: 8090, allow_public: false });
  t.same(c.api, { enabled: false, host: '0.0.0.0', port: 8741, token: '', chat_id: 0, allow_public: false, jwt_secret: '', cors_origins: [] });
  t.same(c.interagent, { sync_timeout: 600, async_timeout: 3600 });
  t.same(c.workflow, { enabled: true, max_parallel_runs: 5, default_step_timeout: 3600 });
  t.same(defaultConfig(), c);
  // Defaults are fresh per parse: mutating one config never leaks into the next.
  c.allowed_user_ids.push(1);
  c.streaming.enabled = false;
  t.same(defaultConfig().allowed_user_ids, []);
  t.equal(defaultConfig().streaming.enabled, true);
});

await t.test('a partial config keeps what it sets and fills the rest, sub-configs key by key', async (t) => {
  const c = v.parse(AgentConfigSchema, {
    model: 'sonnet',
    streaming: { enabled: false },
    heartbeat: { group_targets: [{ chat_id: -100, prompt: 'hi' }] },
    topic_defaults: { '42': { model: 'haiku' } },
    file_access: 'something-new',
    my_own_key: { keep: true },
  });
  t.equal(c.model, 'sonnet');
  t.equal(c.streaming.enabled, false);
  t.equal(c.streaming.max_chars, 4000);
  t.same(c.heartbeat.group_targets, [{ chat_id: -100, topic_id: null, prompt: 'hi', ack_token: null, interval_minutes: null, quiet_start: null, quiet_end: null }]);
  t.same(c.topic_defaults, { '42': { model: 'haiku' } });
  t.equal(c.file_access, 'something-new', 'unknown file_access is kept, not rejected');
  t.same((c as Record<string, unknown>).my_own_key, { keep: true }, 'unknown top-level keys survive');
  t.same(v.parse(AgentConfigSchema, { permission_mode_by_role: {} }).permission_mode_by_role, {}, '{} restores legacy behaviour');
});

await t.test('every enum rejects a bad value naming field, value and what is allowed', async (t) => {
  t.same(errorsOf({ permission_mode: 'yolo' }), [
    'config.json: permission_mode = "yolo" is not allowed (one of acceptEdits, auto, bypassPermissions, default, dontAsk, plan)',
  ]);
  t.same(errorsOf({ permission_mode_by_role: { admin: 'root' } }), [
    'config.json: permission_mode_by_role.admin = "root" is not allowed (one of acceptEdits, auto, bypassPermissions, default, dontAsk, plan)',
  ]);
  t.same(errorsOf({ permission_mode_by_role: { owner: 'plan' } }), [
    'config.json: permission_mode_by_role key "owner" is not allowed (one of admin, operator, viewer)',
  ]);
  t.same(errorsOf({ reasoning_effort: 'max' }), ['config.json: reasoning_effort = "max" is not allowed (one of low, medium, high, xhigh)']);
  t.same(errorsOf({ transport: 'slack' }), ['config.json: transport = "slack" is not allowed (one of telegram, matrix)']);
  t.same(errorsOf({ transports: ['matrix', 'irc'] }), ['config.json: transports[1] = "irc" is not allowed (one of telegram, matrix)']);
  t.same(errorsOf({ provider: 'openai' }), ['config.json: provider = "openai" is not allowed (one of claude, codex, gemini)']);
  t.match(errorsOf({ docker: { extras: ['ffmpeg', 'cuda'] } }), [/^config\.json: docker\.extras\[1\] = "cuda" is not allowed \(one of ffmpeg, speech, .*browser\)$/]);
  t.same(errorsOf({ image: { output_format: 'gif' } }), ['config.json: image.output_format = "gif" is not allowed (one of webp, jpeg, png)']);
  t.same(errorsOf({ transcription: { model: 'huge' } }), ['config.json: transcription.model = "huge" is not allowed (one of tiny, base, small, medium, large)']);
  t.same(errorsOf({ scene: { reaction_style: 'loud' } }), ['config.json: scene.reaction_style = "loud" is not allowed (one of off, seen, detailed)']);
  t.match(errorsOf({ log_level: 'chatty' }), [/log_level = "chatty" is not allowed \(one of DEBUG, INFO/]);
  t.ok(validateConfig({ log_level: 'debug' }, 'config.json').ok, 'log levels are case-insensitive');
  for (const mode of PERMISSION_MODES) t.ok(validateConfig({ permission_mode: mode }, 'c').ok, mode);
});

await t.test('wrong types and out-of-range values are rejected, all at once', async (t) => {
  const errors = errorsOf({
    idle_timeout_minutes: '60',
    daily_reset_enabled: 'yes',
    allowed_user_ids: [1, 'two', 3.5],
    daily_reset_hour: 24,
    interagent_port: 70000,
    cli_timeout: -1,
    max_budget_usd: 'lots',
    streaming: [],
    matrix: 'x',
    heartbeat: { group_targets: [{ topic_id: 1 }] },
  });
  t.same(errors.sort(), [
    'config.json: allowed_user_ids[1] = "two" has the wrong type (expected number)',
    'config.json: allowed_user_ids[2] = 3.5 is not allowed (a whole number)',
    'config.json: cli_timeout = -1 is not allowed (a number > 0)',
    'config.json: daily_reset_enabled = "yes" has the wrong type (expected boolean)',
    'config.json: daily_reset_hour = 24 is not allowed (a whole number from 0 to 23)',
    'config.json: heartbeat.group_targets[0].chat_id is missing (required)',
    'config.json: idle_timeout_minutes = "60" has the wrong type (expected number)',
    'config.json: interagent_port = 70000 is not allowed (a whole number from 0 to 65535)',
    'config.json: matrix = "x" has the wrong type (expected a JSON object)',
    'config.json: max_budget_usd = "lots" has the wrong type (expected number)',
    'config.json: streaming = [] has the wrong type (expected a JSON object)',
  ]);
  for (const top of [[], null, 'config', 42]) {
    t.match(errorsOf(top), [/^config\.json: top level = .* has the wrong type \(expected a JSON object\)$/], JSON.stringify(top));
  }
  const [long] = errorsOf({ svc_home: ['x'.repeat(5000)] });
  t.match(long, /^config\.json: svc_home = \["x+\.\.\. has the wrong type \(expected string\)$/);
  t.ok(long!.length < 160, 'an oversized value is shown truncated');
});

await t.test('heartbeat intervals are capped at one week: a longer one would overflow setTimeout and fire at once, in a tight loop', async (t) => {
  t.equal(MAX_HEARTBEAT_INTERVAL_MINUTES, 10_080);
  t.ok(validateConfig({ heartbeat: { interval_minutes: 10_080, group_targets: [{ chat_id: 1, interval_minutes: 10_080 }] } }, 'c').ok, 'one week is allowed');
  t.same(errorsOf({ heartbeat: { interval_minutes: 35_792, group_targets: [{ chat_id: 1, interval_minutes: 10_081 }] } }).sort(), [
    'config.json: heartbeat.group_targets[0].interval_minutes = 10081 is not allowed (a whole number from 1 to 10080)',
    'config.json: heartbeat.interval_minutes = 35792 is not allowed (a whole number from 1 to 10080)',
  ]);
});

await t.test('max_concurrent_cli: a positive integer, 8 by default, hot-reloadable', async (t) => {
  const r = validateConfig({}, 'c');
  t.equal(r.ok && r.config.max_concurrent_cli, 8);
  for (const bad of [0, -1, 1.5, '4', null]) t.match(errorsOf({ max_concurrent_cli: bad }), [/^config\.json: max_concurrent_cli = /], JSON.stringify(bad));
  const two = validateConfig({ max_concurrent_cli: 2 }, 'c');
  t.equal(two.ok && two.config.max_concurrent_cli, 2);
  t.ok((HOT_RELOADABLE_FIELDS as readonly string[]).includes('max_concurrent_cli'));
});

await t.test('additional_directories must be absolute', async (t) => {
  t.same(errorsOf({ additional_directories: ['/srv/data', 'relative/dir', '~/x'] }), [
    'config.json: additional_directories[1] = "relative/dir" is not allowed (an absolute path (relative paths and ~ are not accepted))',
    'config.json: additional_directories[2] = "~/x" is not allowed (an absolute path (relative paths and ~ are not accepted))',
  ]);
  t.ok(validateConfig({ additional_directories: ['/srv/data', 'C:\\data'] }, 'c').ok);
});

await t.test('runtime rules: provider_c key, cli_timeout into timeouts.normal, transports', async (t) => {
  for (const s of ['', 'null', 'none', 'NULL', ' None ']) {
    t.equal(v.parse(AgentConfigSchema, { gemini_api_key: s }).gemini_api_key, null, JSON.stringify(s));
  }
  t.equal(v.parse(AgentConfigSchema, { gemini_api_key: 'AIza-real' }).gemini_api_key, 'AIza-real');
  t.equal(v.parse(AgentConfigSchema, { gemini_api_key: null }).gemini_api_key, null);

  t.equal(v.parse(AgentConfigSchema, { cli_timeout: 900 }).timeouts.normal, 900, 'copied when normal is default');
  t.equal(v.parse(AgentConfigSchema, { cli_timeout: 900, timeouts: { normal: 300 } }).timeouts.normal, 300, 'explicit normal wins');
  t.equal(v.parse(AgentConfigSchema, { cli_timeout: 600 }).timeouts.normal, 600, 'cli_timeout 600 copies nothing');
  t.equal(v.parse(AgentConfigSchema, { cli_timeout: 600, timeouts: { normal: 120 } }).timeouts.normal, 120);
  t.equal(v.parse(AgentConfigSchema, {}).timeouts.normal, 600, 'an untouched config gives foreground turns 600 s');
  t.equal(v.parse(AgentConfigSchema, {}).cli_timeout, 1800, 'cli_timeout keeps its own default');
  t.equal(v.parse(AgentConfigSchema, { timeouts: { normal: 600 } }).timeouts.normal, 600, 'an explicit 600 is not overridden by the default cli_timeout');
  t.equal(v.parse(AgentConfigSchema, { cli_timeout: 1800, timeouts: { normal: 600 } }).timeouts.normal, 600, 'both set: normal wins');
  t.equal(v.parse(AgentConfigSchema, configFileDefaults()).timeouts.normal, 600, 'a fresh config.json gives 600 s');

  const multi = v.parse(AgentConfigSchema, { transport: 'telegram', transports: ['matrix', 'telegram'] });
  t.equal(multi.transport, 'matrix', 'transport becomes the first of transports');
  t.equal(v.parse(AgentConfigSchema, { transport: 'matrix', transports: [] }).transport, 'matrix', 'empty list keeps transport');

  const once = v.parse(AgentConfigSchema, { cli_timeout: 900, gemini_api_key: 'none', transports: ['matrix'] });
  t.same(normaliseConfig(once), once, 'idempotent');
  t.same(v.parse(AgentConfigSchema, once), once, 're-parsing a normalised config changes nothing');
});

await t.test('configFileDefaults: the file form persists the provider_c key as "null" and has no api block', async (t) => {
  const d = configFileDefaults();
  t.equal(d.gemini_api_key, 'null');
  t.notOk('api' in d);
  t.same((d.timeouts as { normal: number }).normal, 600, 'file keeps the raw default, not the normalised value');
  t.same(v.parse(AgentConfigSchema, d), { ...defaultConfig() });
});

await t.test('registry schema: entries, names, tokens, unknown keys', async (t) => {
  const token = 'a'.repeat(32);
  const ok = validateRegistry(
    [
      { name: 'research_bot', telegram_token: '123:abc', model: null, streaming: { enabled: false }, interagent_token: token, can_call: ['main'], note: 'mine' },
      { name: 'm-1', transport: 'matrix', matrix: { homeserver: 'https://hs', user_id: '@m:hs' }, api: { enabled: true, port: 9000 } },
    ],
    'agents.json',
  );
  if (!ok.ok) throw new Error(ok.errors.join('\n'));
  const [a, b] = ok.entries;
  t.same(a!.streaming, { enabled: false }, 'a block override names only what it sets');
  t.equal(a!.model, null);
  t.equal((a as Record<string, unknown>).note, 'mine', 'unknown keys survive');
  t.equal(b!.matrix!.store_path, 'matrix_store');
  t.same(b!.api, { enabled: true, port: 9000 });

  const bad = validateRegistry(
    [
      { name: 'Bad Name', telegram_token: 'x' },
      { name: 'notoken' },
      { name: 'mx', transport: 'matrix' },
      { name: 'short', telegram_token: 'x', interagent_token: 'abc' },
      { telegram_token: 'x' },
      { name: 'perm', telegram_token: 'x', permission_mode: 'yolo', additional_directories: ['rel'] },
    ],
    'agents.json',
  );
  t.notOk(bad.ok);
  if (bad.ok) return;
  t.same(bad.errors, [
    'agents.json: [0].name = "Bad Name" is not allowed (a lowercase name of a-z, 0-9, _ and - (e.g. "research_bot"))',
    'agents.json: [1].telegram_token is missing (required: a bot token when transport is telegram)',
    'agents.json: [2].matrix is missing (required: a matrix block with homeserver and user_id when transport is matrix)',
    'agents.json: [3].interagent_token = "abc" is not allowed (a random string of at least 32 characters)',
    'agents.json: [4].name is missing (required)',
    'agents.json: [5].permission_mode = "yolo" is not allowed (one of acceptEdits, auto, bypassPermissions, default, dontAsk, plan)',
    'agents.json: [5].additional_directories[0] = "rel" is not allowed (an absolute path (relative paths and ~ are not accepted))',
  ]);
  const dup = validateRegistry([{ name: 'a', telegram_token: 'x' }, { name: 'a', telegram_token: 'y' }], 'agents.json');
  t.match(dup, { ok: false, errors: [/unique agent names; duplicated: a/] });
  t.match(validateRegistry({ name: 'a' }, 'agents.json'), { ok: false, errors: ['agents.json: top level = {"name":"a"} has the wrong type (expected a list)'] });
  t.same(v.parse(RegistrySchema, []), []);
});

await t.test('parseJsonText names file, line and column of malformed or truncated JSON', async (t) => {
  t.same(parseJsonText('{"a": [1, 2]}', 'f.json'), { ok: true, value: { a: [1, 2] } });
  const cases: [string, RegExp][] = [
    ['', /^f\.json: not valid JSON at line 1 column 1 \(unexpected end of file, it looks truncated\); fix the file by hand, it was not changed$/],
    ['{\n  "model": "opus",\n  "x": \n}', /^f\.json: not valid JSON at line 4 column 1 \(unexpected character "}"/],
    ['{\n  "model": "opus",\n  "streaming": {"enabled": tru', /at line 3 column 28 \(unexpected character "t"/],
    ['{\n  "model": "opus",\n  "streaming": {', /at line 3 column 17 \(unexpected end of file, it looks truncated\)/],
    ['{"a": 1,}', /at line 1 column 9 \(trailing comma/],
    ["{'a': 1}", /at line 1 column 2 \(expected a quoted key/],
    ['{"a": "unterminated\n}', /at line 1 column 20 \(unterminated string, near/],
    ['{"a": 1} extra', /at line 1 column 10 \(unexpected text after the end/],
  ];
  for (const [text, re] of cases) {
    const r = parseJsonText(text, 'f.json');
    t.notOk(r.ok, JSON.stringify(text));
    if (!r.ok) t.match(r.error, re, JSON.stringify(text));
  }
});
