import t from 'tap';
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readProcStat } from '../../store/index.js';
import { SVC, exited, freePortHome, startSvc, svc, until } from './cli-helpers.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

await t.test('svc start says where its files are, what it listens on, which transports run and what to do next', async (t) => {
  const dir = freePortHome(join(t.testdir(), 'home'), { api: { enabled: true, host: '127.0.0.1', port: 0, token: 'tok-0123456789abcdef0123' } });
  const daemon = startSvc(dir);
  await until('the banner', () => /\n {2}next {8}/.test(daemon.output()));
  const out = daemon.output();
  t.match(out, new RegExp(`^svc \\d+\\.\\d+\\.\\d+ starting on ${dir}\\n`), 'the first line comes before anything else');
  t.match(out, new RegExp(`\\n {2}home {8}${dir}\\n`));
  t.match(out, new RegExp(`\\n {2}config {6}${dir}/config/config\\.json\\n`), 'an existing config is not announced as created');
  t.match(out, /\n {2}listening {3}internal API {2}127\.0\.0\.1:\d+\n {14}direct API {4}127\.0\.0\.1:\d+\n/);
  t.match(out, /\n {2}transports {2}telegram off: no telegram_token in config.json\n/);
  t.match(out, /next {8}connect a client to ws:\/\/127\.0\.0\.1:\d+\/ws with api\.token/);
  const apiPort = /direct API {4}127\.0\.0\.1:(\d+)/.exec(out)![1];
  t.match(out, new RegExp(`\\n {2}panel {7}(not built: npm run build[^\\n]*\\n {14})?http://127\\.0\\.0\\.1:${apiPort}/\\n`), 'the panel row: served on the API port');
  t.notMatch(out, /\u001b\[/, 'no terminal colour codes: journald gets plain text');
  daemon.kill('SIGTERM');
  t.equal(await exited(daemon), 0);
});

await t.test('SIGTERM to `npm start` stops the daemon it launched: no svc process is left behind', async (t) => {
  const dir = freePortHome(join(t.testdir(), 'home'), {});
  const npm = spawn('npm', ['start'], { cwd: ROOT, env: { ...process.env, SVC_HOME: dir }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  npm.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const pid = Number((await until('the daemon runs', () => /svc \S+ running \(pid (\d+)\)/.exec(out)))[1]);
  t.teardown(() => {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone, as it should be
    }
  });
  npm.kill('SIGTERM');
  await exited(npm);
  await until('the daemon has exited', () => {
    const stat = readProcStat(pid);
    return stat === null || stat.state === 'Z';
  });
  t.pass(`daemon pid ${pid} ended with its launcher`);
});

await t.test('svc status: pid, uptime, version and listeners while it runs (exit 0); how the last run ended once stopped (exit 3)', async (t) => {
  const dir = freePortHome(join(t.testdir(), 'home'), {});
  const before = svc(dir, ['status']);
  t.equal(before.code, 3);
  t.match(before.stdout, /svc is not running on .*\n {2}no run recorded yet/);

  const daemon = startSvc(dir);
  await until('the banner', () => /\n {2}next {8}/.test(daemon.output()));
  const port = Number(/internal API {2}127\.0\.0\.1:(\d+)/.exec(daemon.output())![1]);
  const r = svc(dir, ['status']);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, new RegExp(`svc is running on ${dir} \\(pid ${daemon.pid}, up \\d+s, version \\d+\\.\\d+\\.\\d+\\)`));
  t.match(r.stdout, new RegExp(`listening {3}internal API {2}127\\.0\\.0\\.1:${port}`));
  t.match(r.stdout, /agents {6}main\n {2}turns {7}none running\n {2}last error {2}none/);
  const json = JSON.parse(svc(dir, ['status', '--json']).stdout);
  t.match(json, { running: true, pid: daemon.pid, uptime_s: Number, run: { agents: ['main'], listeners: [{ surface: 'internal API', port }] } });

  daemon.kill('SIGTERM');
  t.equal(await exited(daemon), 0);
  const after = svc(dir, ['status']);
  t.equal(after.code, 3);
  t.match(after.stdout, new RegExp(`svc is not running on .*\\nlast run: pid ${daemon.pid}, .* stopped \\S+ \\(SIGTERM\\)`));
  for (const bad of [['--jsn'], ['now']]) t.equal(svc(dir, ['status', ...bad]).code, 2, bad.join(' '));
});

await t.test('svc start whose output reader goes away keeps running, and still stops cleanly', async (t) => {
  const dir = freePortHome(join(t.testdir(), 'home'), {});
  const child = spawn(process.execPath, [SVC, 'start'], { env: { ...process.env, SVC_HOME: dir }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  await until('the banner', () => /\n {2}next {8}/.test(out));
  child.stdout.destroy();
  child.stderr.destroy(); // what `svc start 2>&1 | head -1` leaves it with
  const status = svc(dir, ['status']);
  t.equal(status.code, 0, 'still running after its reader left');
  child.kill('SIGTERM');
  t.equal(await exited(child), 0, 'a clean stop, not a silent exit');
  t.match(svc(dir, ['status']).stdout, /stopped \S+ \(SIGTERM\)/, 'the run ended with daemon.stopped');
});

await t.test('started on another home with --home, the banner suggests commands that act on that home', async (t) => {
  const dir = freePortHome(join(t.testdir(), 'other home'), {});
  const daemon = startSvc(join(t.testdir(), 'unused'), ['start', '--home', dir]);
  await until('the banner', () => /\n {2}next {8}/.test(daemon.output()));
  t.match(daemon.output(), new RegExp(`\\(or \\./bin/svc\\.js --home "${dir}" stop\\)`));
  daemon.kill('SIGTERM');
  t.equal(await exited(daemon), 0);
});

await t.test('a pid-only svc.pid naming a live process that is not svc is taken over and that process left alone; one naming a live svc still refuses', async (t) => {
  const dir = freePortHome(join(t.testdir(), 'home'), {});
  const other = spawn('sleep', ['60'], { stdio: 'ignore' });
  t.teardown(() => void other.kill('SIGKILL'));
  const otherPid = await until('sleep runs', () => other.pid);
  // Written after the process started, as older versions and other tools write it: only the pid.
  writeFileSync(join(dir, 'svc.pid'), `${otherPid}\n`);
  const daemon = startSvc(dir);
  t.teardown(() => void daemon.kill('SIGKILL'));
  await until('the banner', () => /\n {2}next {8}/.test(daemon.output()) || daemon.exitCode !== null);
  t.match(daemon.output(), /\n {2}next {8}/, 'started despite the pid file');
  t.match(readFileSync(join(dir, 'svc.pid'), 'utf8'), new RegExp(`^${daemon.pid}\\n`), 'the pid file now names the daemon');
  t.equal(readProcStat(otherPid)?.state, 'S', 'the other process was neither signalled nor reaped');

  // The same pid-only format naming the running daemon: a second start refuses.
  writeFileSync(join(dir, 'svc.pid'), `${daemon.pid}\n`);
  const second = svc(dir, ['start']);
  t.not(second.code, 0);
  t.match(second.stderr, `another svc daemon (pid ${daemon.pid}) is already running`);
  daemon.kill('SIGTERM');
  t.equal(await exited(daemon), 0);
});
