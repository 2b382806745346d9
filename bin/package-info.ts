import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The checkout's root: this file runs from `bin/` under tap and from `dist/bin/` when built. */
export const PROJECT_ROOT = fileURLToPath(
  new URL(existsSync(new URL('../package.json', import.meta.url)) ? '..' : '../..', import.meta.url),
);

export const VERSION: string = (JSON.parse(readFileSync(`${PROJECT_ROOT}/package.json`, 'utf8')) as { version: string }).version;
