import t from 'tap';
import * as fs from 'node:fs';
import { join } from 'node:path';
import {
  buildChildEnv,
  enableApi,
  fillConfigDefaults,
  findExampleConfig,
  homePaths,
  loadConfig,
  loadRegistry,
  parseDotEnv,
  readDotEnv,
  registryLocation,
  saveRegistry,
} from '../../store/index.js';
import { configFileDefaults, defaultConfig, type SubAgentConfig } from '../../schemas/index.js';

const mode = (p: string) => fs.statSync(p).mode & 0o777;


await t.test('the shipped example is the file form of the defaults', async (t) => {
  const example = findExampleConfig();
  t.ok(example, 'found from source');
  const parsed = JSON.parse(fs.readFileSync(example!, 'utf8'));
  t.same(parsed, configFileDefaults());
  t.equal(parsed.gemini_api_key, 'null');
  t.notOk('api' in parsed, 'no api block');
});

await t.test('first start creates home, config dir and config.json from the example', async (t) => {
  const root = join(t.testdir(), 'home');
  const paths = homePaths(root);
  const loaded = loadConfig(paths);
  t.equal(loaded.created, true);
  t.same(loaded.keysAdded, []);
  t.same(loaded.config, defaultConfig());
  t.equal(mode(root), 0o700);
  t.equal(mode(paths.configFile), 0o600);
  t.same(JSON.parse(fs.readFileSync(paths.configFile, 'utf8')), JSON.parse(fs.readFileSync(findExampleConfig()!, 'utf8')));
  t.equal(loaded.raw.gemini_api_key, 'null', 'persisted as the string');
  t.equal(loaded.config.gemini_api_key, null, 'null at runtime');

  const again = loadConfig(paths);
  t.equal(again.created, false);
});

await t.test('first start without an example falls back to the schema defaults', async (t) => {
  const paths = homePaths(join(t.testdir(), 'h'));
  const loaded = loadConfig(paths, { exampleFile: null });
  t.equal(loaded.created, true);
  t.same(JSON.parse(fs.readFileSync(paths.configFile, 'utf8')), configFileDefaults());
  const missingExample = homePaths(join(t.testdir(), 'h2'));
  t.same((loadConfig(missingExample, { exampleFile: '/nonexistent/example.json' })).config, defaultConfig());
});

await t.test('write-back happens only when keys were added, keeps user keys, never adds api', async (t) => {
  const paths = homePaths(t.testdir({ config: { 'config.json': JSON.stringify({ model: 'sonnet', streaming: { enabled: false }, permission_mode_by_role: { admin: 'plan' }, my_key: [1] }) } }));
  const first = loadConfig(paths);
  t.equal(first.created, false);
  t.ok(first.keysAdded.includes('log_level'));
  t.ok(first.keysAdded.includes('streaming.max_chars'));
  t.notOk(first.keysAdded.includes('streaming.enabled'));
  t.notOk(first.keysAdded.some((k) => k.startsWith('api')), 'api is never added');
  t.notOk(first.keysAdded.some((k) => k.startsWith('permission_mode_by_role.')), 'maps are not filled');
  const onDisk = JSON.parse(fs.readFileSync(paths.configFile, 'utf8'));
  t.same(onDisk, first.raw);
  t.match(onDisk, { model: 'sonnet', streaming: { enabled: false, max_chars: 4000 }, permission_mode_by_role: { admin: 'plan' }, my_key: [1], gemini_api_key: 'null' });
  t.same(onDisk.permission_mode_by_role, { admin: 'plan' });
  t.notOk('api' in onDisk);
  t.equal(mode(paths.configFile), 0o600);
  t.equal(first.config.model, 'sonnet');

  // A complete file is left alone: same bytes, same inode, same mtime.
  const past = new Date('2020-01-01T00:00:00Z');
  fs.utimesSync(paths.configFile, past, past);
  const before = fs.statSync(paths.configFile);
  const text = fs.readFileSync(paths.configFile, 'utf8');
  const second = loadConfig(paths);
  t.same(second.keysAdded, []);
  const after = fs.statSync(paths.configFile);
  t.equal(after.mtimeMs, before.mtimeMs);
  t.equal(after.ino, before.ino);
  t.equal(fs.readFileSync(paths.configFile, 'utf8'), text);
});

await t.test('fillConfigDefaults completes an existing api block but adds none', async (t) => {
  t.notOk('api' in fillConfigDefaults({}).merged);
  const { merged, keysAdded } = fillConfigDefaults({ api: { enabled: true, token: 't' } });
  t.same(merged.api, { enabled: true, token: 't', host: '0.0.0.0', port: 8741, chat_id: 0, allow_public: false, jwt_secret: '', cors_origins: [] });
  t.ok(keysAdded.includes('api.cors_origins'));
});

await t.test('a bad file is reported and never rewritten', async (t) => {
  const cases: [string, RegExp][] = [
    ['{"model": "opus",\n  "streaming": {"enabled": false,\n', /config\.json: not valid JSON at line 3 column 1 \(unexpected end of file, it looks truncated\)/],
    ['{"model": "opus",, }', /config\.json: not valid JSON at line 1 column 18/],
    ['', /not valid JSON at line 1 column 1/],
    ['[1, 2]', /config\.json: top level = a list is not allowed \(a JSON object/],
    ['{"permission_mode": "yolo"}', /config\.json: permission_mode = "yolo" is not allowed \(one of acceptEdits, auto, bypassPermissions, default, dontAsk, plan\)/],
    ['{"idle_timeout_minutes": "soon"}', /config\.json: idle_timeout_minutes = "soon" has the wrong type \(expected number\)/],
    ['{"additional_directories": ["relative/path"]}', /config\.json: additional_directories\[0\] = "relative\/path" is not allowed \(an absolute path/],
    ['{"additional_directories": ["/definitely/not/here"]}', /config\.json: additional_directories\[0\] = "\/definitely\/not\/here" is not allowed \(an existing directory/],
  ];
  for (const [text, re] of cases) {
    const paths = homePaths(t.testdir({ config: { 'config.json': text } }));
    t.throws(() => loadConfig(paths), { name: 'SvcError', code: 'config-invalid', message: re });
    t.equal(fs.readFileSync(paths.configFile, 'utf8'), text, 'file untouched');
  }
  const dir = t.testdir({ config: {}, data: {} });
  const paths = homePaths(dir);
  fs.writeFileSync(paths.configFile, JSON.stringify({ additional_directories: [join(dir, 'data')] }));
  t.same((loadConfig(paths)).config.additional_directories, [join(dir, 'data')]);
  fs.writeFileSync(join(dir, 'file.txt'), 'x');
  fs.writeFileSync(paths.configFile, JSON.stringify({ additional_directories: [join(dir, 'file.txt')] }));
  t.throws(() => loadConfig(paths), { name: 'SvcError', code: 'config-invalid', message: /file\.txt" is not allowed \(an existing directory/ });
});

await t.test('enableApi writes the api block with generated secrets and keeps the rest', async (t) => {
  const paths = homePaths(t.testdir({ config: { 'config.json': JSON.stringify({ model: 'haiku', my_key: 'kept' }) } }));
  let n = 0;
  const { token, host } = enableApi(paths, () => `generated-${++n}`);
  t.equal(token, 'generated-1');
  t.equal(host, '127.0.0.1', 'loopback unless asked otherwise');
  const onDisk = JSON.parse(fs.readFileSync(paths.configFile, 'utf8'));
  t.same(onDisk.api, { enabled: true, host: '127.0.0.1', port: 8741, token: 'generated-1', chat_id: 0, allow_public: false, jwt_secret: 'generated-2', cors_origins: [] });
  t.equal(onDisk.model, 'haiku');
  t.equal(onDisk.my_key, 'kept');
  t.equal(mode(paths.configFile), 0o600);
  t.equal((loadConfig(paths)).config.api.enabled, true);

  // Existing token and secret are kept; only `enabled` flips.
  onDisk.api = { enabled: false, token: 'mine', jwt_secret: 'js', port: 9000 };
  fs.writeFileSync(paths.configFile, JSON.stringify(onDisk));
  t.equal(enableApi(paths, () => 'unused').token, 'mine');
  t.match(JSON.parse(fs.readFileSync(paths.configFile, 'utf8')).api, { enabled: true, token: 'mine', jwt_secret: 'js', port: 9000, host: '127.0.0.1' });

  // A host the file names is the user's choice and stays; an explicit bind replaces it.
  onDisk.api = { enabled: false, token: 'mine', host: '10.0.0.5' };
  fs.writeFileSync(paths.configFile, JSON.stringify(onDisk));
  t.equal(enableApi(paths, () => 'unused').host, '10.0.0.5');
  t.match(enableApi(paths, () => 'unused', { host: '0.0.0.0', public: true }), { host: '0.0.0.0' });
  t.match(JSON.parse(fs.readFileSync(paths.configFile, 'utf8')).api, { host: '0.0.0.0', allow_public: true });

  const bad = homePaths(t.testdir({ config: { 'config.json': '{"api": ' } }));
  t.throws(() => enableApi(bad, () => 'x'), { name: 'SvcError', code: 'config-invalid', message: /not valid JSON/ });
  t.equal(fs.readFileSync(bad.configFile, 'utf8'), '{"api": ');
});

await t.test('registry: legacy location read, writes go to _secrets with 0700/0600', async (t) => {
  const empty = homePaths(t.testdir());
  t.same(loadRegistry(empty), []);
  t.equal(registryLocation(empty), null);

  const legacy = [{ name: 'helper', telegram_token: '1:abc', model: 'sonnet', custom: true }];
  const paths = homePaths(t.testdir({ 'agents.json': JSON.stringify(legacy) }));
  t.equal(registryLocation(paths), paths.legacyAgentsRegistry);
  const read = loadRegistry(paths);
  t.same(read, legacy);

  const next: SubAgentConfig[] = [...read, { name: 'second', telegram_token: '2:def' }];
  saveRegistry(paths, next);
  t.equal(registryLocation(paths), paths.agentsRegistry);
  t.equal(mode(paths.secretsDir), 0o700);
  t.equal(mode(paths.agentsRegistry), 0o600);
  t.same(JSON.parse(fs.readFileSync(paths.agentsRegistry, 'utf8')), next);
  t.same(JSON.parse(fs.readFileSync(paths.legacyAgentsRegistry, 'utf8')), legacy, 'legacy file untouched');
  t.same((loadRegistry(paths)).map((e) => e.name), ['helper', 'second'], '_secrets wins over legacy');

  // A loosened secrets directory is tightened on the next write.
  fs.chmodSync(paths.secretsDir, 0o755);
  saveRegistry(paths, next);
  t.equal(mode(paths.secretsDir), 0o700);

  const before = fs.readFileSync(paths.agentsRegistry, 'utf8');
  t.throws(() => saveRegistry(paths, [{ name: 'Bad Name', telegram_token: 'x' }]), { name: 'SvcError', code: 'registry-invalid', message: /\[0\]\.name = "Bad Name" is not allowed/ });
  t.equal(fs.readFileSync(paths.agentsRegistry, 'utf8'), before, 'invalid entries are not written');

  fs.writeFileSync(paths.agentsRegistry, '[{"name": "x",');
  t.throws(() => loadRegistry(paths), { name: 'SvcError', code: 'registry-invalid', message: /agents\.json: not valid JSON at line 1/ });
  fs.writeFileSync(paths.agentsRegistry, JSON.stringify([{ name: 'x', telegram_token: 't' }, { name: 'x', telegram_token: 'u' }]));
  t.throws(() => loadRegistry(paths), { name: 'SvcError', code: 'registry-invalid', message: /duplicated: x/ });
});

await t.test('dotenv: standard syntax', async (t) => {
  const env = parseDotEnv(
    [
      '# a comment',
      '',
      'PLAIN=value',
      'export EXPORTED=yes',
      'SPACED = padded  ',
      'INLINE=keep # comment dropped',
      'HASH=a#b',
      "SINGLE='literal \\n $x # not a comment'",
      'DOUBLE="line1\\nline2\\t\\"q\\""',
      'MULTI="first',
      'second"',
      'EMPTY=',
      'EQUALS=a=b=c',
      'not a pair',
      '1BAD=x',
      'WIN=crlf\r',
    ].join('\n'),
  );
  t.same(env, {
    PLAIN: 'value',
    EXPORTED: 'yes',
    SPACED: 'padded',
    INLINE: 'keep',
    HASH: 'a#b',
    SINGLE: 'literal \\n $x # not a comment',
    DOUBLE: 'line1\nline2\t"q"',
    MULTI: 'first\nsecond',
    EMPTY: '',
    EQUALS: 'a=b=c',
    WIN: 'crlf',
  });
});

await t.test('dotenv: read with an mtime cache, missing file is empty', async (t) => {
  const dir = t.testdir({ '.env': 'A=1\n' });
  const file = join(dir, '.env');
  t.same(readDotEnv(join(dir, 'missing.env')), {});
  t.same(readDotEnv(file), { A: '1' });
  const stamp = new Date('2021-01-01T00:00:00Z');
  fs.utimesSync(file, stamp, stamp);
  t.same(readDotEnv(file), { A: '1' });
  // Same size and mtime: the cached values are served (that is the cache).
  fs.writeFileSync(file, 'A=2\n');
  fs.utimesSync(file, stamp, stamp);
  t.same(readDotEnv(file), { A: '1' });
  // A new mtime is picked up on the next call.
  const later = new Date('2022-01-01T00:00:00Z');
  fs.utimesSync(file, later, later);
  t.same(readDotEnv(file), { A: '2' });
  const copy = readDotEnv(file);
  copy.A = 'mutated';
  t.same(readDotEnv(file), { A: '2' }, 'callers cannot corrupt the cache');
});

await t.test('child env priority: host, then provider config, then .env', async (t) => {
  const env = buildChildEnv(
    { PATH: '/bin', HOST_ONLY: 'h', SHARED: 'host', EMPTY_HOST: '', UNSET: undefined },
    { SHARED: 'provider', PROVIDER_ONLY: 'p', BOTH: 'provider', EMPTY_HOST: 'provider' },
    { SHARED: 'dotenv', BOTH: 'dotenv', DOTENV_ONLY: 'd', PATH: '/evil' },
  );
  t.same(env, { PATH: '/bin', HOST_ONLY: 'h', SHARED: 'host', EMPTY_HOST: '', PROVIDER_ONLY: 'p', BOTH: 'provider', DOTENV_ONLY: 'd' });
  t.notOk('UNSET' in env);
});

await t.test('the timeouts rule reads the same before and after defaults are written back (DESIGN.md §10)', async (t) => {
  const cases: [string, Record<string, unknown>, number][] = [
    ['untouched file', {}, 600],
    ['cli_timeout set, normal not', { cli_timeout: 900 }, 900],
    ['cli_timeout 600', { cli_timeout: 600 }, 600],
    ['normal set, cli_timeout not', { timeouts: { normal: 600 } }, 600],
    ['both set', { cli_timeout: 1800, timeouts: { normal: 300 } }, 300],
  ];
  for (const [name, file, normal] of cases) {
    const paths = homePaths(t.testdir({ config: { 'config.json': JSON.stringify(file) } }));
    t.equal(loadConfig(paths).config.timeouts.normal, normal, `${name}: first load`);
    t.equal(loadConfig(paths).config.timeouts.normal, normal, `${name}: after the write-back`);
  }
});
