import t from 'tap';
import { createActor } from 'xstate';
import {
  configMachine,
  deepEqual,
  diffConfig,
  diffRegistry,
  effectiveSubAgentConfig,
  normaliseConfig,
  parseConfig,
  parseConfigText,
  registryMachine,
  resolveProvider,
  type ConfigFact,
  type RegistryFact,
} from '../../machines/index.js';
import { defaultConfig, isSvcError, validateRegistry, type AgentConfig, type SubAgentConfig } from '../../schemas/index.js';

const cfg = (raw: Record<string, unknown>): AgentConfig => {
  const r = parseConfig(raw, 'config.json');
  if (!r.ok) throw new Error(r.errors.join('\n'));
  return r.config;
};
const entries = (raw: unknown[]): SubAgentConfig[] => {
  const r = validateRegistry(raw, 'agents.json');
  if (!r.ok) throw new Error(r.errors.join('\n'));
  return r.entries;
};
const TOKEN = 'x'.repeat(40);

await t.test('parseConfig: ok with normalised config, or errors naming file, field, value and rule', async (t) => {
  const ok = parseConfig({ gemini_api_key: 'none', cli_timeout: 900 }, 'config.json');
  t.match(ok, { ok: true, config: { gemini_api_key: null, timeouts: { normal: 900 } } });
  t.same(parseConfig({ permission_mode: 'yolo' }, 'config.json'), {
    ok: false,
    errors: ['config.json: permission_mode = "yolo" is not allowed (one of acceptEdits, auto, bypassPermissions, default, dontAsk, plan)'],
  });
  t.same(parseConfig({ additional_directories: ['data'] }, '/h/config.json'), {
    ok: false,
    errors: ['/h/config.json: additional_directories[0] = "data" is not allowed (an absolute path (relative paths and ~ are not accepted))'],
  });
  t.equal(normaliseConfig(defaultConfig()).transport, 'telegram');
});

await t.test('parseConfigText: JSON errors, schema errors and directories the caller did not find', async (t) => {
  t.match(parseConfigText('{"model": ', 'config.json', []), { ok: false, errors: [/^config\.json: not valid JSON at line 1 column 11/] });
  t.match(parseConfigText('{"max_turns": 0}', 'config.json', []), { ok: false, errors: ['config.json: max_turns = 0 is not allowed (a whole number >= 1)'] });
  t.same(parseConfigText('{"additional_directories": ["/a", "/b"]}', 'config.json', ['/a']), {
    ok: false,
    errors: ['config.json: additional_directories[1] = "/b" is not allowed (an existing directory; this path does not exist or is not a directory)'],
  });
  t.match(parseConfigText('{"additional_directories": ["/a"]}', 'config.json', ['/a']), { ok: true });
});

await t.test('diffConfig classifies changed top-level fields per SPEC "Hot reload"', async (t) => {
  const old = defaultConfig();
  t.same(diffConfig(old, defaultConfig()), { hot: [], restart: [] });
  const next = cfg({
    model: 'sonnet',
    provider: 'codex',
    streaming: { enabled: false },
    transcription: { language: 'de' },
    allowed_user_ids: [5],
    telegram_token: 'tok',
    matrix: { homeserver: 'https://hs' },
    docker: { enabled: true },
    api: { port: 1 },
    webhooks: { enabled: true },
    svc_home: '/elsewhere',
    log_level: 'DEBUG',
    gemini_api_key: 'k',
    tasks: { max_parallel: 2 },
    memory: { enabled: false },
    interagent_port: 9999,
    topic_defaults: { '1': { model: 'haiku' } },
    a_users_note: 'ignored',
  });
  const d = diffConfig(old, next);
  t.same(d.hot.sort(), ['allowed_user_ids', 'model', 'provider', 'streaming', 'transcription']);
  t.same(d.restart.sort(), ['api', 'docker', 'gemini_api_key', 'interagent_port', 'log_level', 'matrix', 'memory', 'svc_home', 'tasks', 'telegram_token', 'topic_defaults', 'webhooks']);
  // cli_timeout is hot, but through the legacy rule it moves timeouts.normal, which needs a restart.
  t.same(diffConfig(old, cfg({ cli_timeout: 1200 })), { hot: ['cli_timeout'], restart: ['timeouts'] });
  t.same(diffConfig(old, cfg({ transports: ['matrix'] })), { hot: [], restart: ['transport', 'transports'] });
});

await t.test('effectiveSubAgentConfig: main, then own config, then registry, then forced fields', async (t) => {
  const main = cfg({
    model: 'opus',
    reasoning_effort: 'high',
    telegram_token: 'main-token',
    allowed_user_ids: [1, 2],
    allowed_group_ids: [9],
    transports: ['telegram', 'matrix'],
    matrix: { homeserver: 'https://main', user_id: '@main:hs' },
    additional_directories: ['/main/only'],
    api: { enabled: true, token: 'main-api', port: 8741 },
    streaming: { max_chars: 1000, min_chars: 10 },
    timeouts: { background: 99 },
    tasks: { max_parallel: 7 },
    user_timezone: 'Europe/Berlin',
  });
  const [entry] = entries([
    {
      name: 'helper',
      telegram_token: 'helper-token',
      allowed_user_ids: [3],
      model: 'sonnet',
      permission_mode: null,
      streaming: { max_chars: 2000 },
      timeouts: { background: 1 },
      tasks: { max_parallel: 1 },
      additional_directories: ['/registry/dir'],
    },
  ]);
  const own = { reasoning_effort: 'low', permission_mode: 'plan', streaming: { min_chars: 50 }, additional_directories: ['/own/dir'], model: 'haiku' };
  const eff = effectiveSubAgentConfig(main, own, entry!, { agentsDir: '/home/u/.svc/agents/' });
  t.equal(eff.svc_home, '/home/u/.svc/agents/helper');
  t.equal(eff.model, 'sonnet', 'registry beats own config');
  t.equal(eff.reasoning_effort, 'low', 'own config beats main');
  t.equal(eff.permission_mode, 'plan', 'a null registry value inherits');
  t.same(eff.streaming, { ...main.streaming, min_chars: 50, max_chars: 2000 }, 'blocks merge key by key across layers');
  t.equal(eff.user_timezone, 'Europe/Berlin', 'main fills the rest');
  t.equal(eff.transport, 'telegram');
  t.same(eff.transports, [], 'main transports do not leak');
  t.equal(eff.telegram_token, 'helper-token');
  t.same(eff.allowed_user_ids, [3]);
  t.same(eff.allowed_group_ids, [], 'allowlists come from the entry only');
  t.same(eff.matrix, defaultConfig().matrix);
  t.same(eff.additional_directories, ['/registry/dir']);
  t.equal(eff.api.enabled, false, 'no api block in the entry: api off');
  t.same(eff.timeouts, main.timeouts, 'no timeouts from the entry');
  t.same(eff.tasks, main.tasks, 'no tasks from the entry');

  const [plain] = entries([{ name: 'plain', telegram_token: 't' }]);
  const eff2 = effectiveSubAgentConfig(main, null, plain!, { agentsDir: '/a' });
  t.same(eff2.additional_directories, [], "main's additional_directories are not inherited");
  t.equal(eff2.model, 'opus');

  const [withApi] = entries([
    { name: 'mx', transport: 'matrix', matrix: { homeserver: 'https://hs2', user_id: '@mx:hs2' }, api: { enabled: true, port: 8800 } },
  ]);
  const eff3 = effectiveSubAgentConfig(main, { additional_directories: ['/own'] }, withApi!, { agentsDir: '/a' });
  t.match(eff3, { transport: 'matrix', telegram_token: '', matrix: { homeserver: 'https://hs2', user_id: '@mx:hs2', store_path: 'matrix_store' }, api: { enabled: true, port: 8800 } });
  t.same(eff3.additional_directories, ['/own']);

  let caught: unknown;
  try {
    effectiveSubAgentConfig(main, { permission_mode: 'yolo' }, plain!, { agentsDir: '/a' });
  } catch (e) {
    caught = e;
  }
  t.ok(isSvcError(caught, 'config-invalid'));
  t.match((caught as Error).message, /^agents\.json entry "plain" .*: permission_mode = "yolo" is not allowed/);
});

await t.test('diffRegistry reports added, removed and changed agents, restart only for identity changes', async (t) => {
  const before = entries([
    { name: 'a', telegram_token: 't1', model: 'opus' },
    { name: 'b', telegram_token: 't2' },
    { name: 'c', transport: 'matrix', matrix: { homeserver: 'https://h', user_id: '@c:h', password: 'p' } },
    { name: 'd', telegram_token: 't4', model: null },
  ]);
  const after = entries([
    { name: 'a', telegram_token: 't1', model: 'sonnet' },
    { name: 'c', transport: 'matrix', matrix: { homeserver: 'https://h', user_id: '@c:h', password: 'changed' } },
    { name: 'd', telegram_token: 't4-new' },
    { name: 'e', telegram_token: 't5' },
  ]);
  t.same(diffRegistry(before, after), {
    added: ['e'],
    removed: ['b'],
    changed: [
      { name: 'a', restart: false, fields: ['model'] },
      { name: 'c', restart: false, fields: ['matrix'] },
      { name: 'd', restart: true, fields: ['telegram_token'] },
    ],
  });
  const moved = entries([{ name: 'c', transport: 'matrix', matrix: { homeserver: 'https://other', user_id: '@c:h' } }]);
  t.same(diffRegistry(before.slice(2, 3), moved).changed, [{ name: 'c', restart: true, fields: ['matrix'] }]);
  const toTelegram = entries([{ name: 'c', transport: 'telegram', telegram_token: 'x' }]);
  t.same(diffRegistry(before.slice(2, 3), toTelegram).changed[0]!.restart, true);
  t.same(diffRegistry(before, before), { added: [], removed: [], changed: [] });
});

await t.test('resolveProvider per SPEC model resolution', async (t) => {
  for (const m of ['haiku', 'sonnet', 'opus', 'Opus']) t.equal(resolveProvider(m, []), 'claude', m);
  for (const m of ['auto', 'pro', 'flash', 'flash-lite', 'gemini-2.5-pro', 'auto-gemini-3', 'my-discovered']) {
    t.equal(resolveProvider(m, ['my-discovered']), 'gemini', m);
  }
  for (const m of ['gpt-5-codex', 'o3', 'my-discovered']) t.equal(resolveProvider(m, []), 'codex', m);
});

await t.test('deepEqual ignores key order', async (t) => {
  t.ok(deepEqual({ a: 1, b: [1, { c: 2 }] }, { b: [1, { c: 2 }], a: 1 }));
  t.notOk(deepEqual({ a: 1 }, { a: 1, b: 2 }));
  t.notOk(deepEqual([1, 2], [2, 1]));
});

function runConfig(config: AgentConfig) {
  const actor = createActor(configMachine, { input: { config, file: '/h/config/config.json' } });
  const facts: ConfigFact[] = [];
  actor.on('*', (f) => facts.push(f as ConfigFact));
  actor.start();
  return { actor, facts };
}

await t.test('config machine: a valid edit applies hot fields and reports it', async (t) => {
  const { actor, facts } = runConfig(defaultConfig());
  actor.send({ type: 'file.changed', text: JSON.stringify({ model: 'sonnet', streaming: { enabled: false } }), existingDirs: [] });
  t.same(facts, [{ type: 'config.reloaded', data: { hot_applied: ['model', 'streaming'], restart_required: [] } }]);
  const ctx = actor.getSnapshot().context;
  t.equal(ctx.config.model, 'sonnet');
  t.equal(ctx.config.streaming.enabled, false);
  t.same(ctx.pendingRestart, []);

  actor.send({ type: 'file.changed', text: JSON.stringify({ model: 'sonnet', streaming: { enabled: false } }), existingDirs: [] });
  t.equal(facts.length, 1, 'no change to any AgentConfig field: no event');

  // Issue 11: a key svc does not know is reported (a typo would otherwise fail silently), once.
  const withNote = JSON.stringify({ model: 'sonnet', streaming: { enabled: false, min_charz: 5 }, my_note: 'x' });
  actor.send({ type: 'file.changed', text: withNote, existingDirs: [] });
  t.same(facts[1], { type: 'config.reloaded', data: { hot_applied: [], restart_required: [], unknown_keys: ['streaming.min_charz', 'my_note'] } });
  actor.send({ type: 'file.changed', text: withNote, existingDirs: [] });
  t.equal(facts.length, 2, 'the same unknown keys again: no new event');
});

await t.test('config machine: an invalid edit is rejected and the last good config kept', async (t) => {
  const { actor, facts } = runConfig(cfg({ model: 'haiku' }));
  const before = actor.getSnapshot().context;
  actor.send({ type: 'file.changed', text: '{"model": "sonnet", ', existingDirs: [] });
  actor.send({ type: 'file.changed', text: '{"model": "sonnet", "permission_mode": "yolo"}', existingDirs: [] });
  actor.send({ type: 'file.changed', text: '{"model": "sonnet", "additional_directories": ["/gone"]}', existingDirs: [] });
  actor.send({ type: 'file.changed', text: '[]', existingDirs: [] });
  t.equal(facts.length, 4);
  t.ok(facts.every((f) => f.type === 'config.rejected' && f.data.file === '/h/config/config.json'));
  t.match(facts[0]!.data, { errors: [/not valid JSON at line 1 column 21 \(unexpected end of file/] });
  t.match(facts[1]!.data, { errors: ['/h/config/config.json: permission_mode = "yolo" is not allowed (one of acceptEdits, auto, bypassPermissions, default, dontAsk, plan)'] });
  t.match(facts[2]!.data, { errors: [/additional_directories\[0\] = "\/gone" is not allowed \(an existing directory/] });
  t.match(facts[3]!.data, { errors: [/top level = \[\] has the wrong type/] });
  t.same(actor.getSnapshot().context, before, 'nothing changed');
  t.equal(actor.getSnapshot().context.config.model, 'haiku');

  actor.send({ type: 'file.changed', text: '{"model": "sonnet", "additional_directories": ["/here"]}', existingDirs: ['/here'] });
  t.same(facts[4], { type: 'config.reloaded', data: { hot_applied: ['model'], restart_required: ['additional_directories'] } });
});

await t.test('config machine: restart-required fields are recorded, not applied', async (t) => {
  const start = cfg({ telegram_token: 'old', log_level: 'INFO' });
  const { actor, facts } = runConfig(start);
  actor.send({ type: 'file.changed', text: JSON.stringify({ telegram_token: 'new', log_level: 'DEBUG', model: 'haiku', timeouts: { background: 5 } }), existingDirs: [] });
  t.same(facts, [{ type: 'config.reloaded', data: { hot_applied: ['model'], restart_required: ['log_level', 'telegram_token', 'timeouts'] } }]);
  let ctx = actor.getSnapshot().context;
  t.equal(ctx.config.model, 'haiku', 'hot field applied');
  t.equal(ctx.config.telegram_token, 'old', 'restart field keeps the running value');
  t.equal(ctx.config.log_level, 'INFO');
  t.same(ctx.config.timeouts, start.timeouts);
  t.equal(ctx.fileConfig.telegram_token, 'new');
  t.same(ctx.pendingRestart, ['log_level', 'telegram_token', 'timeouts']);

  // Only a hot field moves; the pending restart stays pending.
  actor.send({ type: 'file.changed', text: JSON.stringify({ telegram_token: 'new', log_level: 'DEBUG', model: 'opus', timeouts: { background: 5 } }), existingDirs: [] });
  t.same(facts[1], { type: 'config.reloaded', data: { hot_applied: ['model'], restart_required: [] } });
  ctx = actor.getSnapshot().context;
  t.same(ctx.pendingRestart, ['log_level', 'telegram_token', 'timeouts']);
  t.equal(ctx.config.telegram_token, 'old');

  // Reverting a restart-required field to its running value clears it without an event.
  actor.send({ type: 'file.changed', text: JSON.stringify({ telegram_token: 'old', log_level: 'DEBUG', model: 'opus', timeouts: { background: 5 } }), existingDirs: [] });
  t.equal(facts.length, 2);
  t.same(actor.getSnapshot().context.pendingRestart, ['log_level', 'timeouts']);
});

await t.test('registry machine: added, removed, changed, rejected', async (t) => {
  const initial = entries([{ name: 'a', telegram_token: 't1' }, { name: 'b', telegram_token: 't2' }]);
  const actor = createActor(registryMachine, { input: { entries: initial, file: '/h/_secrets/agents.json' } });
  const facts: RegistryFact[] = [];
  actor.on('*', (f) => facts.push(f as RegistryFact));
  actor.start();

  actor.send({ type: 'file.changed', text: JSON.stringify([{ name: 'a', telegram_token: 't1-new', interagent_token: TOKEN }, { name: 'c', telegram_token: 't3' }]) });
  t.same(facts, [
    { type: 'registry.agent_removed', data: { name: 'b' } },
    { type: 'registry.agent_added', data: { name: 'c' } },
    { type: 'registry.agent_changed', data: { name: 'a', restart: true, fields: ['telegram_token', 'interagent_token'] } },
  ]);
  t.same(actor.getSnapshot().context.entries.map((e) => e.name), ['a', 'c']);

  facts.length = 0;
  const good = actor.getSnapshot().context;
  actor.send({ type: 'file.changed', text: '[{"name": "a", "telegram_token": "t1"}, {"name": "a", "telegram_token": "t2"}]' });
  actor.send({ type: 'file.changed', text: '[{"name": "a"', file: '/h/agents.json' });
  t.same(facts.map((f) => f.type), ['registry.rejected', 'registry.rejected']);
  t.match(facts[0]!.data, { file: '/h/_secrets/agents.json', errors: [/duplicated: a/] });
  t.match(facts[1]!.data, { file: '/h/agents.json', errors: [/^\/h\/agents\.json: not valid JSON at line 1/] });
  t.same(actor.getSnapshot().context, good, 'last good registry kept');

  facts.length = 0;
  actor.send({ type: 'file.changed', text: JSON.stringify(good.entries) });
  t.same(facts, [], 'unchanged registry: no events');

  // Names that would alias the main agent or be unsafe as a directory or a command-line word.
  for (const name of ['main', 'MAIN', 'Main', '-rf', '../x', '.', '..', 'a/b', 'a\u0000b', 'x'.repeat(65), '', 'Research']) {
    facts.length = 0;
    actor.send({ type: 'file.changed', text: JSON.stringify([...good.entries, { name, telegram_token: 't9' }]) });
    t.same(facts.map((f) => f.type), ['registry.rejected'], `${JSON.stringify(name)} is refused`);
    t.match(facts[0]!.data, { errors: [/\[2\]\.name = .* is not allowed/] });
  }
  t.match(facts.length && JSON.stringify(facts), /lowercase/);
  facts.length = 0;
  actor.send({ type: 'file.changed', text: JSON.stringify([{ name: 'main', telegram_token: 't9' }]) });
  t.match(facts[0]!.data, { errors: [/name = "main" is not allowed \(a name other than "main" \(reserved for the main agent\)\)/] });
  t.same(actor.getSnapshot().context, good, 'last good registry kept');
  facts.length = 0;
  actor.send({ type: 'file.changed', text: JSON.stringify([...good.entries, { name: 'x'.repeat(64), telegram_token: 't9' }, { name: 'main_helper', telegram_token: 't9' }]) });
  t.same(facts.map((f) => f.type), ['registry.agent_added', 'registry.agent_added'], '64 characters and names merely containing "main" are fine');
});
