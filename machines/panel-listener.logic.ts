import type { PanelConfig } from '../schemas/index.js';

/*
 * Where the admin panel is served (docs/panel.md): always on the API port while the admin API runs,
 * and on a listener of its own as `panel.listen` says. Pure: the daemon applies what this decides,
 * at start and whenever config.json changes.
 */

export interface PanelAddress {
  host: string;
  port: number;
}

/**
 * The panel's own listener, or null: `on` always, `auto` only while the API server is off (so a
 * fresh install, whose API is off, still has a panel), `off` never; none while the panel is disabled.
 */
export function panelListenAddress(panel: PanelConfig, apiEnabled: boolean): PanelAddress | null {
  if (!panel.enabled) return null;
  const open = panel.listen === 'on' || (panel.listen === 'auto' && !apiEnabled);
  return open ? { host: panel.host, port: panel.port } : null;
}

export function sameAddress(a: PanelAddress | null, b: PanelAddress | null): boolean {
  return a === b || (a !== null && b !== null && a.host === b.host && a.port === b.port);
}

/** A URL a browser on this machine can open: a wildcard bind is reached on loopback. */
export function browserUrl(host: string, port: number): string {
  const h = host === '0.0.0.0' || host === '::' || host === '' ? '127.0.0.1' : host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  return `http://${h}:${port}/`;
}
