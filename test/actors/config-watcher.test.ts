import t from 'tap';
import * as fs from 'node:fs';
import { join } from 'node:path';
import { assign, createActor, setup, type AnyEventObject } from 'xstate';
import { configWatcher, registryWatcher } from '../../actors/index.js';
import { homePaths } from '../../store/index.js';
import { until } from '../fixtures/until.js';

/** A parent that hosts one watcher and records what it is sent. */
function host(logic: typeof configWatcher | typeof registryWatcher, input: unknown) {
  const parent = setup({
    types: { context: {} as { got: AnyEventObject[] }, events: {} as AnyEventObject },
    actors: { watcher: logic },
  }).createMachine({
    context: { got: [] },
    invoke: { id: 'watcher', src: 'watcher', input: input as never },
    on: { 'file.changed': { actions: assign({ got: ({ context, event }) => [...context.got, event] }) } },
  });
  const actor = createActor(parent).start();
  return { actor, got: () => actor.getSnapshot().context.got };
}

const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

await t.test('configWatcher sends file.changed with the text and which directories exist', async (t) => {
  const dir = t.testdir({ config: { 'config.json': '{}' }, data: {} });
  const file = join(dir, 'config', 'config.json');
  const baseline = timers();
  const { actor, got } = host(configWatcher, { file, intervalMs: 10 });
  t.equal(timers(), baseline + 1, 'one polling timer');

  const text = JSON.stringify({ model: 'sonnet', additional_directories: [join(dir, 'data'), join(dir, 'gone')] });
  fs.writeFileSync(file, text);
  await until('first change', () => got().length === 1);
  t.same(got()[0], { type: 'file.changed', text, existingDirs: [join(dir, 'data')] });

  fs.writeFileSync(file, '{"model": ');
  await until('malformed edit', () => got().length === 2);
  t.same(got()[1], { type: 'file.changed', text: '{"model": ', existingDirs: [] }, 'malformed text is passed on for the machine to reject');

  // Replaced by rename (how atomic writers and many editors save).
  fs.writeFileSync(`${file}.tmp`, '{"model": "haiku"}');
  fs.renameSync(`${file}.tmp`, file);
  await until('renamed file', () => got().length === 3);
  t.equal(got()[2]!.text, '{"model": "haiku"}');

  actor.stop();
  t.equal(timers(), baseline, 'timer cleared on stop');
});

await t.test('configWatcher reports nothing while the file is missing, then its return', async (t) => {
  const dir = t.testdir({});
  const file = join(dir, 'config.json');
  const { actor, got } = host(configWatcher, { file, intervalMs: 10 });
  fs.writeFileSync(file, '{"model": "opus"}');
  await until('file created', () => got().length === 1);
  t.equal(got()[0]!.text, '{"model": "opus"}');
  actor.stop();
});

await t.test('registryWatcher follows whichever registry file exists, _secrets first', async (t) => {
  const paths = homePaths(t.testdir({ 'agents.json': '[]' }));
  const baseline = timers();
  const { actor, got } = host(registryWatcher, { paths, intervalMs: 10 });

  fs.writeFileSync(paths.legacyAgentsRegistry, '[{"name": "a", "telegram_token": "t"}]');
  await until('legacy change', () => got().length === 1);
  t.same(got()[0], { type: 'file.changed', text: '[{"name": "a", "telegram_token": "t"}]', file: paths.legacyAgentsRegistry });

  fs.mkdirSync(paths.secretsDir, { mode: 0o700 });
  fs.writeFileSync(paths.agentsRegistry, '[]');
  await until('new location', () => got().length === 2);
  t.same(got()[1], { type: 'file.changed', text: '[]', file: paths.agentsRegistry });

  actor.stop();
  t.equal(timers(), baseline, 'timer cleared on stop');
});
