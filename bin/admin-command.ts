import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { ensureBootstrapAdmin, resetBootstrapAdminPassword } from '../actors/index.js';
import { PANEL_SECURITY_HEADERS, panelBuilt, parsePanelVersion, readPanelVersion, type PanelVersion } from '../edges/index.js';
import { browserUrl, panelListenAddress } from '../machines/index.js';
import { SvcError, defaultConfig, type AgentConfig } from '../schemas/index.js';
import { loadConfig, runningDaemonPid, setConfigBlockFields, usersLocation, type HomePaths } from '../store/index.js';
import { parse } from './cli-args.js';
import { VERSION } from './package-info.js';
import { checkoutRoot, panelDir, panelListenOverride } from './panel-location.js';
import { NOT_RUNNING_EXIT } from './status-command.js';

/*
 * `svc admin` (SPEC.md "Admin CLI"): the admin web panel from the terminal. It changes config.json
 * and users.json only, so it works whether the daemon runs or not; the daemon applies `panel` from
 * config.json at once (when it runs an HTTP server) and re-reads users.json.
 */

const USAGE = `usage: svc admin <setup|start|stop|status|update|open> [options]

  setup            create the admin user, or give it a new random password; the password goes to
                   _secrets/.initial_admin_password (0600), never to the terminal
  start [--port N] serve the panel on its own port (default 3000): writes panel.listen "on"
  stop             stop serving it on its own port: writes panel.listen "off"
  status           whether the panel is built and where it answers now (exit 0 served, 3 not)
  update           which panel build is served, and how to rebuild it when it is missing or old
  open             print the panel's URL and open it in a browser when there is a display

'svc admin <command> --help' says more about one command.`;

const HELP: Record<string, string> = {
  setup: `usage: svc admin setup

Creates the admin user (role admin) if there are no users yet; otherwise gives the user admin a new
random 16-character password and signs out its sessions. The password is written to
_secrets/.initial_admin_password (mode 0600), never printed. Works whether the daemon runs or not.`,
  start: `usage: svc admin start [--port N]

Serves the admin panel on its own listener (panel.host, default 127.0.0.1; port N, default the
configured panel.port, 3000): writes panel.listen "on" (and panel.port) into config.json. A running
daemon opens it at once; this waits up to 10 s for the URL to answer. Otherwise the next svc start does.`,
  stop: `usage: svc admin stop

Writes panel.listen "off": the panel's own listener closes (at once in a running daemon). While the
API server runs, the panel stays reachable on the API port; panel.enabled false turns it off there too.`,
  status: `usage: svc admin status

Whether the panel is built (and its version), whether the daemon runs, and the URLs where the panel
answers now (each probed with a GET). Exit 0 when it is served somewhere, 3 when not.`,
  update: `usage: svc admin update

Compares the panel build on disk (its version.json) with this svc's version and, when svc runs, with
the build the daemon serves (it reads the panel's files once, at start): says how to rebuild when the
build is missing or from another version, and when a restart is needed to serve a newer one.
Downloads nothing. Exit 0 when current, 1 when not.`,
  open: `usage: svc admin open

Prints the panel's URL and opens it with xdg-open (or open on macOS) when a display is there.`,
};

const SUBCOMMANDS = Object.keys(HELP);
/** How long `start` and `stop` wait for a running daemon to apply the change (its watcher polls every few seconds). */
const APPLY_WAIT_MS = 10_000;
const PROBE_TIMEOUT_MS = 2_000;

export interface AdminCommandIo {
  out: (s: string) => void;
  env: NodeJS.ProcessEnv;
}

const defaultIo = (): AdminCommandIo => ({ out: (s) => void process.stdout.write(s), env: process.env });

export async function adminCommand(args: string[], paths: HomePaths, io: AdminCommandIo = defaultIo()): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === undefined || sub === '--help' || sub === '-h' || sub === 'help') {
    io.out(USAGE + '\n');
    return 0;
  }
  if (!SUBCOMMANDS.includes(sub)) throw new SvcError('usage', `unknown admin subcommand '${sub}'\n${USAGE}`);
  const usage = HELP[sub]!;
  const { values, positionals } = parse(rest, sub === 'start' ? { port: { type: 'string' } } : {}, usage);
  if (values.help) {
    io.out(usage + '\n');
    return 0;
  }
  if (positionals.length) throw new SvcError('usage', `unexpected argument '${positionals[0]}'\n${usage}`);
  const port = (values as { port?: string }).port;
  switch (sub) {
    case 'setup':
      return setup(paths, io);
    case 'start':
      return start(paths, io, port === undefined ? undefined : portNumber(port, usage));
    case 'stop':
      return stop(paths, io);
    case 'status':
      return status(paths, io);
    case 'update':
      return update(paths, io);
    default:
      return open(paths, io);
  }
}

function portNumber(text: string, usage: string): number {
  const n = Number(text);
  if (!/^\d+$/.test(text) || n < 1 || n > 65535) throw new SvcError('usage', `--port ${text}: expected a port number from 1 to 65535\n${usage}`);
  return n;
}

/** The config as it is on disk, without creating a home that is not there. */
function currentConfig(paths: HomePaths): AgentConfig {
  return existsSync(paths.configFile) ? loadConfig(paths).config : defaultConfig();
}

/** `panel` as the daemon will apply it: `$SVC_PANEL_LISTEN` wins over config.json, as in the daemon. */
function effectivePanel(config: AgentConfig, env: NodeJS.ProcessEnv): AgentConfig['panel'] {
  const listen = panelListenOverride(env);
  return listen ? { ...config.panel, listen } : config.panel;
}

/** Where the panel should answer by this config: its own listener first, then the API port. */
function configuredUrls(config: AgentConfig, env: NodeJS.ProcessEnv): string[] {
  const panel = effectivePanel(config, env);
  if (!panel.enabled) return [];
  const own = panelListenAddress(panel, config.api.enabled);
  return [...(own && own.port > 0 ? [browserUrl(own.host, own.port)] : []), ...(config.api.enabled && config.api.port > 0 ? [browserUrl(config.api.host, config.api.port)] : [])];
}

/** Whether svc's panel answers at `url`: any status, with the panel's own headers (not another program on the port). */
async function answers(url: string): Promise<boolean> {
  try {
    const r = await fetch(url, { headers: { connection: 'close' }, signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
    await r.arrayBuffer();
    return r.headers.get('content-security-policy') === PANEL_SECURITY_HEADERS['content-security-policy'];
  } catch {
    return false;
  }
}

/** Polls until `check` holds or the time is up; a bounded wait for a running daemon's watcher. */
async function waitFor(check: () => Promise<boolean>, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function setup(paths: HomePaths, io: AdminCommandIo): Promise<number> {
  const config = currentConfig(paths);
  const where = configuredUrls(config, io.env)[0] ?? `the panel once it is served (svc admin start)`;
  if (usersLocation(paths) === null) {
    const made = await ensureBootstrapAdmin(paths, config, null, Date.now());
    if (made.created) {
      io.out(`created the admin user; its password is in ${made.passwordFile} (mode 0600)\nlog in as admin at ${where}\n`);
      return 0;
    }
  }
  const { passwordFile } = await resetBootstrapAdminPassword(paths);
  io.out(`gave admin a new password, in ${passwordFile} (mode 0600); its existing sessions are signed out\nlog in as admin at ${where}\n`);
  return 0;
}

async function start(paths: HomePaths, io: AdminCommandIo, port: number | undefined): Promise<number> {
  loadConfig(paths);
  const next = setConfigBlockFields(paths, 'panel', { enabled: true, listen: 'on', ...(port !== undefined ? { port } : {}) });
  const url = browserUrl(next.panel.host, next.panel.port);
  const override = panelListenOverride(io.env);
  const overridden = override !== null && override !== 'on' ? ` (but SVC_PANEL_LISTEN=${override} in the environment overrides it)` : '';
  if (runningDaemonPid(paths.pidFile) === null) {
    io.out(`panel.listen is "on" in ${paths.configFile}${overridden}; the panel will be served at ${url} on the next svc start\n`);
    return 0;
  }
  if (await waitFor(() => answers(url), APPLY_WAIT_MS)) {
    io.out(`the admin panel is served at ${url}\n`);
    return 0;
  }
  throw new SvcError(
    'panel-not-served',
    `panel.listen is "on" in ${paths.configFile}${overridden}, but ${url} did not answer within ${APPLY_WAIT_MS / 1000} s: the port may be busy (svc logs says), or this daemon runs no HTTP server (svc stop, then svc start)`,
  );
}

async function stop(paths: HomePaths, io: AdminCommandIo): Promise<number> {
  const before = currentConfig(paths);
  const own = browserUrl(before.panel.host, before.panel.port);
  loadConfig(paths);
  const next = setConfigBlockFields(paths, 'panel', { listen: 'off' });
  const running = runningDaemonPid(paths.pidFile) !== null;
  if (running) await waitFor(async () => !(await answers(own)), APPLY_WAIT_MS);
  const api = next.api.enabled && next.panel.enabled ? browserUrl(next.api.host, next.api.port) : null;
  io.out(
    `panel.listen is "off" in ${paths.configFile}: the panel's own listener ${running ? 'is closed' : 'stays closed'}` +
      (api ? `; it stays reachable at ${api} while the API server runs (panel.enabled false turns it off there)` : '') +
      '\n',
  );
  return 0;
}

async function status(paths: HomePaths, io: AdminCommandIo): Promise<number> {
  const dir = panelDir(io.env);
  const built = await panelBuilt(dir);
  const version = built ? await readPanelVersion(dir) : null;
  const config = currentConfig(paths);
  const pid = runningDaemonPid(paths.pidFile);
  const urls = configuredUrls(config, io.env);
  const serving: string[] = [];
  if (pid !== null) for (const url of urls) if (await answers(url)) serving.push(url);
  const lines = [
    `panel       ${built ? `built${version ? ` (version ${version.version}${version.built_at ? `, built ${version.built_at}` : ''})` : ''} in ${dir}` : `not built (${dir} has no index.html); npm run build in ${checkoutRoot()} builds it`}`,
    `daemon      ${pid === null ? `not running on ${paths.root}` : `running (pid ${pid})`}`,
  ];
  if (!config.panel.enabled) lines.push('served      nowhere: panel.enabled is false in config.json');
  else if (serving.length) lines.push(...serving.map((u, i) => `${i === 0 ? 'served at  ' : '           '} ${u}`));
  else lines.push(`served      nowhere now${pid === null ? '' : urls.length ? ` (nothing answered at ${urls.join(', ')})` : ''}; svc admin start serves it on its own port`);
  io.out(lines.join('\n') + '\n');
  return serving.length ? 0 : NOT_RUNNING_EXIT;
}

const describe = (v: PanelVersion | null) => (v ? `panel ${v.version}${v.built_at ? ` (built ${v.built_at})` : ''}` : 'a panel build without version.json');
const sameBuild = (a: PanelVersion | null, b: PanelVersion | null) => a?.version === b?.version && a?.built_at === b?.built_at;

/** The version.json a running daemon serves at `url` (svc's panel by its headers), or null when nothing answers as it. */
async function servedVersion(url: string): Promise<{ url: string; version: PanelVersion | null } | null> {
  try {
    const r = await fetch(new URL('version.json', url), { headers: { connection: 'close' }, signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
    const body = Buffer.from(await r.arrayBuffer());
    if (r.headers.get('content-security-policy') !== PANEL_SECURITY_HEADERS['content-security-policy']) return null;
    return { url, version: r.ok ? parsePanelVersion(body) : null };
  } catch {
    return null;
  }
}

/**
 * The build on disk against this svc's version and against what the running daemon serves: the
 * daemon reads the panel's files once, at start, so a rebuild is served only after a restart.
 */
async function update(paths: HomePaths, io: AdminCommandIo): Promise<number> {
  const dir = panelDir(io.env);
  const root = checkoutRoot();
  const built = await panelBuilt(dir);
  const disk = built ? await readPanelVersion(dir) : null;
  let served: { url: string; version: PanelVersion | null } | null = null;
  const running = runningDaemonPid(paths.pidFile) !== null;
  if (running) {
    for (const url of configuredUrls(currentConfig(paths), io.env)) {
      served = await servedVersion(url);
      if (served) break;
    }
  }
  const lines = [
    `on disk     ${built ? `${describe(disk)} in ${dir}` : `not built (${dir} has no index.html)`}`,
    `served      ${!running ? 'nothing: svc is not running (svc start serves the build on disk)' : served ? `${describe(served.version)} at ${served.url}` : 'nowhere by the running daemon (svc admin status says why)'}`,
  ];
  const rebuild = `run npm run build in ${root}, then restart svc (svc stop, then svc start)`;
  let current = false;
  if (!built) lines.push(`svc ${VERSION}: the panel is not built; ${rebuild}`);
  else if (disk?.version !== VERSION) lines.push(`svc ${VERSION}: the build on disk is ${describe(disk)}, not this version's; ${rebuild}`);
  else if (served && !sameBuild(served.version, disk)) lines.push(`svc ${VERSION}: the build on disk is current, but the running daemon still serves the one it loaded at start; restart svc (svc stop, then svc start) to serve it`);
  else {
    current = true;
    lines.push(`svc ${VERSION}: ${served ? 'the daemon serves the build on disk' : 'the build on disk is this version\'s'}: up to date`);
  }
  io.out(lines.join('\n') + '\n');
  return current ? 0 : 1;
}

/** A program on PATH, or null. */
function onPath(name: string, env: NodeJS.ProcessEnv): string | null {
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (dir && existsSync(join(dir, name))) return join(dir, name);
  }
  return null;
}

async function open(paths: HomePaths, io: AdminCommandIo): Promise<number> {
  const config = currentConfig(paths);
  const urls = configuredUrls(config, io.env);
  let url = urls[0];
  for (const u of urls) {
    if (await answers(u)) {
      url = u;
      break;
    }
  }
  if (!url) throw new SvcError('panel-not-served', 'the panel is served nowhere by this config (panel.enabled false, or panel.listen off with the API off); svc admin start serves it');
  io.out(`${url}\n`);
  const mac = process.platform === 'darwin';
  const display = mac || !!io.env.DISPLAY || !!io.env.WAYLAND_DISPLAY;
  const opener = display ? onPath(mac ? 'open' : 'xdg-open', io.env) : null;
  if (opener) {
    // The browser outlives this command; a failure to start it changes nothing here.
    const child = spawn(opener, [url], { detached: true, stdio: 'ignore', env: io.env });
    child.on('error', () => undefined);
    child.unref();
  }
  return 0;
}
