import t from 'tap';
import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { svc } from './cli-helpers.js';

const FAKE_BIN = fileURLToPath(new URL('../fixtures/bin', import.meta.url));
const NODE_DIR = dirname(process.execPath);

await t.test('svc doctor on a fresh home: what is missing and how to fix it, creating nothing', async (t) => {
  const root = t.testdir({ user: {} });
  const home = join(root, 'svc-home');
  const r = svc(home, ['doctor'], { HOME: join(root, 'user'), PATH: NODE_DIR });
  t.equal(r.code, 1, 'the default provider is missing, so there is something to fix');
  t.match(r.stdout, /^ok {4}Node\.js v20\./m);
  t.match(r.stdout, /^ok {4}native modules load/m);
  t.match(r.stdout, /^warn {2}home .*svc-home does not exist yet — fix: \.\/bin\/svc\.js start creates it/m);
  t.match(r.stdout, /^FAIL {2}Claude Code \(the default provider\): not installed — fix: npm i -g @anthropic-ai\/claude-code/m);
  t.match(r.stdout, /^-- {4}telegram: off, no telegram_token in config.json — fix: set telegram_token \(from @BotFather\) in config.json$/m);
  t.match(r.stdout, /1 problem\(s\) to fix/);
  t.notOk(existsSync(home), 'the doctor only looks');
});

await t.test('svc doctor names loose permissions, a taken port and its holder, a public API, a missing login', async (t) => {
  const blocker = createServer();
  await new Promise<void>((resolve) => blocker.listen({ host: '127.0.0.1', port: 0, exclusive: true }, resolve));
  t.teardown(() => void blocker.close());
  const taken = (blocker.address() as { port: number }).port;

  const root = t.testdir({ user: { '.codex': { 'auth.json': JSON.stringify({ tokens: { access_token: 'a', refresh_token: 'r' } }) } } });
  const home = join(root, 'svc-home');
  mkdirSync(join(home, 'config'), { recursive: true, mode: 0o700 });
  chmodSync(home, 0o755);
  const config = join(home, 'config', 'config.json');
  writeFileSync(config, JSON.stringify({ provider: 'codex', model: 'gpt-5', interagent_port: taken, api: { enabled: true, host: '0.0.0.0', token: 't' } }), { mode: 0o644 });
  const r = svc(home, ['doctor'], { HOME: join(root, 'user'), PATH: `${FAKE_BIN}${delimiter}${NODE_DIR}` });
  t.equal(r.code, 1);
  t.match(r.stdout, new RegExp(`^FAIL  ${home} is mode 0755: .* — fix: chmod 700 ${home}$`, 'm'));
  t.match(r.stdout, /^FAIL  .*config\.json is mode 0644: .* — fix: chmod 600 /m);
  t.match(r.stdout, new RegExp(`^FAIL  127\\.0\\.0\\.1:${taken} \\(internal API, interagent_port\\) is in use by pid ${process.pid} \\(.*\\) — fix: stop that process, or set interagent_port`, 'm'));
  t.match(r.stdout, /^FAIL  direct API listens on 0\.0\.0\.0, a public address, without api\.allow_public — fix: set api\.host to 127\.0\.0\.1/m);
  t.match(r.stdout, /^ok {4}Codex \(the default provider\): installed \(.*codex\), signed in \(file:~\/\.codex\/auth\.json\)/m);
  t.match(r.stdout, /^warn {2}Claude Code: installed \(.*claude\) but not signed in — fix: \.\/bin\/svc\.js auth claude/m);
  t.match(r.stdout, /4 problem\(s\) to fix/);
});

await t.test('svc doctor: a broken config.json is one failure, not a crash', async (t) => {
  const home = t.testdir({ config: { 'config.json': '{"model": ' } });
  const r = svc(home, ['doctor'], { PATH: NODE_DIR });
  t.equal(r.code, 1);
  t.match(r.stdout, /^FAIL  .*config\.json.*not valid JSON.* — fix: edit config\.json/m);
  t.equal(r.stderr, '');
});

await t.test('svc doctor: the admin panel, built or not, and where this config serves it', async (t) => {
  const root = t.testdir({ user: {}, panel: { 'index.html': '<!doctype html>', 'version.json': '{"version":"9.9.9","built_at":"2026-11-28T00:00:00Z"}' } });
  const home = join(root, 'svc-home');
  const env = { HOME: join(root, 'user'), PATH: NODE_DIR, SVC_PANEL_LISTEN: '' };
  const missing = svc(home, ['doctor'], { ...env, SVC_PANEL_DIR: join(root, 'nowhere') });
  t.match(missing.stdout, /^warn {2}admin panel is not built \(.*nowhere has no index\.html\) — fix: npm run build in \//m);
  t.notMatch(missing.stdout, /^FAIL {2}admin panel/m, 'a missing build is a warning, not a failure');
  const built = svc(home, ['doctor'], { ...env, SVC_PANEL_DIR: join(root, 'panel') });
  t.match(built.stdout, /^ok {4}admin panel built \(version 9\.9\.9\), served at http:\/\/127\.0\.0\.1:3000\/$/m, 'a fresh config: its own port, the API being off');
  mkdirSync(join(home, 'config'), { recursive: true });
  writeFileSync(join(home, 'config', 'config.json'), JSON.stringify({ panel: { enabled: false } }));
  t.match(svc(home, ['doctor'], { ...env, SVC_PANEL_DIR: join(root, 'panel') }).stdout, /^-- {4}admin panel is off \(panel\.enabled is false\)/m);
});
