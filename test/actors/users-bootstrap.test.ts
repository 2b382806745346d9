import t from 'tap';
import { readFileSync, statSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { ensureBootstrapAdmin, hashPassword, randomPassword, verifyPassword } from '../../actors/index.js';
import { Bus } from '../../bus/index.js';
import { statusCommand } from '../../bin/status-command.js';
import { startBanner } from '../../bin/start-banner.js';
import { USER_EVENTS, validateConfig, type AgentConfig } from '../../schemas/index.js';
import { MemoryEventLog, homePaths, loadUsers } from '../../store/index.js';

const T0 = Date.parse('2026-11-25T10:00:00.000Z');

function config(extra: Record<string, unknown> = {}): AgentConfig {
  const r = validateConfig({ allowed_user_ids: [111, 222], ...extra }, 'config.json');
  if (!r.ok) throw new Error(r.errors.join('; '));
  return r.config;
}

await t.test('password hashes: self-describing scrypt, verified, salted, refusing junk', async (t) => {
  const h = await hashPassword('correct horse');
  t.match(h, /^scrypt\$N=32768,r=8,p=1\$[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+$/);
  t.ok(await verifyPassword('correct horse', h));
  t.notOk(await verifyPassword('correct hors', h));
  t.not(await hashPassword('correct horse'), h, 'a fresh salt each time');
  // Older, cheaper parameters keep verifying: the string carries them.
  const cheap = await hashPassword('pw-12345', { N: 1024, r: 8, p: 1 });
  t.ok(await verifyPassword('pw-12345', cheap));
  for (const junk of ['', 'plain', 'scrypt$N=3,r=8,p=1$AAAA$AAAA', 'scrypt$N=1073741824,r=8,p=1$AAAAAAAA$' + 'A'.repeat(44), h.replace(/\$[^$]+$/, '$AAAA')]) {
    t.notOk(await verifyPassword('correct horse', junk), `refuses ${JSON.stringify(junk.slice(0, 30))}`);
  }
  const p = randomPassword(16);
  t.equal(p.length, 16);
  t.match(p, /^[A-Za-z2-9]{16}$/);
});

await t.test('first start: admin with a 0600 password file, ids seeded, a fact without secrets; once only', async (t) => {
  const paths = homePaths(t.testdir());
  const log = new MemoryEventLog();
  const bus = new Bus({ log, clock: () => T0 });
  t.teardown(() => bus.close());
  const r = await ensureBootstrapAdmin(paths, config(), bus, T0);
  t.same(r, { created: true, passwordFile: paths.initialAdminPasswordFile });
  const st = statSync(paths.initialAdminPasswordFile);
  t.equal(st.mode & 0o777, 0o600);
  t.equal(statSync(paths.usersFile).mode & 0o777, 0o600);
  t.equal(statSync(paths.secretsDir).mode & 0o777, 0o700);
  const password = readFileSync(paths.initialAdminPasswordFile, 'utf8').trim();
  t.equal(password.length, 16);
  const [admin] = loadUsers(paths);
  t.match(admin, { username: 'admin', role: 'admin', active: true, telegram_user_ids: [111, 222], token_version: 0, created_at: T0 / 1000 });
  t.ok(await verifyPassword(password, admin!.password_hash));
  const facts = log.read().filter((e) => e.type === USER_EVENTS.created);
  t.equal(facts.length, 1);
  t.notMatch(JSON.stringify(log.read()), password, 'no fact carries the password');
  t.notMatch(JSON.stringify(log.read()), 'scrypt$', 'nor its hash');

  const again = await ensureBootstrapAdmin(paths, config(), bus, T0);
  t.equal(again.created, false, 'a second start creates nothing');
  t.equal(readFileSync(paths.initialAdminPasswordFile, 'utf8').trim(), password, 'and keeps the password');

  // The banner says it on the start that created it; status says it while the file is there.
  const banner = startBanner({
    version: '0', pid: 1, paths, configCreated: false, listeners: [{ surface: 'direct API', host: '0.0.0.0', port: 8741 }],
    transports: [], sandbox: { why: 'off' }, agents: ['main'], apiEnabled: true, svc: 'svc', bootstrapPasswordFile: paths.initialAdminPasswordFile,
    panel: { enabled: true, built: true, urls: ['http://127.0.0.1:8741/'], busy: null },
  });
  t.match(banner, `log in as admin at http://127.0.0.1:8741/ with the password in ${paths.initialAdminPasswordFile}`);
  const noPanel = startBanner({
    version: '0', pid: 1, paths, configCreated: false, listeners: [{ surface: 'direct API', host: '0.0.0.0', port: 8741 }],
    transports: [], sandbox: { why: 'off' }, agents: ['main'], apiEnabled: true, svc: 'svc', bootstrapPasswordFile: paths.initialAdminPasswordFile,
    panel: { enabled: false, built: true, urls: [], busy: null },
  });
  t.match(noPanel, `log in as admin at http://127.0.0.1:8741/api/auth/login with the password in ${paths.initialAdminPasswordFile}`, 'with the panel off, the API login');
  t.match(noPanel, /\n {2}panel {7}off \(panel\.enabled is false/);
  t.notMatch(banner, password);
  let out = '';
  statusCommand([], paths, T0, (s) => (out += s));
  t.match(out, /first-start password is unchanged/);
  let json = '';
  statusCommand(['--json'], paths, T0, (s) => (json += s));
  t.equal(JSON.parse(json).bootstrap_password_unchanged, true);
});

await t.test('no bootstrap when a users.json exists, new or legacy location', async (t) => {
  for (const where of ['secrets', 'legacy'] as const) {
    const root = t.testdir();
    const paths = homePaths(root);
    const file = where === 'legacy' ? join(root, 'users.json') : paths.usersFile;
    mkdirSync(join(file, '..'), { recursive: true });
    writeFileSync(file, JSON.stringify([{ username: 'ops', role: 'admin' }]));
    const r = await ensureBootstrapAdmin(paths, config(), null, T0);
    t.equal(r.created, false, where);
    t.same(loadUsers(paths).map((u) => u.username), ['ops']);
    let out = '';
    statusCommand([], paths, T0, (s) => (out += s));
    t.notMatch(out, /first-start password/);
  }
});
