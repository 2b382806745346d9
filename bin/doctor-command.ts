import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { detectProviders, notInstalledMessage } from '../actors/index.js';
import { isLoopbackHost, isPrivateHost, panelBuilt, readPanelVersion } from '../edges/index.js';
import { browserUrl, panelListenAddress, parseConfigText, sandboxStatus, transportStatuses } from '../machines/index.js';
import { SvcError, defaultConfig, type AgentConfig } from '../schemas/index.js';
import { existingDirectories, listeningPortHolder, runningDaemonPid, type HomePaths } from '../store/index.js';
import { parse } from './cli-args.js';
import { checkoutRoot, panelDir, panelListenOverride } from './panel-location.js';
import { NATIVE_MODULES, nativeModuleProblem, nodeVersionProblem } from './runtime-check.js';

const USAGE = `usage: svc doctor [--home DIR]

Checks what svc needs, one line each, with the fix for each problem: Node.js, native modules, the
home's permissions, the ports svc listens on, the provider CLIs and their logins, the transports'
credentials and the API's exposure. Changes nothing. Exit 1 when something must be fixed.`;

type Status = 'ok' | 'warn' | 'fail' | 'info';

export interface Finding {
  status: Status;
  text: string;
  fix?: string;
}

const LABEL: Record<Status, string> = { ok: 'ok  ', warn: 'warn', fail: 'FAIL', info: '--  ' };

/** Reads config.json without loadConfig, which would create or rewrite it: a doctor only looks. */
function readConfig(paths: HomePaths): { config: AgentConfig; finding: Finding } {
  if (!existsSync(paths.configFile)) {
    return { config: defaultConfig(), finding: { status: 'info', text: `${paths.configFile} does not exist yet; checking the defaults`, fix: './bin/svc.js start creates it' } };
  }
  const text = readFileSync(paths.configFile, 'utf8');
  // The same check as `svc config validate`, additional_directories included.
  const checked = parseConfigText(text, paths.configFile, existingDirectories(text));
  if (!checked.ok) {
    return { config: defaultConfig(), finding: { status: 'fail', text: checked.errors[0]!, fix: 'edit config.json; ./bin/svc.js config validate lists every problem' } };
  }
  const unknown = checked.unknownKeys.length ? `; unknown keys ${checked.unknownKeys.join(', ')}` : '';
  return { config: checked.config, finding: { status: unknown ? 'warn' : 'ok', text: `${paths.configFile} is valid${unknown}`, ...(unknown ? { fix: 'remove or correct them (svc ignores them)' } : {}) } };
}

function homeFindings(paths: HomePaths): Finding[] {
  if (!existsSync(paths.root)) return [{ status: 'warn', text: `home ${paths.root} does not exist yet`, fix: './bin/svc.js start creates it (mode 0700)' }];
  const out: Finding[] = [];
  const loose = (path: string, want: number): Finding | null => {
    let mode: number;
    try {
      mode = statSync(path).mode & 0o777;
    } catch {
      return null;
    }
    if ((mode & ~want) === 0) return null;
    return { status: 'fail', text: `${path} is mode ${mode.toString(8).padStart(4, '0')}: others can read what svc keeps private`, fix: `chmod ${want.toString(8)} ${path}` };
  };
  const checks: [string, number][] = [
    [paths.root, 0o700],
    [paths.configDir, 0o700],
    [paths.configFile, 0o600],
    [paths.secretsDir, 0o700],
    [paths.envFile, 0o600],
    [join(paths.root, 'events.db'), 0o600],
  ];
  if (existsSync(paths.secretsDir)) {
    for (const name of readdirSync(paths.secretsDir)) checks.push([join(paths.secretsDir, name), 0o600]);
  }
  for (const [path, want] of checks) {
    const f = loose(path, want);
    if (f) out.push(f);
  }
  return out.length ? out : [{ status: 'ok', text: `home ${paths.root} is private (directories 0700, secrets 0600)` }];
}

function portFree(host: string, port: number): Promise<NodeJS.ErrnoException | null> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', (e: NodeJS.ErrnoException) => resolve(e));
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve(null)));
  });
}

async function portFindings(config: AgentConfig, paths: HomePaths): Promise<Finding[]> {
  const listeners: { what: string; key: string; host: string; port: number }[] = [
    { what: 'internal API', key: 'interagent_port', host: '127.0.0.1', port: config.interagent_port },
  ];
  if (config.api.enabled) listeners.push({ what: 'API', key: 'api.port', host: config.api.host, port: config.api.port });
  if (config.webhooks.enabled) listeners.push({ what: 'webhooks', key: 'webhooks.port', host: config.webhooks.host, port: config.webhooks.port });
  const ours = runningDaemonPid(paths.pidFile);
  const out: Finding[] = [];
  for (const l of listeners) {
    const where = `${l.host}:${l.port} (${l.what}, ${l.key})`;
    if (l.port === 0) {
      out.push({ status: 'ok', text: `${where}: any free port` });
      continue;
    }
    const err = await portFree(l.host, l.port);
    if (!err) {
      out.push({ status: 'ok', text: `${where} is free` });
      continue;
    }
    const holder = err.code === 'EADDRINUSE' ? listeningPortHolder(l.port) : null;
    if (holder && holder.pid === ours) {
      out.push({ status: 'ok', text: `${where} is served by this home's running svc (pid ${holder.pid})` });
      continue;
    }
    const by = holder ? ` by pid ${holder.pid} (${holder.command})` : '';
    out.push({
      status: 'fail',
      text: err.code === 'EADDRINUSE' ? `${where} is in use${by}` : `${where} cannot be bound: ${err.message}`,
      fix: `stop that process, or set ${l.key} in config.json to a free port`,
    });
  }
  return out;
}

function providerFindings(config: AgentConfig, paths: HomePaths, env: NodeJS.ProcessEnv): Finding[] {
  return detectProviders({ env, home: env.HOME ?? homedir(), paths, config }).map((d): Finding => {
    const isDefault = d.id === config.provider;
    const role = isDefault ? ' (the default provider)' : '';
    if (!d.installed) return { status: isDefault ? 'fail' : 'info', text: `${d.name}${role}: not installed`, fix: notInstalledMessage(d.id).replace(/^.* install it with /, '') };
    if (!d.authenticated) return { status: isDefault ? 'fail' : 'warn', text: `${d.name}${role}: installed (${d.path}) but not signed in`, fix: `./bin/svc.js auth ${d.id}` };
    return { status: 'ok', text: `${d.name}${role}: installed (${d.path}), signed in (${d.auth_source})` };
  });
}

function exposureFinding(config: AgentConfig): Finding {
  const api = config.api;
  if (!api.enabled) return { status: 'info', text: 'direct API is off', fix: './bin/svc.js api enable turns it on (on 127.0.0.1)' };
  if (api.token === '') return { status: 'fail', text: 'direct API is on with an empty api.token', fix: './bin/svc.js api enable generates one' };
  if (!isPrivateHost(api.host) && !api.allow_public) {
    return { status: 'fail', text: `direct API listens on ${api.host}, a public address, without api.allow_public`, fix: 'set api.host to 127.0.0.1 or a private address (or api.allow_public: true if that is meant)' };
  }
  return { status: 'ok', text: `direct API on ${api.host}:${api.port}${isPrivateHost(api.host) ? '' : ' (public, allowed by api.allow_public)'}` };
}

/** Fileshare has no authentication: beyond loopback it starts only with fileshare.allow_public. */
function fileshareFindings(config: AgentConfig): Finding[] {
  const fs = config.fileshare;
  if (!fs.enabled) return [];
  if (isLoopbackHost(fs.host)) return [{ status: 'ok', text: `fileshare on ${fs.host}:${fs.port} (this machine only)` }];
  if (!fs.allow_public) {
    return [{ status: 'fail', text: `fileshare.host ${fs.host} reaches beyond this machine without fileshare.allow_public: svc does not start fileshare there`, fix: 'set fileshare.host to 127.0.0.1 (or fileshare.allow_public: true if anyone who reaches it may download what is shared)' }];
  }
  return [{ status: 'warn', text: `fileshare on ${fs.host}:${fs.port} serves without credentials to anyone who reaches it (fileshare.allow_public)`, fix: 'set fileshare.host to 127.0.0.1 unless that is meant' }];
}

/** docker.enabled asks for a sandbox this build does not have: never silently. */
function sandboxFindings(config: AgentConfig): Finding[] {
  const s = sandboxStatus(config);
  if (!s.requested) return [{ status: 'info', text: `sandbox ${s.why}` }];
  return s.warnings.map((w) => ({ status: 'warn', text: w, fix: 'set docker.enabled to false to say the agents run on the host' }));
}

/** The admin panel: built or not (and how to build it), and the URLs this config serves it at. */
async function panelFinding(config: AgentConfig, env: NodeJS.ProcessEnv): Promise<Finding> {
  const listen = panelListenOverride(env);
  const panel = listen ? { ...config.panel, listen } : config.panel;
  if (!panel.enabled) return { status: 'info', text: 'admin panel is off (panel.enabled is false)', fix: 'set panel.enabled to true in config.json' };
  const dir = panelDir(env);
  if (!(await panelBuilt(dir))) return { status: 'warn', text: `admin panel is not built (${dir} has no index.html)`, fix: `npm run build in ${checkoutRoot()}` };
  const version = await readPanelVersion(dir);
  const own = panelListenAddress(panel, config.api.enabled);
  const urls = [...(own ? [browserUrl(own.host, own.port)] : []), ...(config.api.enabled ? [browserUrl(config.api.host, config.api.port)] : [])];
  const built = `admin panel built${version ? ` (version ${version.version})` : ''}`;
  if (urls.length === 0) return { status: 'info', text: `${built}, served nowhere by this config`, fix: './bin/svc.js admin start serves it on http://127.0.0.1:3000/' };
  return { status: 'ok', text: `${built}, served at ${urls.join(' and ')}` };
}

export async function doctorFindings(paths: HomePaths, env: NodeJS.ProcessEnv = process.env): Promise<Finding[]> {
  const node = nodeVersionProblem(process.versions.node);
  const native = nativeModuleProblem(NATIVE_MODULES);
  const { config, finding } = readConfig(paths);
  return [
    node ? { status: 'fail', text: node, fix: 'install Node.js 20.19 or a later 20.x' } : { status: 'ok', text: `Node.js v${process.versions.node}` },
    native ? { status: 'fail', text: native.replace(/^svc: /, ''), fix: 'npm install again in the svc checkout once a toolchain is installed' } : { status: 'ok', text: 'native modules load (better-sqlite3, node-pty)' },
    ...homeFindings(paths),
    finding,
    ...(await portFindings(config, paths)),
    ...providerFindings(config, paths, env),
    ...transportStatuses(config).map((s): Finding => ({ status: s.on ? 'ok' : 'info', text: `${s.name}: ${s.on ? 'on' : 'off'}, ${s.why}`, ...(s.fix ? { fix: s.fix } : {}) })),
    exposureFinding(config),
    await panelFinding(config, env),
    ...fileshareFindings(config),
    ...sandboxFindings(config),
  ];
}

export async function doctorCommand(args: string[], paths: HomePaths, out: (s: string) => void = (s) => process.stdout.write(s)): Promise<number> {
  const { values, positionals } = parse(args, {}, USAGE);
  if (values.help) {
    out(USAGE + '\n');
    return 0;
  }
  if (positionals.length) throw new SvcError('usage', `unexpected argument '${positionals[0]}'\n${USAGE}`);
  const findings = await doctorFindings(paths);
  for (const f of findings) out(`${LABEL[f.status]}  ${f.text}${f.fix && f.status !== 'ok' ? ` — fix: ${f.fix}` : ''}\n`);
  const failed = findings.filter((f) => f.status === 'fail').length;
  out(failed ? `${failed} problem(s) to fix\n` : 'nothing to fix\n');
  return failed ? 1 : 0;
}
