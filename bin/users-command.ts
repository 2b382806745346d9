import { rmSync } from 'node:fs';
import { BOOTSTRAP_USERNAME, hashPassword } from '../actors/index.js';
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH, SvcError } from '../schemas/index.js';
import { loadUsers, saveUsers, type HomePaths } from '../store/index.js';
import { parse } from './cli-args.js';

/*
 * `svc users set-password [USERNAME] [--disable-2fa]` (SPEC.md "Admin panel (JWT)" 9): the way back
 * in when the panel's password is lost, so it is not in the panel. Reads the password twice from
 * the terminal without echo, never prints it, bumps token_version (every session of that user
 * ends), and removes the first-start password file when it resets the bootstrap admin.
 */

const USAGE = `usage: svc users set-password [USERNAME] [--disable-2fa]

  set-password    set a user's password in _secrets/users.json (default user: admin);
                  asks for it twice on the terminal, without echo (at least ${PASSWORD_MIN_LENGTH} characters)
  --disable-2fa   also turn the user's 2FA (TOTP) off; without it you are asked whether to keep it

Every session of the user ends (token_version is bumped); works whether or not the daemon runs.`;

export interface Terminal {
  input: NodeJS.ReadStream;
  /** Prompts go here (stderr), so stdout stays for results. */
  prompts: NodeJS.WriteStream;
  out: (s: string) => void;
}

const defaultTerminal = (): Terminal => ({ input: process.stdin, prompts: process.stderr, out: (s) => void process.stdout.write(s) });

/** One line from the terminal in raw mode; `echo: false` shows nothing of what is typed. */
function readLine(term: Terminal, prompt: string, echo: boolean): Promise<string> {
  const { input, prompts } = term;
  // Raw mode before the prompt: whatever is typed once it shows must neither echo nor raise SIGINT.
  input.setRawMode(true);
  input.resume();
  prompts.write(prompt);
  return new Promise((resolve, reject) => {
    let line = '';
    const finish = (fn: () => void) => {
      input.off('data', onData);
      input.setRawMode(false);
      input.pause();
      prompts.write('\n');
      fn();
    };
    const onData = (chunk: Buffer) => {
      for (const ch of chunk.toString('utf8')) {
        if (ch === '\r' || ch === '\n') return finish(() => resolve(line));
        if (ch === '\u0003' || (ch === '\u0004' && line === '')) return finish(() => reject(new SvcError('usage', 'interrupted; nothing changed')));
        if (ch === '\u007f' || ch === '\b') {
          if (line !== '' && echo) prompts.write('\b \b');
          line = [...line].slice(0, -1).join('');
        } else if (ch >= ' ') {
          if (line.length >= PASSWORD_MAX_LENGTH) continue;
          line += ch;
          if (echo) prompts.write(ch);
        }
      }
    };
    input.on('data', onData);
  });
}

export async function usersCommand(args: string[], paths: HomePaths, term: Terminal = defaultTerminal()): Promise<number> {
  const [sub, ...rest] = args;
  const { values, positionals } = parse(rest, { 'disable-2fa': { type: 'boolean' } }, USAGE);
  if (values.help || sub === undefined || sub === '--help' || sub === '-h' || sub === 'help') {
    term.out(USAGE + '\n');
    return 0;
  }
  if (sub !== 'set-password') throw new SvcError('usage', `unknown users subcommand '${sub}'\n${USAGE}`);
  if (positionals.length > 1) throw new SvcError('usage', `unexpected argument '${positionals[1]}'\n${USAGE}`);
  const username = positionals[0] ?? BOOTSTRAP_USERNAME;
  if (!loadUsers(paths).some((u) => u.username === username)) throw new SvcError('not-found', `no user ${JSON.stringify(username)} in users.json; nothing changed`);
  if (!term.input.isTTY) throw new SvcError('usage', 'svc users set-password reads the password from a terminal (no echo); run it in one');

  const password = await readLine(term, `New password for ${username}: `, false);
  if ([...password].length < PASSWORD_MIN_LENGTH) throw new SvcError('usage', `the password needs at least ${PASSWORD_MIN_LENGTH} characters; nothing changed`);
  const again = await readLine(term, 'Repeat it: ', false);
  if (again !== password) throw new SvcError('usage', 'the two passwords differ; nothing changed');
  let dropTotp = values['disable-2fa'] === true;
  if (!dropTotp && loadUsers(paths).find((u) => u.username === username)?.totp_enabled) {
    const answer = (await readLine(term, `Keep 2FA (TOTP) for ${username}? [Y/n] `, true)).trim().toLowerCase();
    dropTotp = answer === 'n' || answer === 'no';
  }

  const hash = await hashPassword(password);
  // Load → change → save with nothing awaited in between: the daemon may be writing the same file.
  const users = loadUsers(paths);
  const row = users.find((u) => u.username === username);
  if (!row) throw new SvcError('not-found', `user ${JSON.stringify(username)} was removed meanwhile; nothing changed`);
  row.password_hash = hash;
  row.token_version += 1;
  if (dropTotp) {
    row.totp_enabled = false;
    row.totp_secret = null;
    row.totp_last_step = null;
  }
  saveUsers(paths, users);
  if (username === BOOTSTRAP_USERNAME) rmSync(paths.initialAdminPasswordFile, { force: true });
  term.out(`password of ${username} changed; its existing sessions are signed out${dropTotp ? '; 2FA is off' : ''}\n`);
  return 0;
}
