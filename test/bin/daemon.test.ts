import t from 'tap';
import { firstValueFrom } from 'rxjs';
import { existsSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { ofType } from '../../bus/index.js';
import { homePaths } from '../../store/index.js';
import { startDaemon } from '../../bin/daemon.js';
import { tempHome } from '../fixtures/temp-home.js';
import { until } from './cli-helpers.js';
import { type EventType } from '../../schemas/index.js';

const editJson = (file: string, edit: (c: Record<string, unknown>) => void) => {
  const c = JSON.parse(readFileSync(file, 'utf8'));
  edit(c);
  writeFileSync(file, JSON.stringify(c, null, 2));
};

await t.test('hot reload: applied, restart-required recorded, invalid edit keeps the last good config', async (t) => {
  const home = tempHome(t);
  const paths = homePaths(join(home.dir, 'home'));
  const d = await startDaemon({ paths, watchIntervalMs: 20, logToStderr: false, internalPort: 0 });
  home.beforeRemove(() => d.stop('test'));
  t.equal(d.config().model, 'opus');

  let next = firstValueFrom(d.bus.events$.pipe(ofType('config.reloaded', 'config.rejected')));
  editJson(paths.configFile, (c) => {
    c.model = 'sonnet';
    c.api = { enabled: true, port: 9999 };
  });
  let e = await next;
  t.equal(e.type, 'config.reloaded');
  t.same(e.data, { hot_applied: ['model'], restart_required: ['api'] });
  t.equal(d.config().model, 'sonnet', 'a hot field applies at once');
  t.equal(d.config().api.port, 8741, 'a restart-required field waits for a restart');

  next = firstValueFrom(d.bus.events$.pipe(ofType('config.reloaded', 'config.rejected')));
  editJson(paths.configFile, (c) => {
    c.model = 'haiku';
    c.permission_mode = 'yolo';
  });
  e = await next;
  t.equal(e.type, 'config.rejected');
  t.match(('errors' in e.data ? e.data.errors : []).join('\n'), /permission_mode.*yolo/);
  t.equal(d.config().model, 'sonnet', 'an invalid edit changes nothing');

  next = firstValueFrom(d.bus.events$.pipe(ofType('config.reloaded', 'config.rejected')));
  writeFileSync(paths.configFile, '{"model": "hai');
  e = await next;
  t.equal(e.type, 'config.rejected', 'a file truncated mid-write is rejected');
  t.equal(d.config().model, 'sonnet');
  t.match(readFileSync(paths.configFile, 'utf8'), /^\{"model": "hai$/, 'and never rewritten');
});

await t.test('unknown config keys and rejected edits are warnings in svc.log, not only events', async (t) => {
  const home = tempHome(t);
  const paths = homePaths(join(home.dir, 'home'));
  mkdirSync(paths.configDir, { recursive: true });
  writeFileSync(paths.configFile, JSON.stringify({ modle: 'sonnet', api: { prot: 9000 }, interagent_port: 0 }));
  const d = await startDaemon({ paths, watchIntervalMs: 20, logToStderr: false });
  home.beforeRemove(() => d.stop('test'));
  const logFile = join(paths.logsDir, 'svc.log');
  const log = () => (existsSync(logFile) ? readFileSync(logFile, 'utf8') : '');
  await until('the unknown-key warning', () => /WARN .*unknown keys modle, api\.prot/.test(log()));
  t.equal(d.config().model, 'opus', 'an unknown key changes nothing');

  let next = firstValueFrom(d.bus.events$.pipe(ofType('config.reloaded', 'config.rejected')));
  editJson(paths.configFile, (c) => {
    c.permission_mode = 'yolo';
  });
  t.equal((await next).type, 'config.rejected');
  await until('the rejected-edit warning', () => /WARN .*edit rejected, the last good configuration stays in force: .*permission_mode/.test(log()));

  // Fixing the edit and adding a typo: the typo alone is news, reported once.
  next = firstValueFrom(d.bus.events$.pipe(ofType('config.reloaded', 'config.rejected')));
  editJson(paths.configFile, (c) => {
    c.permission_mode = 'default';
    c.heartbeat = { ...(c.heartbeat as object), intervall: 5 };
  });
  const e = await next;
  t.equal(e.type, 'config.reloaded');
  t.same((e.data as { unknown_keys?: string[] }).unknown_keys, ['modle', 'api.prot', 'heartbeat.intervall']);
  await until('the new unknown key', () => /heartbeat\.intervall/.test(log()));
});

await t.test('registry watcher reports added, changed and removed sub-agents', async (t) => {
  const home = tempHome(t);
  const paths = homePaths(join(home.dir, 'home'));
  const d = await startDaemon({ paths, watchIntervalMs: 20, logToStderr: false, internalPort: 0 });
  home.beforeRemove(() => d.stop('test'));
  mkdirSync(paths.secretsDir, { recursive: true });
  const entry = { name: 'research', telegram_token: '1:aaa', model: 'sonnet' };

  const nextOf = (type: EventType) => firstValueFrom(d.bus.events$.pipe(ofType(type)));
  let next = nextOf('registry.agent_added');
  writeFileSync(paths.agentsRegistry, JSON.stringify([entry]));
  t.same((await next).data, { name: 'research' });

  next = nextOf('registry.agent_changed');
  writeFileSync(paths.agentsRegistry, JSON.stringify([{ ...entry, telegram_token: '1:bbb' }]));
  t.same((await next).data, { name: 'research', restart: true, fields: ['telegram_token'] });

  next = nextOf('registry.rejected');
  writeFileSync(paths.agentsRegistry, JSON.stringify([{ name: 'Bad Name!' }]));
  t.match(JSON.stringify((await next).data), /name/);

  next = nextOf('registry.agent_removed');
  writeFileSync(paths.agentsRegistry, '[]');
  t.same((await next).data, { name: 'research' });
});

await t.test('stop flushes the last facts and releases the home', async (t) => {
  const paths = homePaths(join(tempHome(t).dir, 'home'));
  const d = await startDaemon({ paths, logToStderr: false, internalPort: 0 });
  await t.rejects(startDaemon({ paths, logToStderr: false, internalPort: 0 }), { code: 'daemon-running' });
  await d.stop('test');
  const again = await startDaemon({ paths, logToStderr: false, internalPort: 0 });
  const types = again.log.read({ stream: 'daemon' }).map((e) => e.type);
  t.same(types.slice(0, 5), ['daemon.started', 'daemon.ready', 'daemon.stopping', 'daemon.stopped', 'daemon.started']);
  t.notOk(types.includes('daemon.recovered'), 'a clean stop is not a crash');
  await again.stop('test');
  t.match(readFileSync(join(paths.logsDir, 'svc.log'), 'utf8'), /stopping \(test\)/, 'the log file records the run');
});

await t.test('a home whose event log went missing or empty is refused, not started afresh', async (t) => {
  const paths = homePaths(join(tempHome(t).dir, 'home'));
  const fresh = await startDaemon({ paths, logToStderr: false, internalPort: 0 });
  await fresh.stop('test');
  t.ok(existsSync(paths.eventsHistoryMarker), 'the first start marks the home as having history');

  writeFileSync(paths.eventsDb, '');
  for (const suffix of ['-wal', '-shm']) rmSync(paths.eventsDb + suffix, { force: true });
  await t.rejects(startDaemon({ paths, logToStderr: false, internalPort: 0 }), {
    code: 'event-log-lost',
    message: new RegExp(`events\\.db is empty \\(0 bytes\\), but this home has an event history .*remove ${paths.eventsHistoryMarker.replace(/\./g, '\\.')}`),
  });
  rmSync(paths.eventsDb);
  await t.rejects(startDaemon({ paths, logToStderr: false, internalPort: 0 }), { code: 'event-log-lost', message: /events\.db is missing/ });
  t.notOk(existsSync(paths.eventsDb), 'a refused start creates no empty log');
  t.notOk(existsSync(paths.pidFile), 'and leaves the home unlocked');

  rmSync(paths.eventsHistoryMarker);
  const afresh = await startDaemon({ paths, logToStderr: false, internalPort: 0 });
  t.equal(afresh.log.read({ stream: 'daemon' })[0]?.type, 'daemon.started', 'removing the marker starts a new history on purpose');
  await afresh.stop('test');
});

await t.test('svc api enable before the first start is not mistaken for history', async (t) => {
  const paths = homePaths(join(tempHome(t).dir, 'home'));
  mkdirSync(paths.configDir, { recursive: true });
  writeFileSync(paths.configFile, JSON.stringify({ api: { enabled: false } }));
  const d = await startDaemon({ paths, logToStderr: false, internalPort: 0 });
  await d.stop('test');
  t.ok(existsSync(paths.eventsDb));
});

await t.test('a start that fails late (the API port is taken) stops what it started and leaves a clean record', async (t) => {
  const paths = homePaths(join(tempHome(t).dir, 'home'));
  const first = await startDaemon({ paths, logToStderr: false, internalPort: 0 });
  await first.stop('test');
  const taken = createServer();
  await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
  t.teardown(() => taken.close());
  const port = (taken.address() as AddressInfo).port;
  editJson(paths.configFile, (c) => {
    c.api = { enabled: true, host: '127.0.0.1', port, token: 'test-token-0123456789abcdef' };
  });
  await t.rejects(startDaemon({ paths, logToStderr: false, internalPort: 0 }), { code: 'listen-failed' });
  t.notOk(existsSync(paths.pidFile), 'the home is unlocked');

  editJson(paths.configFile, (c) => {
    c.api = { enabled: false };
  });
  const again = await startDaemon({ paths, logToStderr: false, internalPort: 0 });
  const daemonFacts = again.log.read({ stream: 'daemon' }).map((e) => ({ type: e.type, reason: (e.data as { reason?: string }).reason }));
  t.same(
    daemonFacts.map((f) => f.type),
    ['daemon.started', 'daemon.ready', 'daemon.stopping', 'daemon.stopped', 'daemon.started', 'daemon.stopping', 'daemon.stopped', 'daemon.started', 'daemon.ready'],
    'the failed start is recorded as one that stopped',
  );
  t.equal(daemonFacts[5]!.reason, 'start failed');
  t.notOk(daemonFacts.some((f) => f.type === 'daemon.recovered'), 'not as a crash');
  await again.stop('test');
});
