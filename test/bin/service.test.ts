import t from 'tap';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { systemdQuote } from '../../bin/service-command.js';
import { svc } from './cli-helpers.js';

const hasAnalyze = spawnSync('systemd-analyze', ['--version']).status === 0;

await t.test('svc service install writes a user unit systemd accepts; status and uninstall', async (t) => {
  const root = t.testdir();
  // A home with a space, a percent and a dollar: systemd would expand the last two if not escaped.
  const home = join(root, 'my home %h $USER');
  const env = { XDG_CONFIG_HOME: join(root, 'xdg') };
  const unit = join(root, 'xdg', 'systemd', 'user', 'svc.service');

  const before = svc(home, ['service', 'status'], env);
  t.equal(before.code, 1, 'status before install says not installed');
  t.match(before.stdout, /not installed/);

  const r = svc(home, ['service', 'install', '--home', home], env);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /systemctl --user enable --now svc/);
  t.match(r.stdout, /loginctl enable-linger/);
  const text = readFileSync(unit, 'utf8');
  t.match(text, /^Restart=on-failure$/m);
  t.match(text, /^WantedBy=default\.target$/m);
  t.match(text, /^ExecStart=\/\S+ \/\S+\/bin\/svc\.js start --home "[^\n]*my home %%h \$\$USER"$/m);
  t.match(text, /^Environment=NO_COLOR=1$/m);
  t.notOk(existsSync(join(home, 'config')), 'installing the unit does not start svc or create its config');

  await t.test('systemd-analyze verify accepts the unit', { skip: hasAnalyze ? false : 'systemd-analyze is not installed' }, async (t) => {
    const verify = spawnSync('systemd-analyze', ['verify', unit], { encoding: 'utf8' });
    t.equal(verify.status, 0, `systemd-analyze verify: ${verify.stderr}`);
  });

  const status = svc(home, ['service', 'status'], env);
  t.equal(status.code, 0, status.stderr);
  t.match(status.stdout, /unit:\s+.*svc\.service/);
  t.match(status.stdout, /enabled:/);
  t.match(status.stdout, /lingering:/);

  const un = svc(home, ['service', 'uninstall'], env);
  t.equal(un.code, 0, un.stderr);
  t.notOk(existsSync(unit));
  t.equal(svc(home, ['service', 'uninstall'], env).code, 0, 'uninstalling twice is fine');

  for (const bad of [['service', 'restart'], ['service', 'install', 'extra'], ['service', 'install', '--force']]) {
    const b = svc(home, bad, env);
    t.equal(b.code, 2, bad.join(' '));
    t.notOk(existsSync(unit), `${bad.join(' ')} wrote nothing`);
  }
});

await t.test('systemdQuote: what systemd reads back is the argument', async (t) => {
  t.equal(systemdQuote('/usr/bin/node'), '/usr/bin/node');
  t.equal(systemdQuote('a b'), '"a b"');
  t.equal(systemdQuote('50%'), '50%%');
  t.equal(systemdQuote('$HOME x'), '"$$HOME x"');
  t.equal(systemdQuote('PATH=/opt/$x/bin:/usr/50%', 'environment'), '"PATH=/opt/$x/bin:/usr/50%%"', 'Environment= expands no variables: $ stays single');
  t.equal(systemdQuote('say "hi"\\'), '"say \\"hi\\"\\\\"');
  t.throws(() => systemdQuote('a\nb'), { code: 'usage' });
});
