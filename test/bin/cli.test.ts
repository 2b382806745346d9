import t from 'tap';
import Database from 'better-sqlite3';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { exited, freePortHome, loadGolden, readEvents, startSvc, svc, until } from './cli-helpers.js';

await t.test('first start: home, config and an event log that svc events shows; SIGTERM stops cleanly', async (t) => {
  const home = join(t.testdir(), 'home');
  const daemon = startSvc(home);
  const db = join(home, 'events.db');
  await until('daemon.ready', () => readEvents(db).some((e) => e.type === 'daemon.ready'));
  t.equal(statSync(home).mode & 0o777, 0o700, 'home is private');
  t.equal(statSync(join(home, 'config', 'config.json')).mode & 0o777, 0o600);
  t.ok(existsSync(join(home, 'svc.pid')));

  const tail = svc(home, ['events', 'tail']);
  t.equal(tail.code, 0, tail.stderr);
  t.match(tail.stdout, /daemon\.started/);
  t.match(tail.stdout, /config\.loaded .*"created":true/);

  const second = svc(home, ['start']);
  t.equal(second.code, 1, 'a second daemon on the same home refuses to start');
  t.match(second.stderr, /another svc daemon \(pid \d+\) is already running/);

  daemon.kill('SIGTERM');
  t.equal(await exited(daemon), 0);
  const types = readEvents(db, 'daemon').map((e) => e.type);
  t.same(types, ['daemon.started', 'daemon.ready', 'daemon.stopping', 'daemon.stopped']);
  t.notOk(existsSync(join(home, 'svc.pid')), 'the pid lock is released');
  t.match(daemon.output(), /svc \d+\.\d+\.\d+ running/);

  const json = svc(home, ['events', 'show', 'daemon', '--json']);
  t.equal(json.code, 0);
  t.same(json.stdout.trim().split('\n').map((l) => JSON.parse(l).type), types);
  t.equal(svc(home, ['events', 'replay', '--check']).code, 0);
  const replay = svc(home, ['events', 'replay']);
  t.equal(replay.code, 0, replay.stderr);
  t.match(replay.stdout, /rebuilt \d+ read models from \d+ events/);
});

await t.test('a daemon killed with SIGKILL is recorded as recovered on the next start', async (t) => {
  const home = freePortHome(join(t.testdir(), 'home'));
  const db = join(home, 'events.db');
  const first = startSvc(home);
  await until('ready', () => readEvents(db).some((e) => e.type === 'daemon.ready'));
  first.kill('SIGKILL');
  await exited(first);
  t.ok(existsSync(join(home, 'svc.pid')), 'the dead daemon left its pid file');

  const second = startSvc(home);
  await until('second ready', () => readEvents(db, 'daemon').filter((e) => e.type === 'daemon.ready').length === 2);
  const recovered = readEvents(db, 'daemon').find((e) => e.type === 'daemon.recovered');
  t.equal(recovered?.data.previous_pid, first.pid, 'the stale lock was taken over and the crash recorded');
  second.kill('SIGINT');
  t.equal(await exited(second), 0);
  const runs = new Database(db, { readonly: true }).prepare('SELECT pid, after_crash, stop_reason FROM daemon_runs ORDER BY started_seq').all();
  t.same(runs, [
    { pid: first.pid, after_crash: 0, stop_reason: null },
    { pid: second.pid, after_crash: 1, stop_reason: 'SIGINT' },
  ]);
});

await t.test('bad config at start: one line naming file, field, value and what is allowed; nothing rewritten', async (t) => {
  const home = t.testdir({ config: { 'config.json': JSON.stringify({ permission_mode: 'yolo' }) } });
  const before = readFileSync(join(home, 'config', 'config.json'), 'utf8');
  const r = svc(home, ['start']);
  t.equal(r.code, 1);
  t.match(r.stderr, /config\.json.*permission_mode.*"yolo".*acceptEdits/);
  t.equal(readFileSync(join(home, 'config', 'config.json'), 'utf8'), before);
  t.notOk(existsSync(join(home, 'svc.pid')), 'a failed start releases the lock');

  for (const [name, text, pattern] of [
    ['truncated mid-write', '{"model": "opus", "timeouts": {"normal": 6', /not valid JSON/],
    ['wrong type', JSON.stringify({ idle_timeout_minutes: 'soon' }), /idle_timeout_minutes/],
    ['relative directory', JSON.stringify({ additional_directories: ['src'] }), /additional_directories.*absolute/],
    ['missing directory', JSON.stringify({ additional_directories: ['/nonexistent/dir'] }), /additional_directories.*\/nonexistent\/dir/],
    ['unknown role mode', JSON.stringify({ permission_mode_by_role: { admin: 'everything' } }), /permission_mode_by_role/],
  ] as const) {
    const h = t.testdir({ config: { 'config.json': text } });
    const v = svc(h, ['config', 'validate']);
    t.equal(v.code, 1, `${name}: validate fails`);
    t.match(v.stderr, pattern, `${name}: validate says why`);
    const s = svc(h, ['start']);
    t.equal(s.code, 1, `${name}: start refuses`);
    t.match(s.stderr, pattern, `${name}: start says why`);
    t.equal(readFileSync(join(h, 'config', 'config.json'), 'utf8'), text, `${name}: file untouched`);
  }
});

await t.test('a corrupt event log is refused, named and left untouched', async (t) => {
  const home = t.testdir({ 'events.db': 'this is not a database, it is a text file '.repeat(200) });
  const before = readFileSync(join(home, 'events.db'));
  const r = svc(home, ['start']);
  t.equal(r.code, 1);
  t.match(r.stderr, /events\.db/);
  t.same(readFileSync(join(home, 'events.db')), before);
  t.equal(svc(home, ['events', 'tail']).code, 1);
});

await t.test('config show masks secrets; api enable writes a token', async (t) => {
  const home = t.testdir({ config: { 'config.json': JSON.stringify({ telegram_token: '123:secret', webhooks: { token: 'hook-secret' } }) } });
  const show = svc(home, ['config', 'show']);
  t.equal(show.code, 0, show.stderr);
  const shown = JSON.parse(show.stdout);
  t.equal(shown.telegram_token, '***');
  t.equal(shown.webhooks.token, '***');
  t.equal(shown.heartbeat.ack_token, 'HEARTBEAT_OK', 'a marker is not a secret');
  t.notMatch(show.stdout, /123:secret|hook-secret/);

  const api = svc(home, ['api', 'enable']);
  t.equal(api.code, 0, api.stderr);
  const cfg = JSON.parse(readFileSync(join(home, 'config', 'config.json'), 'utf8'));
  t.equal(cfg.api.enabled, true);
  t.ok(cfg.api.token.length >= 32);
  t.match(api.stdout, cfg.api.token);
  t.equal(cfg.telegram_token, '123:secret', 'the rest of the file is kept');
  t.equal(statSync(join(home, 'config', 'config.json')).mode & 0o777, 0o600);
  const again = svc(home, ['api', 'enable']);
  t.equal(JSON.parse(readFileSync(join(home, 'config', 'config.json'), 'utf8')).api.token, cfg.api.token, 'enabling twice keeps the token');
  t.equal(again.code, 0);
  t.equal(cfg.api.host, '127.0.0.1', 'api enable binds loopback by default');
  t.match(api.stdout, /listening on 127\.0\.0\.1/);

  const pub = svc(home, ['api', 'enable', '--public']);
  t.equal(pub.code, 0, pub.stderr);
  t.match(JSON.parse(readFileSync(join(home, 'config', 'config.json'), 'utf8')).api, { host: '0.0.0.0', allow_public: true });
  t.equal(svc(home, ['api', 'enable', '--host', '192.168.1.4']).code, 0);
  t.equal(JSON.parse(readFileSync(join(home, 'config', 'config.json'), 'utf8')).api.host, '192.168.1.4');

  const before = readFileSync(join(home, 'config', 'config.json'), 'utf8');
  for (const bad of [['--host', '1.2.3.4', '--public'], ['--host', 'a b;rm'], ['--host'], ['extra']]) {
    const r = svc(home, ['api', 'enable', ...bad]);
    t.equal(r.code, 2, `refused: ${bad.join(' ')}`);
    t.match(r.stderr, /usage: svc api enable/);
  }
  t.equal(readFileSync(join(home, 'config', 'config.json'), 'utf8'), before, 'a refused api enable changes nothing');
});

await t.test('golden event logs replay to the read models the live database holds', async (t) => {
  const home = t.testdir();
  const events = loadGolden('daemon-lifecycle.ndjson', join(home, 'events.db'));
  const ok = svc(home, ['events', 'replay', '--check']);
  t.equal(ok.code, 0, ok.stdout + ok.stderr);
  t.match(ok.stdout, new RegExp(`match a replay of ${events.length} events`));

  const show = svc(home, ['events', 'show', 'registry']);
  t.equal(show.stdout.trim().split('\n').length, 3);
  const since = svc(home, ['events', 'tail', '--since', '2026-11-22T00:00:00Z', '--type', 'daemon.recovered', '--json']);
  t.same(since.stdout.trim().split('\n').map((l) => JSON.parse(l).seq), [16]);
  const prefixed = svc(home, ['events', 'tail', '--stream', 'config', '-n', '2']);
  t.same(prefixed.stdout.trim().split('\n').map((l) => l.trim().split(/\s+/)[0]), ['11', '17']);

  // A read model that drifted from the log is caught, with the row named.
  const db = new Database(join(home, 'events.db'));
  db.prepare('UPDATE daemon_runs SET stop_reason = ? WHERE pid = ?').run('tampered', 4100);
  db.prepare('DELETE FROM stream_heads WHERE stream = ?').run('registry');
  db.close();
  const bad = svc(home, ['events', 'replay', '--check']);
  t.equal(bad.code, 1);
  t.match(bad.stdout, /divergence/);
  t.match(bad.stdout, /daemon_runs.*1 row/);
  t.match(bad.stdout, /tampered/);
  t.match(bad.stdout, /stream_heads[^\n]*\n\s+missing row stream="registry"/);
  t.equal(svc(home, ['events', 'replay']).code, 0, 'a plain replay rebuilds them');
  t.equal(svc(home, ['events', 'replay', '--check']).code, 0, 'and they match again');
});

await t.test('usage errors: one line, non-zero exit; --help and --version', async (t) => {
  const home = t.testdir();
  const version = svc(home, ['--version']);
  t.match(version.stdout, /^\d+\.\d+\.\d+\n$/);
  t.match(svc(home, ['--help']).stdout, /events \.\.\./);
  for (const args of [['events', '--help'], ['config', '--help'], ['api', '--help'], ['start', '--help'], ['events', 'tail', '--help']]) {
    const r = svc(home, args);
    t.equal(r.code, 0, args.join(' '));
    t.match(r.stdout, /usage/, args.join(' '));
  }
  for (const [args, pattern] of [
    [['frobnicate'], /unknown command 'frobnicate'/],
    [['events', 'explode'], /unknown events subcommand/],
    [['events', 'tail', '--bogus'], /Unknown option '--bogus'/],
    [['events', 'tail', '-n', 'many'], /-n many/],
    [['events', 'tail', '--since', 'yesterday-ish'], /--since/],
    [['events', 'show'], /exactly one stream/],
    [['config', 'sideways'], /unknown config subcommand/],
    [['api', 'disable'], /unknown api subcommand/],
    [['--home'], /--home needs a directory/],
  ] as const) {
    const r = svc(home, [...args]);
    t.equal(r.code, 2, args.join(' '));
    t.match(r.stderr, pattern, args.join(' '));
    t.equal(r.stderr.trim().split('\n')[0]!.startsWith('svc: '), true);
  }
  const noLog = svc(home, ['events', 'tail']);
  t.equal(noLog.code, 1);
  t.match(noLog.stderr, /no event log .*svc start/);
  const missingCfg = svc(home, ['config', 'validate']);
  t.equal(missingCfg.code, 1);
  t.match(missingCfg.stderr, /does not exist/);
});

await t.test('events tail --follow prints events appended by the running daemon', async (t) => {
  const home = freePortHome(join(t.testdir(), 'home'));
  const db = join(home, 'events.db');
  const daemon = startSvc(home);
  await until('ready', () => readEvents(db).some((e) => e.type === 'daemon.ready'));
  const follow = startSvc(home, ['events', 'tail', '--follow', '--type', 'daemon.stopped']);
  // Let the follower print its (empty) history before the event it must see arrives.
  await until('follower running', () => follow.pid && existsSync(db));
  daemon.kill('SIGTERM');
  await exited(daemon);
  await until('followed event', () => /daemon\.stopped/.test(follow.output()));
  follow.kill('SIGINT');
  t.equal(await exited(follow), 0);
  writeFileSync(join(home, 'noop'), '');
});
