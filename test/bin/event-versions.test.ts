// Versioned envelopes against a log the daemon wrote before versions existed
// (test/fixtures/old-logs/events-v1.db: event log schema 1, `connection.authenticated` payload v1).
import t from 'tap';
import { copyFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { PROJECTIONS, SqliteEventLog } from '../../store/index.js';
import { svc } from './cli-helpers.js';

const OLD_LOG = fileURLToPath(new URL('../fixtures/old-logs/events-v1.db', import.meta.url));

function homeWithOldLog(dir: string, name: string): { home: string; db: string } {
  const home = join(dir, name);
  mkdirSync(home, { recursive: true });
  const db = join(home, 'events.db');
  copyFileSync(OLD_LOG, db);
  return { home, db };
}

await t.test('replay --check reads an old log by upcasting its events', async (t) => {
  const { home, db } = homeWithOldLog(t.testdir(), 'upcast');
  const r = svc(home, ['events', 'replay', '--check']);
  t.equal(r.code, 0, r.stdout + r.stderr);
  t.match(r.stdout, /ok: \d+ read models match a replay of 4 events/);
  t.match(r.stdout, /note: read model tasks is not in this log yet/, 'a read model this build added is said to be unbuilt, not a divergence');

  const log = SqliteEventLog.open(db, { readonly: true });
  t.teardown(() => log.close());
  const authenticated = log.read({ types: ['connection.authenticated'] });
  t.same(
    authenticated.map((e) => ({ seq: e.seq, v: e.v, data: e.data })),
    [
      { seq: 1, v: 2, data: { surface: 'direct', chat_id: 7, channel_id: null } },
      { seq: 2, v: 2, data: { surface: 'direct', chat_id: 7, channel_id: 12 } },
    ],
    'v1 payloads come back in the v2 shape',
  );
  t.same(log.read({ types: ['connection.closed'] }).map((e) => 'v' in e), [false, false], 'a type still at version 1 carries no version');
});

await t.test('the first writable open brings the old file forward; new facts are stored with their version', async (t) => {
  const { db } = homeWithOldLog(t.testdir(), 'migrate');
  const log = SqliteEventLog.open(db, { projections: PROJECTIONS });
  const [fresh] = log.append([{ stream: 'conn:aa', type: 'connection.authenticated', data: { surface: 'admin', role: 'admin' } }], '2026-11-21T10:00:00.000Z');
  t.equal(fresh!.v, 2);
  log.close();
  const raw = new Database(db, { readonly: true });
  t.teardown(() => raw.close());
  t.equal((raw.prepare(`SELECT value FROM meta WHERE key = 'schema_version'`).get() as { value: string }).value, '2');
  t.same(
    raw.prepare(`SELECT seq, v FROM events ORDER BY seq`).all(),
    [
      { seq: 1, v: null },
      { seq: 2, v: null },
      { seq: 3, v: null },
      { seq: 4, v: null },
      { seq: 5, v: 2 },
    ],
    'old rows keep no version (read as 1); the new one says 2',
  );
});

await t.test('replay --check names exactly the event it cannot read', async (t) => {
  const { home, db } = homeWithOldLog(t.testdir(), 'too-new');
  SqliteEventLog.open(db, { projections: PROJECTIONS }).close();
  const raw = new Database(db);
  raw.prepare(`UPDATE events SET v = 9 WHERE seq = 2`).run();
  raw.close();
  const r = svc(home, ['events', 'replay', '--check']);
  t.equal(r.code, 1, r.stdout + r.stderr);
  t.match(r.stdout, /^unreadable: conn:0b1c2d3e4f5a6b7c seq 2: connection\.authenticated version 9 was written by a newer svc \(this one reads connection\.authenticated up to version 2\)/m);
  t.notMatch(r.stdout, /^ok:/m, 'nothing is reported as matching');

  const plain = svc(home, ['events', 'replay']);
  t.equal(plain.code, 1);
  t.match(plain.stdout, /unreadable: conn:0b1c2d3e4f5a6b7c seq 2: connection\.authenticated version 9/);
});
