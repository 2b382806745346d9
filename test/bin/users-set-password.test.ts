import t from 'tap';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as pty from 'node-pty';
import { hashPassword, verifyPassword } from '../../actors/index.js';
import { homePaths, loadUsers } from '../../store/index.js';
import { SVC, svc } from './cli-helpers.js';

/* `svc users set-password` driven through a real pseudo-terminal, as a person at a shell runs it. */

async function home(t: { testdir(): string }, totp = false) {
  const root = t.testdir();
  const paths = homePaths(root);
  mkdirSync(paths.secretsDir, { recursive: true, mode: 0o700 });
  const hash = await hashPassword('old-password', { N: 1024, r: 8, p: 1 });
  writeFileSync(paths.usersFile, JSON.stringify([
    { username: 'admin', role: 'admin', password_hash: hash, token_version: 3, ...(totp ? { totp_enabled: true, totp_secret: 'JBSWY3DPEHPK3PXP' } : {}) },
    { username: 'bob', role: 'viewer', password_hash: hash },
  ]), { mode: 0o600 });
  writeFileSync(paths.initialAdminPasswordFile, 'bootstrap-pass\n', { mode: 0o600 });
  return { root, paths };
}

/** Runs the CLI on a pty; `script` answers each prompt (matched by regex) in turn. */
function onPty(root: string, args: string[], script: [RegExp, string][]): Promise<{ code: number; output: string }> {
  return new Promise((resolve, reject) => {
    const p = pty.spawn(process.execPath, [SVC, '--home', root, ...args], { name: 'xterm', cols: 120, rows: 30, cwd: root, env: { ...process.env } as Record<string, string> });
    let output = '';
    let step = 0;
    const timer = setTimeout(() => {
      p.kill();
      reject(new Error(`timed out; output so far: ${JSON.stringify(output)}`));
    }, 30_000);
    p.onData((d) => {
      output += d;
      while (step < script.length && script[step]![0].test(output)) {
        p.write(script[step]![1]);
        step++;
      }
    });
    p.onExit(({ exitCode }) => {
      clearTimeout(timer);
      resolve({ code: exitCode, output });
    });
  });
}

await t.test('sets the password: twice, no echo, token_version bumped, bootstrap file gone, password never shown', async (t) => {
  const { root, paths } = await home(t);
  const r = await onPty(root, ['users', 'set-password'], [[/New password for admin: /, 'brand-new-secret\r'], [/Repeat it: /, 'brand-new-secret\r']]);
  t.equal(r.code, 0, r.output);
  t.notOk(r.output.includes('brand-new-secret'), 'the terminal never showed it');
  t.match(r.output, /password of admin changed; its existing sessions are signed out/);
  const admin = loadUsers(paths).find((u) => u.username === 'admin')!;
  t.equal(admin.token_version, 4);
  t.ok(await verifyPassword('brand-new-secret', admin.password_hash));
  t.notOk(existsSync(paths.initialAdminPasswordFile), 'the bootstrap password file is removed');
  t.notOk(readFileSync(paths.usersFile, 'utf8').includes('brand-new-secret'));
});

await t.test('another user keeps the bootstrap file; backspace edits; short or different passwords change nothing', async (t) => {
  const { root, paths } = await home(t);
  const before = readFileSync(paths.usersFile, 'utf8');
  const short = await onPty(root, ['users', 'set-password', 'bob'], [[/New password for bob: /, 'short\r']]);
  t.equal(short.code, 2);
  t.match(short.output, /at least 8 characters; nothing changed/);
  const differ = await onPty(root, ['users', 'set-password', 'bob'], [[/New password for bob: /, 'first-password\r'], [/Repeat it: /, 'other-password\r']]);
  t.match(differ.output, /differ; nothing changed/);
  const interrupted = await onPty(root, ['users', 'set-password', 'bob'], [[/New password for bob: /, 'abc\u0003']]);
  t.match(interrupted.output, /interrupted; nothing changed/);
  t.equal(readFileSync(paths.usersFile, 'utf8'), before);
  const ok = await onPty(root, ['users', 'set-password', 'bob'], [[/New password for bob: /, 'bob-passwordX\u007f\r'], [/Repeat it: /, 'bob-password\r']]);
  t.equal(ok.code, 0, ok.output);
  t.ok(await verifyPassword('bob-password', loadUsers(paths).find((u) => u.username === 'bob')!.password_hash));
  t.ok(existsSync(paths.initialAdminPasswordFile), 'resetting bob leaves the admin bootstrap file');
  const ghost = await onPty(root, ['users', 'set-password', 'ghost'], []);
  t.equal(ghost.code, 1);
  t.match(ghost.output, /no user "ghost"/);
});

await t.test('2FA: asked whether to keep it, or dropped with --disable-2fa', async (t) => {
  const keep = await home(t, true);
  const r1 = await onPty(keep.root, ['users', 'set-password'], [[/New password/, 'new-password-1\r'], [/Repeat it: /, 'new-password-1\r'], [/Keep 2FA \(TOTP\) for admin\? \[Y\/n\] /, '\r']]);
  t.equal(r1.code, 0, r1.output);
  t.match(loadUsers(keep.paths)[0], { totp_enabled: true, totp_secret: 'JBSWY3DPEHPK3PXP' });
  const r2 = await onPty(keep.root, ['users', 'set-password'], [[/New password/, 'new-password-2\r'], [/Repeat it: /, 'new-password-2\r'], [/Keep 2FA/, 'n\r']]);
  t.match(r2.output, /2FA is off/);
  t.match(loadUsers(keep.paths)[0], { totp_enabled: false, totp_secret: null });
  const drop = await home(t, true);
  const r3 = await onPty(drop.root, ['users', 'set-password', '--disable-2fa'], [[/New password/, 'new-password-3\r'], [/Repeat it: /, 'new-password-3\r']]);
  t.notMatch(r3.output, /Keep 2FA/);
  t.match(loadUsers(drop.paths)[0], { totp_enabled: false, token_version: 4 });
});

await t.test('without a terminal it refuses and changes nothing; --help', async (t) => {
  const { root, paths } = await home(t);
  const before = readFileSync(paths.usersFile, 'utf8');
  const r = svc(root, ['users', 'set-password']);
  t.equal(r.code, 2);
  t.match(r.stderr, /reads the password from a terminal/);
  t.equal(readFileSync(paths.usersFile, 'utf8'), before);
  const help = svc(root, ['users', 'set-password', '--help']);
  t.equal(help.code, 0);
  t.match(help.stdout, /usage: svc users set-password \[USERNAME\] \[--disable-2fa\]/);
  const usersHelp = svc(root, ['users', '--help']);
  t.equal(usersHelp.code, 0);
  t.match(usersHelp.stdout, /usage: svc users set-password/);
  t.ok(existsSync(join(paths.initialAdminPasswordFile)));
});
