import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, userInfo } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SvcError } from '../schemas/index.js';
import type { HomePaths } from '../store/index.js';
import { parse } from './cli-args.js';

const USAGE = `usage: svc service install|uninstall|status [--home DIR]

  install     write a systemd user unit (~/.config/systemd/user/svc.service) that runs this
              checkout's svc on this home, restarting it on failure; prints how to enable it
  uninstall   stop and disable the unit if systemd runs it, and remove the file
  status      whether the unit is installed, enabled and running, and whether lingering is on`;

export const UNIT_NAME = 'svc.service';

export interface ServiceEnv {
  env: Readonly<Record<string, string | undefined>>;
  out: (line: string) => void;
}

/** `$XDG_CONFIG_HOME/systemd/user`, else `~/.config/systemd/user`: where `systemctl --user` looks. */
export function unitDir(env: ServiceEnv['env']): string {
  const base = env.XDG_CONFIG_HOME && env.XDG_CONFIG_HOME.startsWith('/') ? env.XDG_CONFIG_HOME : join(env.HOME ?? homedir(), '.config');
  return join(base, 'systemd', 'user');
}

/**
 * One argument as systemd reads it back unchanged: `%` specifiers are expanded everywhere, even
 * inside quotes, so `%` is doubled; `$` is doubled only where systemd expands variables (ExecStart=,
 * not Environment=, which would keep `$$` literally); quotes and backslashes are escaped.
 */
export function systemdQuote(arg: string, where: 'exec' | 'environment' = 'exec'): string {
  if (/[\n\r\0]/.test(arg)) throw new SvcError('usage', `${JSON.stringify(arg)} cannot be put in a systemd unit (a line break or NUL)`);
  const specifiers = arg.replace(/%/g, '%%');
  const escaped = where === 'exec' ? specifiers.replace(/\$/g, '$$$$') : specifiers;
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(arg) ? escaped : `"${escaped.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

export function systemdUnit(opts: { node: string; entry: string; home: string; path: string }): string {
  const exec = [opts.node, opts.entry, 'start', '--home', opts.home].map((a) => systemdQuote(a)).join(' ');
  return `# Written by \`svc service install\`; \`svc service uninstall\` removes it.
[Unit]
Description=svc: runs AI coding-agent CLIs and orchestrates them
Documentation=file://${opts.entry.replace(/\/bin\/svc\.js$/, '/docs/operations.md').replace(/%/g, '%%')}
After=network-online.target
Wants=network-online.target

[Service]
Type=simple
ExecStart=${exec}
# The provider CLIs (claude, codex, gemini) are found on the PATH svc was installed from.
Environment=${systemdQuote(`PATH=${opts.path}`, 'environment')}
Environment=NO_COLOR=1
# SIGTERM to svc alone first: it ends its CLIs' process groups itself, then the rest is killed.
KillMode=mixed
TimeoutStopSec=30
Restart=on-failure
RestartSec=5

[Install]
WantedBy=default.target
`;
}

function systemctl(args: string[]): { ok: boolean; out: string } {
  const r = spawnSync('systemctl', ['--user', ...args], { encoding: 'utf8', timeout: 10_000 });
  return { ok: r.status === 0, out: `${r.stdout ?? ''}${r.stderr ?? ''}`.trim() };
}

/** `is-enabled`/`is-active` print one state word; anything else means systemd could not be asked. */
function unitState(query: 'is-enabled' | 'is-active'): string {
  const { out } = systemctl([query, 'svc']);
  return /^[a-z-]+$/.test(out) ? out : 'unknown (no systemd user session to ask)';
}

function lingering(user: string): string {
  const r = spawnSync('loginctl', ['show-user', user, '--property=Linger', '--value'], { encoding: 'utf8', timeout: 10_000 });
  if (r.status !== 0) return 'unknown';
  return r.stdout.trim() === 'yes' ? 'on' : 'off';
}

export function serviceCommand(args: string[], paths: HomePaths, io: ServiceEnv = { env: process.env, out: (l) => process.stdout.write(l + '\n') }): number {
  const [sub, ...rest] = args;
  const { values, positionals } = parse(rest, {}, USAGE);
  if (values.help || sub === undefined || sub === 'help' || sub === '--help' || sub === '-h') {
    io.out(USAGE);
    return 0;
  }
  if (positionals.length) throw new SvcError('usage', `unexpected argument '${positionals[0]}'\n${USAGE}`);
  const file = join(unitDir(io.env), UNIT_NAME);
  const user = io.env.USER ?? userInfo().username;
  switch (sub) {
    case 'install': {
      const entry = fileURLToPath(new URL('../../bin/svc.js', import.meta.url));
      const unit = systemdUnit({ node: process.execPath, entry, home: paths.root, path: io.env.PATH ?? '/usr/local/bin:/usr/bin:/bin' });
      mkdirSync(unitDir(io.env), { recursive: true, mode: 0o700 });
      writeFileSync(file, unit, { mode: 0o644 });
      const reloaded = systemctl(['daemon-reload']).ok;
      io.out(`wrote ${file} (svc on home ${paths.root})`);
      io.out(`next:${reloaded ? '' : ' systemctl --user daemon-reload &&'} systemctl --user enable --now svc`);
      io.out(`logs: journalctl --user -u svc -f   (or svc logs -f)`);
      io.out(`to keep svc running while you are logged out: sudo loginctl enable-linger ${user}`);
      return 0;
    }
    case 'uninstall': {
      if (!existsSync(file)) {
        io.out(`not installed (${file} does not exist)`);
        return 0;
      }
      const disabled = systemctl(['disable', '--now', 'svc']).ok;
      rmSync(file);
      systemctl(['daemon-reload']);
      io.out(`removed ${file}${disabled ? '; the unit was stopped and disabled' : ''}`);
      return 0;
    }
    case 'status': {
      if (!existsSync(file)) {
        io.out(`not installed (${file} does not exist); 'svc service install' writes it`);
        return 1;
      }
      const exec = /^ExecStart=(.*)$/m.exec(readFileSync(file, 'utf8'))?.[1] ?? '?';
      const linger = lingering(user);
      io.out(`unit:      ${file}`);
      io.out(`runs:      ${exec}`);
      io.out(`enabled:   ${unitState('is-enabled')}`);
      io.out(`active:    ${unitState('is-active')}`);
      io.out(`lingering: ${linger}${linger === 'on' ? '' : ` (sudo loginctl enable-linger ${user} keeps svc running after logout)`}`);
      return 0;
    }
    default:
      throw new SvcError('usage', `unknown service subcommand '${sub}'\n${USAGE}`);
  }
}
