import { parseArgs, type ParseArgsConfig } from 'node:util';
import { SvcError } from '../schemas/index.js';

export type Options = NonNullable<ParseArgsConfig['options']>;

/** node's parseArgs, with its exceptions turned into a one-line usage error. */
export function parse<const T extends Options>(args: string[], options: T, usage: string) {
  const config = { args, options: { help: { type: 'boolean', short: 'h' }, ...options }, allowPositionals: true, strict: true } as const;
  try {
    return parseArgs(config);
  } catch (e) {
    throw new SvcError('usage', `${(e as Error).message.split('\n')[0]}\n${usage}`);
  }
}

/** `10m`, `2h`, `3d`, `45s` back from now, or an ISO time as given. */
export function parseSince(value: string, now: number): string {
  const m = /^(\d+)([smhd])$/.exec(value);
  if (m) {
    const unit = { s: 1e3, m: 60e3, h: 3600e3, d: 86400e3 }[m[2] as 's' | 'm' | 'h' | 'd'];
    return new Date(now - Number(m[1]) * unit).toISOString();
  }
  const t = Date.parse(value);
  if (Number.isNaN(t)) throw new SvcError('usage', `--since ${value}: expected a duration like 10m, 2h, 1d or an ISO time`);
  return new Date(t).toISOString();
}
