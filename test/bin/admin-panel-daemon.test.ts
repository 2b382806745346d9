// The admin panel in a real daemon (dist/bin/svc.js): its own listener beside the admin API, a busy
// port that only warns, config.json edits that open and close it while svc runs, and `svc admin`.
import t, { type Test } from 'tap';
import { readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { join } from 'node:path';
import { VERSION } from '../../bin/package-info.js';
import { homePaths } from '../../store/index.js';
import { exited, freePortHome, startSvc, svc, until } from './cli-helpers.js';

const INDEX = '<!doctype html><title>svc panel</title><script type="module" src="/assets/index-3f9a1c2b.js"></script>\n';

/**
 * A test's directory with a built panel in it (homes go beside it: a second t.testdir() would
 * empty the directory); the daemons see only this panel and take `panel.listen` from config.json.
 */
function panelEnv(t: Test): { env: NodeJS.ProcessEnv; root: string } {
  const root = t.testdir({ panel: { 'index.html': INDEX, 'version.json': '{"version":"0.0.1","built_at":null}', assets: { 'index-3f9a1c2b.js': 'console.log(1)\n' } } });
  return { env: { SVC_PANEL_DIR: join(root, 'panel'), SVC_PANEL_LISTEN: '' }, root };
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  await new Promise((r) => server.close(r));
  return port;
}

const get = (port: number, path: string, headers: Record<string, string> = {}) =>
  fetch(`http://127.0.0.1:${port}${path}`, { headers: { connection: 'close', ...headers } }).then(async (r) => ({ status: r.status, text: await r.text(), headers: r.headers }));
const refused = (port: number) => get(port, '/').then(() => false, () => true);

await t.test('panel.listen on: the panel and the admin API on the own port; config.json closes and reopens it while svc runs', async (t) => {
  const { env, root } = panelEnv(t);
  const dir = freePortHome(join(root, 'home'), { panel: { listen: 'on', port: 0 } });
  const daemon = startSvc(dir, ['start'], env);
  t.teardown(() => void daemon.kill('SIGKILL'));
  await until('the banner', () => /\n {2}next {8}/.test(daemon.output()));
  const out = daemon.output();
  const port = Number(/admin panel {3}127\.0\.0\.1:(\d+)/.exec(out)?.[1]);
  t.ok(port > 0, out);
  t.match(out, new RegExp(`\\n {2}panel {7}http://127\\.0\\.0\\.1:${port}/\\n`));
  t.match(out, new RegExp(`log in as admin at http://127\\.0\\.0\\.1:${port}/ with the password in`), 'a first start is pointed at the panel');

  const index = await get(port, '/agents/main');
  t.equal(index.status, 200);
  t.equal(index.text, INDEX);
  t.match(index.headers.get('content-security-policy'), /^default-src 'self'/);
  t.equal((await get(port, '/api/auth/me')).status, 401, 'the admin API answers beside it');
  t.match(JSON.parse((await get(port, '/api/nope')).text), { code: 'not-found' });
  t.equal((await get(port, '/health')).status, 200);
  t.ok(JSON.parse(readFileSync(join(dir, 'config', 'config.json'), 'utf8')).api.jwt_secret, 'the admin API it serves got its jwt_secret');

  const again = await freePort();
  const config = JSON.parse(readFileSync(join(dir, 'config', 'config.json'), 'utf8'));
  const write = (panel: Record<string, unknown>) => writeConfig(dir, { ...config, panel });
  write({ listen: 'off', port: 0 });
  await until('the own listener to close', () => refused(port), 20_000);
  write({ listen: 'on', port: again });
  await until('the listener on the new port', async () => (await get(again, '/').catch(() => null))?.status === 200, 20_000);
  t.pass(`reopened on ${again} without a restart`);
  daemon.kill('SIGTERM');
  t.equal(await exited(daemon), 0);
});

/** Through a temporary file and a rename, as an editor that saves atomically does. */
function writeConfig(dir: string, config: Record<string, unknown>): void {
  const file = join(dir, 'config', 'config.json');
  writeFileSync(`${file}.tmp`, JSON.stringify(config, null, 2));
  renameSync(`${file}.tmp`, file);
}

await t.test('a busy panel port is one warning: the daemon runs on, and the banner says how to pick another', async (t) => {
  const { env, root } = panelEnv(t);
  const blocker: Server = createServer();
  await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
  t.teardown(() => void blocker.close());
  const busy = (blocker.address() as AddressInfo).port;
  const dir = freePortHome(join(root, 'home'), { panel: { listen: 'on', port: busy } });
  const daemon = startSvc(dir, ['start'], env);
  t.teardown(() => void daemon.kill('SIGKILL'));
  await until('the banner', () => /\n {2}next {8}/.test(daemon.output()) || daemon.exitCode !== null);
  const out = daemon.output();
  t.equal(daemon.exitCode, null, 'still running');
  t.match(out, new RegExp(`WARN +the admin panel cannot listen on 127\\.0\\.0\\.1:${busy} \\(panel\\.port in config\\.json\\)[^\\n]*svc admin start --port N`));
  t.match(out, new RegExp(`\\n {2}panel {7}port ${busy} on 127\\.0\\.0\\.1 is busy; [^\\n]*admin start --port N serves it on another\\n`));
  t.equal(svc(dir, ['status']).code, 0, 'svc status: running');
  daemon.kill('SIGTERM');
  t.equal(await exited(daemon), 0);
});

await t.test('svc admin: setup creates and resets the admin (old sessions end), start/stop/status/open/update, --help', async (t) => {
  const { env, root } = panelEnv(t);
  const apiPort = await freePort();
  const dir = join(root, 'home');
  const paths = homePaths(dir);

  // No daemon, no home yet: setup creates the admin.
  const made = svc(dir, ['admin', 'setup'], env);
  t.equal(made.code, 0, made.stderr);
  const first = readFileSync(paths.initialAdminPasswordFile, 'utf8').trim();
  t.match(first, /^[A-Za-z0-9]{16}$/);
  t.equal(statSync(paths.initialAdminPasswordFile).mode & 0o777, 0o600);
  t.match(made.stdout, `created the admin user; its password is in ${paths.initialAdminPasswordFile}`);
  t.match(made.stdout, 'log in as admin at http://127.0.0.1:3000/');
  t.notMatch(made.stdout, first, 'never the password itself');
  t.equal(svc(dir, ['admin', 'status'], env).code, 3, 'not served: no daemon');

  freePortHome(dir, { api: { enabled: true, host: '127.0.0.1', port: apiPort, token: 'tok-0123456789abcdef0123' }, panel: { listen: 'off' } });
  const daemon = startSvc(dir, ['start'], env);
  t.teardown(() => void daemon.kill('SIGKILL'));
  await until('the banner', () => /\n {2}next {8}/.test(daemon.output()));
  const login = async (password: string) =>
    fetch(`http://127.0.0.1:${apiPort}/api/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json', connection: 'close' }, body: JSON.stringify({ username: 'admin', password }) });
  const ok = await login(first);
  t.equal(ok.status, 200);
  const { access_token } = (await ok.json()) as { access_token: string };
  const me = () => fetch(`http://127.0.0.1:${apiPort}/api/auth/me`, { headers: { authorization: `Bearer ${access_token}`, connection: 'close' } }).then((r) => r.status);
  t.equal(await me(), 200);

  const reset = svc(dir, ['admin', 'setup'], env);
  t.equal(reset.code, 0, reset.stderr);
  t.match(reset.stdout, `gave admin a new password, in ${paths.initialAdminPasswordFile}`);
  t.match(reset.stdout, `log in as admin at http://127.0.0.1:${apiPort}/`);
  const second = readFileSync(paths.initialAdminPasswordFile, 'utf8').trim();
  t.not(second, first);
  t.notMatch(reset.stdout, second);
  await until('the old session to end', async () => (await me()) === 401, 20_000);
  t.equal((await login(first)).status, 401, 'the old password is refused');
  t.equal((await login(second)).status, 200, 'the new one logs in');

  const status = svc(dir, ['admin', 'status'], env);
  t.equal(status.code, 0, status.stdout);
  t.match(status.stdout, /^panel {7}built \(version 0\.0\.1\) in /m);
  t.match(status.stdout, new RegExp(`^served at {3}http://127\\.0\\.0\\.1:${apiPort}/$`, 'm'));

  const own = await freePort();
  const started = svc(dir, ['admin', 'start', '--port', String(own)], env);
  t.equal(started.code, 0, started.stderr);
  t.equal(started.stdout, `the admin panel is served at http://127.0.0.1:${own}/\n`);
  t.equal((await get(own, '/chat')).text, INDEX);
  t.match(svc(dir, ['admin', 'status'], env).stdout, new RegExp(`http://127\\.0\\.0\\.1:${own}/\\n {12}http://127\\.0\\.0\\.1:${apiPort}/`));
  const opened = svc(dir, ['admin', 'open'], { ...env, DISPLAY: '', WAYLAND_DISPLAY: '' });
  t.same([opened.code, opened.stdout], [0, `http://127.0.0.1:${own}/\n`], 'no display: only the URL');

  const stopped = svc(dir, ['admin', 'stop'], env);
  t.equal(stopped.code, 0, stopped.stderr);
  t.match(stopped.stdout, `it stays reachable at http://127.0.0.1:${apiPort}/ while the API server runs`);
  t.ok(await refused(own), 'the own listener is closed');
  t.equal(JSON.parse(readFileSync(paths.configFile, 'utf8')).panel.listen, 'off');

  // update asks the running daemon which build it serves: it read the files once, at start.
  const versionFile = join(root, 'panel', 'version.json');
  let update = svc(dir, ['admin', 'update'], env);
  t.equal(update.code, 1, 'a build of another version');
  t.match(update.stdout, /^on disk {5}panel 0\.0\.1 in \//m);
  t.match(update.stdout, new RegExp(`^served {6}panel 0\\.0\\.1 at http://127\\.0\\.0\\.1:${apiPort}/$`, 'm'));
  t.match(update.stdout, /the build on disk is panel 0\.0\.1, not this version's; run npm run build in \//);
  writeFileSync(versionFile, JSON.stringify({ version: VERSION, built_at: '2026-11-28T22:00:00.000Z' }));
  update = svc(dir, ['admin', 'update'], env);
  t.equal(update.code, 1, 'rebuilt on disk, but the daemon still serves the old build');
  t.match(update.stdout, new RegExp(`^on disk {5}panel ${VERSION.replace(/\./g, '\\.')} \\(built 2026-11-28T22:00:00\\.000Z\\)`, 'm'));
  t.match(update.stdout, /^served {6}panel 0\.0\.1 at /m);
  t.match(update.stdout, /the build on disk is current, but the running daemon still serves the one it loaded at start; restart svc/);

  daemon.kill('SIGTERM');
  t.equal(await exited(daemon), 0);
  update = svc(dir, ['admin', 'update'], env);
  t.equal(update.code, 0, update.stdout);
  t.match(update.stdout, /^served {6}nothing: svc is not running/m);
  t.match(update.stdout, /the build on disk is this version's: up to date/);
  const restarted = startSvc(dir, ['start'], env);
  t.teardown(() => void restarted.kill('SIGKILL'));
  await until('the banner again', () => /\n {2}next {8}/.test(restarted.output()));
  update = svc(dir, ['admin', 'update'], env);
  t.equal(update.code, 0, update.stdout);
  t.match(update.stdout, new RegExp(`^served {6}panel ${VERSION.replace(/\./g, '\\.')} \\(built 2026-11-28T22:00:00\\.000Z\\) at http://127\\.0\\.0\\.1:${apiPort}/$`, 'm'));
  t.match(update.stdout, /the daemon serves the build on disk: up to date/, 'after the restart it serves the new build');
  restarted.kill('SIGTERM');
  t.equal(await exited(restarted), 0);
  writeFileSync(versionFile, '{"version":"0.0.1","built_at":null}');

  const down = svc(dir, ['admin', 'start'], env);
  t.match(down.stdout, 'the panel will be served at http://127.0.0.1:');
  t.match(down.stdout, 'on the next svc start');
  t.equal(svc(dir, ['admin', 'status'], env).code, 3);

  update = svc(dir, ['admin', 'update'], env);
  t.equal(update.code, 1, 'a build of another version, with no daemon');
  t.match(update.stdout, /the build on disk is panel 0\.0\.1, not this version's; run npm run build in \//);
  const none = svc(dir, ['admin', 'update'], { ...env, SVC_PANEL_DIR: join(dir, 'nowhere') });
  t.match(none.stdout, /^on disk {5}not built \(.*nowhere has no index\.html\)$/m);
  t.match(none.stdout, /the panel is not built; run npm run build in \//);
  t.equal(none.code, 1);

  for (const sub of ['setup', 'start', 'stop', 'status', 'update', 'open']) {
    const help = svc(dir, ['admin', sub, '--help'], env);
    t.equal(help.code, 0);
    t.match(help.stdout, `usage: svc admin ${sub}`);
  }
  t.match(svc(dir, ['admin', '--help'], env).stdout, /usage: svc admin <setup\|start\|stop\|status\|update\|open>/);
  const bad = svc(dir, ['admin', 'start', '--port', 'nope'], env);
  t.equal(bad.code, 2);
  t.match(bad.stderr, /^svc: --port nope: expected a port number from 1 to 65535\n/);
  t.equal(svc(dir, ['admin', 'frobnicate'], env).code, 2);
});
