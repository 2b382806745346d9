import { randomBytes } from 'node:crypto';
import { SvcError } from '../schemas/index.js';
import { enableApi, type HomePaths } from '../store/index.js';
import { parse } from './cli-args.js';

const USAGE = 'usage: svc api enable    write the api block (enabled, generated token) into config.json';

export function apiCommand(args: string[], paths: HomePaths): number {
  const [sub, ...rest] = args;
  const { values } = parse(rest, {}, USAGE);
  if (values.help || sub === undefined || sub === '--help' || sub === '-h' || sub === 'help') {
    process.stdout.write(USAGE + '\n');
    return 0;
  }
  if (sub !== 'enable') throw new SvcError('usage', `unknown api subcommand '${sub}'\n${USAGE}`);
  const token = enableApi(paths, () => randomBytes(32).toString('base64url'));
  process.stdout.write(`api enabled in ${paths.configFile}\ntoken: ${token}\nrestart the daemon to start the API server\n`);
  return 0;
}
