import * as fs from 'node:fs';
import { SvcError } from '../schemas/index.js';
import type { HomePaths } from './home.js';
import { ensureDir, writeJsonAtomicSync } from './json-file.js';

/*
 * `_secrets/main_agent_token.json` (`{"token": "..."}`, 0600 in a 0700 directory): the main agent's
 * inter-agent token. Its mode is the access control of `svc ask`: only the owner of the home can
 * read it, so only they can drive the main agent through the internal API.
 */

export const MIN_MAIN_AGENT_TOKEN_LENGTH = 32;

function parseToken(file: string, text: string): string {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw new SvcError('corrupt-file', `${file}: not valid JSON (${(e as Error).message}); remove it and restart svc to generate a new token`, { path: file });
  }
  const token = raw !== null && typeof raw === 'object' && !Array.isArray(raw) ? (raw as { token?: unknown }).token : undefined;
  if (typeof token !== 'string' || token.length < MIN_MAIN_AGENT_TOKEN_LENGTH || /\s/.test(token)) {
    throw new SvcError(
      'corrupt-file',
      `${file}: expected {"token": "<at least ${MIN_MAIN_AGENT_TOKEN_LENGTH} characters without spaces>"}; remove it and restart svc to generate a new token`,
      { path: file },
    );
  }
  return token;
}

/** The main agent token, or null when the file does not exist yet. A malformed file is an error, never rewritten. */
export function readMainAgentToken(paths: Pick<HomePaths, 'mainAgentTokenFile'>): string | null {
  const file = paths.mainAgentTokenFile;
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
  return parseToken(file, text);
}

/**
 * Returns the main agent token, creating the file with `gen()` when it is missing. The secrets
 * directory is (re)tightened to 0700 and an existing file to 0600, in case someone loosened them.
 */
export function ensureMainAgentToken(paths: Pick<HomePaths, 'mainAgentTokenFile' | 'secretsDir'>, gen: () => string): string {
  ensureDir(paths.secretsDir, 0o700);
  const existing = readMainAgentToken(paths);
  if (existing !== null) {
    if ((fs.statSync(paths.mainAgentTokenFile).mode & 0o777) !== 0o600) fs.chmodSync(paths.mainAgentTokenFile, 0o600);
    return existing;
  }
  const token = gen();
  if (typeof token !== 'string' || token.length < MIN_MAIN_AGENT_TOKEN_LENGTH || /\s/.test(token)) {
    throw new SvcError('invalid-token', `generated main agent token is not usable (need at least ${MIN_MAIN_AGENT_TOKEN_LENGTH} characters without spaces)`);
  }
  writeJsonAtomicSync(paths.mainAgentTokenFile, { token }, { mode: 0o600, dirMode: 0o700 });
  return token;
}
