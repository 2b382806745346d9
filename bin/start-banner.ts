import type { PanelAddress, SandboxStatus, TransportStatus } from '../machines/index.js';
import type { Listener } from '../schemas/index.js';
import type { HomePaths } from '../store/index.js';

/*
 * What `svc start` tells the person who ran it, once: where its files are, what it listens on,
 * which transports run and why the others do not, and what to do next. Plain text, no colour, so a
 * terminal and journald read it alike.
 */

/** Where the admin panel is served, or why it is not. */
export interface PanelFacts {
  /** `panel.enabled`. */
  enabled: boolean;
  /** dist/panel holds an index.html. */
  built: boolean;
  /** Where a browser on this machine reaches it: the own listener first, then the API port. */
  urls: readonly string[];
  /** The own listener was asked for and its port was busy. */
  busy: PanelAddress | null;
}

export interface BannerFacts {
  version: string;
  pid: number;
  paths: Pick<HomePaths, 'root' | 'configFile' | 'logsDir' | 'eventsDb'>;
  configCreated: boolean;
  listeners: readonly Listener[];
  transports: readonly TransportStatus[];
  /** Where the agents run: on the host unless the sandbox runs, said even when docker.enabled asked for it. */
  sandbox: Pick<SandboxStatus, 'why'>;
  agents: readonly string[];
  apiEnabled: boolean;
  panel: PanelFacts;
  /** Set on the start that created the bootstrap admin: where its password is (said this once). */
  bootstrapPasswordFile?: string | null;
  /** How to run svc on this same home: the commands the banner suggests must act on this daemon. */
  svc: string;
}

const LABEL = 12;
const row = (label: string, value: string) => `  ${label.padEnd(LABEL)}${value}`;
const more = (value: string) => `  ${' '.repeat(LABEL)}${value}`;

function rows(label: string, values: readonly string[]): string[] {
  return values.map((v, i) => (i === 0 ? row(label, v) : more(v)));
}

function panelRows(p: PanelFacts, svc: string): string[] {
  if (!p.enabled) return ['off (panel.enabled is false in config.json)'];
  const out: string[] = [];
  if (!p.built) out.push('not built: npm run build in the svc checkout builds it (until then / says so)');
  out.push(...p.urls);
  if (p.busy) out.push(`port ${p.busy.port} on ${p.busy.host} is busy; ${svc} admin start --port N serves it on another`);
  if (p.urls.length === 0 && !p.busy) out.push(`not served (${svc} admin start opens it on http://127.0.0.1:3000/)`);
  return out;
}

export function startBanner(f: BannerFacts): string {
  const listeners = f.listeners.map((l) => `${l.surface.padEnd(14)}${l.host}:${l.port}`);
  if (!f.apiEnabled) listeners.push(`direct API    off (${f.svc} api enable turns it on, on 127.0.0.1)`);
  const transports = f.transports.map((t) => `${t.name} ${t.on ? 'on' : 'off'}: ${t.why}`);
  const next: string[] = [];
  const api = f.listeners.find((l) => l.surface === 'direct API');
  if (api) next.push(`connect a client to ws://${api.host === '0.0.0.0' ? '127.0.0.1' : api.host}:${api.port}/ws with api.token from config.json (docs/direct-api.md)`);
  else next.push(`${f.svc} api enable, then restart, to talk to svc over its encrypted API`);
  if (f.bootstrapPasswordFile) {
    // Built or not: an unbuilt panel's page says how to build it.
    const panel = f.panel.enabled ? f.panel.urls[0] : undefined;
    const login = panel ?? (api ? `http://${api.host === '0.0.0.0' ? '127.0.0.1' : api.host}:${api.port}/api/auth/login` : `the admin API once ${f.svc} api enable has turned it on`);
    // Second, after how to reach the API: the lines before it are what existing readers key on.
    next.push(`log in as admin at ${login} with the password in ${f.bootstrapPasswordFile}; change it with ${f.svc} users set-password`);
  } else if (f.panel.enabled && f.panel.built && f.panel.urls[0]) {
    next.push(`the admin panel is at ${f.panel.urls[0]}`);
  }
  const telegram = f.transports.find((t) => t.name === 'telegram');
  if (telegram && !telegram.on && telegram.fix) next.push(`for Telegram: ${telegram.fix}`);
  next.push(`${f.svc} doctor checks the provider CLIs and their logins`);
  next.push(`Ctrl-C (or ${f.svc} stop) stops svc; ${f.svc} service install runs it as a service`);
  return [
    `svc ${f.version} running (pid ${f.pid})`,
    row('home', f.paths.root),
    row('config', `${f.paths.configFile}${f.configCreated ? ' (created with the defaults)' : ''}`),
    row('log', `${f.paths.logsDir}/svc.log; events in ${f.paths.eventsDb}`),
    ...rows('listening', listeners),
    ...rows('panel', panelRows(f.panel, f.svc)),
    ...rows('transports', transports),
    row('agents', f.agents.join(', ')),
    row('sandbox', f.sandbox.why),
    ...rows('next', next),
  ].join('\n');
}
