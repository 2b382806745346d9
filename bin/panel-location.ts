import { fileURLToPath } from 'node:url';
import { PANEL_LISTEN_MODES, type PanelListen } from '../schemas/index.js';

/*
 * Where the built admin panel is, and the two environment variables that move it: both for tests
 * and packagers only (docs/panel.md), read here in the composition root and nowhere else.
 */

/**
 * `dist/panel` next to `dist/bin`, where `npm run build` puts it. Run from the sources (tap's
 * loader runs bin/*.ts) the build is still the one under dist/. `SVC_PANEL_DIR` overrides both.
 */
export function panelDir(env: NodeJS.ProcessEnv = process.env): string {
  const override = env.SVC_PANEL_DIR;
  if (override) return override;
  const here = import.meta.url;
  return fileURLToPath(new URL(here.endsWith('.ts') ? '../dist/panel/' : '../panel/', here));
}

/**
 * `SVC_PANEL_LISTEN=off|on|auto` wins over `panel.listen` in config.json: the test suite sets it
 * to `off` so parallel daemons never contend for port 3000. Unset or empty: the config decides.
 */
export function panelListenOverride(env: NodeJS.ProcessEnv = process.env): PanelListen | null {
  const value = env.SVC_PANEL_LISTEN;
  return (PANEL_LISTEN_MODES as readonly string[]).includes(value ?? '') ? (value as PanelListen) : null;
}
