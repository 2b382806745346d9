// The internal API's refusals through the real composition: the edge builds the principal and the
// real agent supervisor decides (test/fixtures/internal-api.ts stands in for the supervisor, so
// refusals seen there cannot show that the two together refuse). Fake CLIs; real sockets and log.
import t from 'tap';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as v from 'valibot';
import { startDaemon } from '../../bin/daemon.js';
import { UsersSchema } from '../../schemas/index.js';
import { homePaths, saveUsers } from '../../store/index.js';
import { tempHome } from '../fixtures/temp-home.js';

const BIN = fileURLToPath(new URL('../fixtures/bin', import.meta.url));
const BOB = 'b'.repeat(40);
const CAROL = 'c'.repeat(40);

await t.test('can_call and allowed_agents refuse through the real supervisor, before any turn; an allowed call is answered', async (t) => {
  const scratch = tempHome(t);
  const root = join(scratch.dir, 'home');
  const paths = homePaths(root);
  mkdirSync(paths.configDir, { recursive: true });
  writeFileSync(paths.configFile, JSON.stringify({}));
  mkdirSync(paths.secretsDir, { recursive: true, mode: 0o700 });
  writeFileSync(
    paths.agentsRegistry,
    JSON.stringify([
      { name: 'bob', telegram_token: '1:x', interagent_token: BOB, can_call: ['main', 'dave'] },
      { name: 'carol', telegram_token: '2:x', interagent_token: CAROL, can_call: [] },
    ]),
  );
  saveUsers(paths, v.parse(UsersSchema, [{ username: 'vic', role: 'viewer', allowed_agents: ['carol', 'main'] }]));
  const d = await startDaemon({ paths, logToStderr: false, internalPort: 0, killGraceMs: 200, env: { PATH: `${BIN}:${process.env.PATH}`, HOME: root } });
  scratch.beforeRemove(() => d.stop('test'));
  const mainToken = (JSON.parse(readFileSync(paths.mainAgentTokenFile, 'utf8')) as { token: string }).token;
  const send = async (body: Record<string, unknown>, token: string, user?: string) => {
    const r = await fetch(`http://127.0.0.1:${d.internalPort}/interagent/send`, {
      method: 'POST',
      headers: { connection: 'close', 'content-type': 'application/json', authorization: `Bearer ${token}`, ...(user ? { 'x-svc-caller-user-id': user } : {}) },
      body: JSON.stringify(body),
    });
    return { status: r.status, body: (await r.json()) as { code?: string; error?: string; success?: boolean; text?: string } };
  };
  const turns = () => d.log.read({ types: ['turn.started'] }).length;

  t.match(await send({ from: 'bob', to: 'carol', message: 'x' }, BOB), { status: 403, body: { code: 'call-not-allowed', error: /"bob" may not call "carol"/ } }, 'can_call');
  t.match(await send({ from: 'carol', to: 'main', message: 'x' }, CAROL), { status: 403, body: { code: 'call-not-allowed', error: /can_call: empty/ } }, 'empty can_call');
  t.match(await send({ from: 'main', to: 'bob', message: 'x' }, mainToken, 'vic'), { status: 403, body: { code: 'agent-not-allowed', error: /user "vic" may not use agent "bob"/ } }, 'allowed_agents');
  const async = await fetch(`http://127.0.0.1:${d.internalPort}/interagent/send_async`, {
    method: 'POST',
    headers: { connection: 'close', 'content-type': 'application/json', authorization: `Bearer ${BOB}` },
    body: JSON.stringify({ from: 'bob', to: 'carol', message: 'x' }),
  });
  t.match({ status: async.status, body: await async.json() }, { status: 403, body: { code: 'call-not-allowed' } }, 'send_async: the same checks as the sync call');
  t.same(d.log.read({ types: ['interagent.requested'] }), [], 'a refused async call records nothing');
  t.equal(turns(), 0, 'no turn started for a refused call');
  // The same callers where the lists allow: answered, so the refusals above are the lists', not a blanket no.
  t.match(await send({ from: 'bob', to: 'main', message: 'ping' }, BOB), { status: 200, body: { success: true } }, 'bob may call main');
  t.equal(turns(), 1);
});
