import { homedir } from 'node:os';
import { detectProviders, runLogin, type LoginInput, type LoginOutput } from '../actors/index.js';
import type { DetectedProvider } from '../machines/index.js';
import { PROVIDERS, SvcError, defaultConfig, describeError, type AgentConfig, type Provider } from '../schemas/index.js';
import { loadConfig, type HomePaths } from '../store/index.js';

const USAGE = `usage: svc auth <claude|codex|gemini> [-- ARGS...]
       svc auth status [--json]

  <provider>      run the provider's own login in this terminal (claude auth login, codex login,
                  gemini's first-start sign-in); ARGS after -- replace the login arguments,
                  e.g. 'svc auth claude -- setup-token'
  status          show which provider CLIs are installed and signed in`;

export interface AuthCommandIo {
  env: Readonly<Record<string, string | undefined>>;
  /** The user's home directory (where the CLIs keep their logins). */
  home: string;
  stdin: LoginInput;
  stdout: LoginOutput;
  stderr: NodeJS.WritableStream;
}

function processIo(): AuthCommandIo {
  return { env: process.env, home: homedir(), stdin: process.stdin, stdout: process.stdout, stderr: process.stderr };
}

export async function authCommand(args: string[], paths: HomePaths, io: AuthCommandIo = processIo()): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === undefined || sub === 'help' || sub === '--help' || sub === '-h') {
    io.stdout.write(USAGE + '\n');
    return 0;
  }
  // `--help` asks svc; after `--` it belongs to the provider's login.
  const dashes = rest.indexOf('--');
  if ((dashes === -1 ? rest : rest.slice(0, dashes)).some((a) => a === '--help' || a === '-h')) {
    io.stdout.write(USAGE + '\n');
    return 0;
  }
  if (sub === 'status') {
    const json = rest.includes('--json');
    const unknown = rest.filter((a) => a !== '--json');
    if (unknown.length) throw new SvcError('usage', `unknown argument '${unknown[0]}' for auth status\n${USAGE}`);
    const detected = detect(paths, io);
    io.stdout.write(json ? JSON.stringify(detected, null, 2) + '\n' : statusTable(detected));
    return 0;
  }
  if (!(PROVIDERS as readonly string[]).includes(sub)) {
    throw new SvcError('usage', `unknown provider '${sub}' (one of ${PROVIDERS.join(', ')})\n${USAGE}`);
  }
  const provider = sub as Provider;
  let loginArgs: string[] | undefined;
  if (rest[0] === '--') loginArgs = rest.slice(1);
  else if (rest.length) throw new SvcError('usage', `unexpected argument '${rest[0]}'; put login arguments after --\n${USAGE}`);

  const code = await runLogin(provider, { stdin: io.stdin, stdout: io.stdout, env: io.env, args: loginArgs });
  if (code !== 0) return code;
  const found = detect(paths, io).find((d) => d.id === provider);
  if (found?.authenticated) {
    io.stdout.write(`\r\n${provider}: signed in (${found.auth_source})\r\n`);
    return 0;
  }
  // The login exited 0 but svc will not find credentials: a script must not take that for success.
  io.stderr.write(`\r\nsvc: ${provider}: the login finished, but no credentials were found where svc looks; see 'svc auth status'\r\n`);
  return 1;
}

function detect(paths: HomePaths, io: AuthCommandIo): DetectedProvider[] {
  return detectProviders({ env: io.env, home: io.home, paths, config: readConfig(paths, io) });
}

/** A broken config must not hide the login state; it only loses `gemini_api_key`, and says so. */
function readConfig(paths: HomePaths, io: AuthCommandIo): AgentConfig {
  try {
    return loadConfig(paths).config;
  } catch (e) {
    io.stderr.write(`svc: ${e instanceof SvcError ? e.message : describeError(e)}\nsvc: using defaults for the config\n`);
    return defaultConfig();
  }
}

export function statusTable(detected: readonly DetectedProvider[]): string {
  const header = ['PROVIDER', 'NAME', 'INSTALLED', 'SIGNED IN', 'SOURCE', 'DEFAULT MODEL', 'MODELS', 'PATH'];
  const rows = detected.map((d) => [
    d.id,
    d.name,
    d.installed ? 'yes' : 'no',
    d.authenticated ? 'yes' : 'no',
    d.auth_source ?? '-',
    d.default_model,
    String(d.models.length),
    d.path ?? '-',
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join('  ');
  return [line(header), ...rows.map(line)].join('\n') + '\n';
}
