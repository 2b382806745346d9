import t from 'tap';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { exited, freePortHome, readEvents, startSvc, svc, until } from './cli-helpers.js';

t.test('svc stop ends the daemon of this home cleanly and waits for it; not running is not an error', async (t) => {
  const home = freePortHome(join(t.testdir(), 'home'));
  const notYet = svc(home, ['stop']);
  t.equal(notYet.code, 0);
  t.match(notYet.stdout, /svc is not running on /);

  const daemon = startSvc(home);
  const db = join(home, 'events.db');
  await until('daemon.ready', () => existsSync(db) && readEvents(db).some((e) => e.type === 'daemon.ready'));
  const r = svc(home, ['stop']);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, new RegExp(`stopped svc \\(pid ${daemon.pid}\\)`));
  t.notOk(existsSync(join(home, 'svc.pid')), 'by the time svc stop returns, the pid lock is released');
  t.equal(await exited(daemon), 0, 'a clean exit');
  t.same(readEvents(db, 'daemon').slice(-2).map((e) => [e.type, e.data.reason]), [['daemon.stopping', 'SIGTERM'], ['daemon.stopped', 'SIGTERM']]);

  for (const bad of [['--timeout', '0'], ['--timeout', 'soon'], ['now']]) {
    const b = svc(home, ['stop', ...bad]);
    t.equal(b.code, 2, bad.join(' '));
    t.match(b.stderr, /usage: svc stop/);
  }
});
