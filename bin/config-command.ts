import { existsSync, readFileSync } from 'node:fs';
import { SvcError, maskSecrets } from '../schemas/index.js';
import { parseConfigText } from '../machines/index.js';
import { existingDirectories, loadConfig, loadRegistry, type HomePaths } from '../store/index.js';
import { parse } from './cli-args.js';
import { configReference } from './config-reference.js';

const USAGE = `usage:
  svc config show [--json]     the effective configuration (defaults filled in), secrets as ***
  svc config validate          check config.json and the sub-agent registry; exit 1 on the first problem
  svc config reference         every field with its type, default and reload behaviour (markdown)`;

export function configCommand(args: string[], paths: HomePaths): number {
  const [sub, ...rest] = args;
  const { values } = parse(rest, { json: { type: 'boolean' } }, USAGE);
  if (values.help || sub === undefined || sub === 'help' || sub === '--help' || sub === '-h') {
    process.stdout.write(USAGE + '\n');
    return 0;
  }
  switch (sub) {
    case 'show': {
      const { config, unknownKeys } = loadConfig(paths);
      warnUnknown(paths.configFile, unknownKeys);
      process.stdout.write(JSON.stringify(maskSecrets(config), null, 2) + '\n');
      return 0;
    }
    case 'validate':
      return validate(paths);
    case 'reference':
      // Reads no file: the reference comes from the schemas alone.
      process.stdout.write(configReference());
      return 0;
    default:
      throw new SvcError('usage', `unknown config subcommand '${sub}'\n${USAGE}`);
  }
}

/** Reads without writing anything: validating must never create or rewrite the user's files. */
function validate(paths: HomePaths): number {
  if (!existsSync(paths.configFile)) {
    throw new SvcError('config-missing', `${paths.configFile} does not exist; 'svc start' creates it on first start`);
  }
  const text = readFileSync(paths.configFile, 'utf8');
  const checked = parseConfigText(text, paths.configFile, existingDirectories(text));
  if (!checked.ok) {
    for (const err of checked.errors) process.stderr.write(`svc: ${err}\n`);
    return 1;
  }
  warnUnknown(paths.configFile, checked.unknownKeys);
  const agents = loadRegistry(paths);
  process.stdout.write(`ok: ${paths.configFile} is valid; ${agents.length} sub-agent(s) in the registry\n`);
  return 0;
}

function warnUnknown(file: string, keys: readonly string[]): void {
  if (keys.length) process.stderr.write(`svc: warning: ${file}: unknown key${keys.length > 1 ? 's' : ''} ${keys.join(', ')} (kept, ignored by svc; a typo?)\n`);
}
