import { randomBytes } from 'node:crypto';
import { SvcError } from '../schemas/index.js';
import { enableApi, type HomePaths } from '../store/index.js';
import { parse } from './cli-args.js';

const USAGE = `usage: svc api enable [--host HOST | --public]

  enable      write the api block (enabled, generated token) into config.json
  --host H    address to listen on (default: the one config.json names, else 127.0.0.1)
  --public    listen on every interface (0.0.0.0) and set api.allow_public`;

export function apiCommand(args: string[], paths: HomePaths): number {
  const [sub, ...rest] = args;
  const { values, positionals } = parse(rest, { host: { type: 'string' }, public: { type: 'boolean' } }, USAGE);
  if (values.help || sub === undefined || sub === '--help' || sub === '-h' || sub === 'help') {
    process.stdout.write(USAGE + '\n');
    return 0;
  }
  if (sub !== 'enable') throw new SvcError('usage', `unknown api subcommand '${sub}'\n${USAGE}`);
  if (positionals.length) throw new SvcError('usage', `unexpected argument '${positionals[0]}'\n${USAGE}`);
  if (values.public && values.host !== undefined) throw new SvcError('usage', `--host and --public exclude each other\n${USAGE}`);
  if (values.host !== undefined && !/^[A-Za-z0-9.:_-]{1,253}$/.test(values.host)) {
    throw new SvcError('usage', `--host ${JSON.stringify(values.host)} is not an address or host name\n${USAGE}`);
  }
  const host = values.public ? '0.0.0.0' : values.host;
  const enabled = enableApi(paths, () => randomBytes(32).toString('base64url'), { ...(host !== undefined ? { host } : {}), public: !!values.public });
  process.stdout.write(
    `api enabled in ${paths.configFile} (listening on ${enabled.host})\ntoken: ${enabled.token}\nrestart the daemon to start the API server\n`,
  );
  return 0;
}
