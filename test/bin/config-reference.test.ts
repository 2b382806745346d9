import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { FIELD_NOTES, NOT_YET_USED, configFields, configReference, notYetUsed, registryFields } from '../../bin/config-reference.js';
import { AGENT_CONFIG_FIELDS, HOT_RELOADABLE_FIELDS, RESTART_REQUIRED_FIELDS, defaultConfig } from '../../schemas/index.js';
import { svc } from './cli-helpers.js';

const DOC = fileURLToPath(new URL('../../docs/configuration.md', import.meta.url));

await t.test('every field of config.json and of a registry entry has a note, and no note names a field that is gone', async (t) => {
  const paths = [...configFields(), ...registryFields()].map((r) => r.path);
  t.same(paths.filter((p) => !(p in FIELD_NOTES)), [], 'fields without a note (add one to FIELD_NOTES in bin/config-reference.ts)');
  t.same(Object.keys(FIELD_NOTES).filter((p) => !paths.includes(p)), [], 'notes for fields no schema has');
  t.equal(new Set(paths).size, paths.length, 'each path once');
});

await t.test('docs/configuration.md is exactly what the generator prints (run npm run docs after a schema change)', async (t) => {
  t.ok(existsSync(DOC), 'docs/configuration.md exists');
  t.equal(readFileSync(DOC, 'utf8'), configReference());
});

await t.test('svc config reference prints the reference without reading or creating a home', async (t) => {
  const home = join(t.testdir(), 'never-created');
  const r = svc(home, ['config', 'reference']);
  t.equal(r.code, 0, r.stderr);
  t.equal(r.stdout, configReference());
  t.notOk(existsSync(home), 'no home was created');
  const help = svc(home, ['config', '--help']);
  t.match(help.stdout, /svc config reference/);
});

await t.test('the rows come from the schemas: every top-level field, its reload class, and the defaults a parse of {} gives', async (t) => {
  const rows = configFields();
  const byPath = new Map(rows.map((r) => [r.path, r]));
  const tops = new Set(rows.map((r) => r.path.split('.')[0]!.replace('[]', '')));
  t.same(AGENT_CONFIG_FIELDS.filter((f) => !tops.has(f)), [], 'every AgentConfig field is documented');
  for (const r of rows) {
    const top = r.path.split('.')[0]!;
    t.equal(r.reload, (HOT_RELOADABLE_FIELDS as readonly string[]).includes(top) ? 'hot' : 'restart', `${r.path} reload`);
  }
  for (const f of RESTART_REQUIRED_FIELDS) {
    for (const r of rows.filter((x) => x.path === f || x.path.startsWith(`${f}.`))) t.equal(r.reload, 'restart', `${r.path} needs a restart`);
  }
  // Defaults of plain fields are the parsed default config, runtime rules included.
  const config = defaultConfig() as unknown as Record<string, unknown>;
  for (const r of rows) {
    if (r.path.includes('[]') || !r.default.startsWith('`') || r.default.includes('several lines')) continue;
    const value = r.path.split('.').reduce<unknown>((o, k) => (o as Record<string, unknown>)[k], config);
    t.same(JSON.parse(r.default.slice(1, -1)), value, `${r.path} default`);
  }
  t.equal(byPath.get('timeouts.normal')?.default, '`600`', 'an untouched config gives foreground turns 600 s');
  t.equal(byPath.get('cli_timeout')?.default, '`1800`');
  t.equal(byPath.get('heartbeat.group_targets[].chat_id')?.default, 'required', 'list items: the schema says what is required');
  t.match(byPath.get('permission_mode')?.type, /`bypassPermissions`/, 'picklist options are the allowed values');
  t.match(byPath.get('max_turns')?.type, /or null$/, 'nullable fields say so');
});

await t.test('registry defaults: inherited, forced or none, as the effective-config merge decides', async (t) => {
  const rows = new Map(registryFields().map((r) => [r.path, r.default]));
  t.equal(rows.get('agents[].name'), 'required');
  t.equal(rows.get('agents[].model'), "main config's");
  t.equal(rows.get('agents[].additional_directories'), '`[]`', 'main\'s extra directories are not inherited');
  t.equal(rows.get('agents[].api'), '`{"enabled":false}`', 'no api block: the agent runs no API');
  t.equal(rows.get('agents[].interagent_token'), 'none');
});

await t.test('every field marked as not used yet names a field or block that exists, and marks what it names', async (t) => {
  const paths = configFields().map((r) => r.path);
  t.same(NOT_YET_USED.filter((p) => !paths.some((x) => x === p || x.startsWith(`${p}.`))), [], 'entries naming no field');
  t.ok(notYetUsed('docker.enabled'), 'a block marks its nested fields');
  t.notOk(notYetUsed('matrix.homeserver'), 'the Matrix transport reads its block');
  t.notOk(notYetUsed('memory.enabled'), 'a block listed by field marks only those fields');
  t.notOk(notYetUsed('transcription.model'));
  t.match(configReference(), /\| `docker\.enabled` \|[^\n]*\*Not used by this version yet\.\*/);
});
