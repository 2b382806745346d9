import t from 'tap';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { readProcStat } from '../../store/index.js';
import { exited, freePortHome, readEvents, startSvc, svc, until } from './cli-helpers.js';

await t.test('svc stop ends the daemon of this home cleanly and waits for it; not running is not an error', async (t) => {
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

await t.test('a second daemon on a taken port refuses to start with one line naming the port, its key and the holder', async (t) => {
  const probe = createServer();
  await new Promise<void>((r) => probe.listen({ host: '127.0.0.1', port: 0, exclusive: true }, r));
  const port = (probe.address() as AddressInfo).port;
  await new Promise<void>((r) => probe.close(() => r()));

  const homeA = join(t.testdir(), 'a');
  const homeB = join(t.testdir(), 'b');
  for (const home of [homeA, homeB]) {
    mkdirSync(join(home, 'config'), { recursive: true });
    writeFileSync(join(home, 'config', 'config.json'), JSON.stringify({ interagent_port: port }));
  }
  const first = startSvc(homeA);
  t.teardown(() => void first.kill('SIGKILL'));
  await until('the first daemon is ready', () => existsSync(join(homeA, 'events.db')) && readEvents(join(homeA, 'events.db')).some((e) => e.type === 'daemon.ready'));

  const second = svc(homeB, ['start']);
  t.equal(second.code, 1);
  const lines = second.stderr.trim().split('\n').filter((l) => l.startsWith('svc: '));
  t.same(lines.length, 1, second.stderr);
  t.match(lines[0], new RegExp(`cannot listen on 127\\.0\\.0\\.1:${port} \\(interagent_port in config\\.json\\): it is in use by pid ${first.pid} \\(`));
  t.notOk(existsSync(join(homeB, 'svc.pid')), 'the refused daemon released its home');

  t.equal(svc(homeA, ['stop']).code, 0);
  t.equal(await exited(first), 0, 'the first daemon never lost its port and stops cleanly');
});

await t.test('an old pid-only svc.pid naming a process that is not svc: stop and status leave it alone', async (t) => {
  const dir = join(t.testdir(), 'home');
  mkdirSync(dir, { recursive: true });
  const other = spawn('sleep', ['30'], { stdio: 'ignore' });
  t.teardown(() => void other.kill('SIGKILL'));
  await until('sleep runs', () => other.pid !== undefined);
  // Written after the process started, as an older svc wrote it: only the pid.
  writeFileSync(join(dir, 'svc.pid'), `${other.pid}\n`);
  const stop = svc(dir, ['stop']);
  t.equal(stop.code, 0);
  t.match(stop.stdout, /svc is not running/);
  t.equal(svc(dir, ['status']).code, 3);
  // Not reaped yet either way: a signalled sleep would show as a zombie (Z), a live one is sleeping (S).
  t.equal(readProcStat(other.pid!)?.state, 'S', 'the other process was not signalled');
});
